package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// events is a `go test -json` stream, one event per line.
func events(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

const (
	pkgA = "github.com/echomq/emq/test/builtin"
	pkgB = "github.com/echomq/emq/client"
)

func TestReadRunCountsLeafTests(t *testing.T) {
	stream := events(
		`{"Time":"2026-01-01T10:00:00Z","Action":"start","Package":"`+pkgA+`"}`,
		`{"Action":"run","Package":"`+pkgA+`","Test":"TestACL"}`,
		`{"Action":"run","Package":"`+pkgA+`","Test":"TestACL/allows"}`,
		`{"Action":"pass","Package":"`+pkgA+`","Test":"TestACL/allows"}`,
		`{"Action":"run","Package":"`+pkgA+`","Test":"TestACL/WAITAOF"}`,
		`{"Action":"output","Package":"`+pkgA+`","Test":"TestACL/WAITAOF","Output":"=== RUN   TestACL/WAITAOF\n"}`,
		`{"Action":"output","Package":"`+pkgA+`","Test":"TestACL/WAITAOF","Output":"    persistence_test.go:31: redis 7.0.15 has no WAITAOF\n"}`,
		`{"Action":"output","Package":"`+pkgA+`","Test":"TestACL/WAITAOF","Output":"--- SKIP: TestACL/WAITAOF (0.00s)\n"}`,
		`{"Action":"skip","Package":"`+pkgA+`","Test":"TestACL/WAITAOF"}`,
		`{"Action":"pass","Package":"`+pkgA+`","Test":"TestACL"}`,
		`{"Action":"run","Package":"`+pkgA+`","Test":"TestTorture"}`,
		`{"Action":"fail","Package":"`+pkgA+`","Test":"TestTorture"}`,
		`{"Action":"fail","Package":"`+pkgA+`","Elapsed":2.5}`,
		`not json: a build error`,
		`{"Action":"fail","Package":"`+pkgB+`","Elapsed":0.1}`,
		`{"Time":"2026-01-01T10:01:30Z","Action":"output","Package":"`+pkgB+`","Output":"FAIL\n"}`,
	)
	r, err := readRun(strings.NewReader(stream))
	require.NoError(t, err)
	a, b := r.suites[pkgA], r.suites[pkgB]
	require.NotNil(t, a)
	require.NotNil(t, b)

	t.Run("a parent counts through its subtests only", func(t *testing.T) {
		assert.Equal(t, [3]int{1, 1, 1}, [3]int{a.passed, a.skipped, a.failed})
	})
	t.Run("a skip keeps the reason the test gave, without its source line", func(t *testing.T) {
		assert.Equal(t, []note{{"TestACL/WAITAOF", "redis 7.0.15 has no WAITAOF"}}, a.skips)
	})
	t.Run("failed tests are named and explain the package's failure", func(t *testing.T) {
		assert.Equal(t, []string{"TestTorture"}, a.failures)
		assert.False(t, a.broken)
		assert.Equal(t, 2500*time.Millisecond, a.elapsed)
	})
	t.Run("a package that failed with no test failing is broken", func(t *testing.T) {
		assert.True(t, b.broken)
		assert.False(t, b.ok())
	})
	t.Run("the wall time runs from the first event to the last", func(t *testing.T) {
		assert.Equal(t, 90*time.Second, r.wall)
	})
}

func TestReadRunRefusesBrokenJSON(t *testing.T) {
	_, err := readRun(strings.NewReader(`{"Action":` + "\n"))
	assert.Error(t, err)
}

// A server the matrix runs with a setting is titled so: its version alone
// would name two columns alike.
func TestTitleNamesTheSettingAServerRunsWith(t *testing.T) {
	const valkey = "Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64"
	for _, tc := range []struct{ name, version, want string }{
		{"valkey-8.0", valkey, "Valkey 8.0.1"},
		{"valkey-9", "Valkey server v=9.1.2 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64", "Valkey 9.1.2"},
		{"valkey-8.0-io-threads", valkey, "Valkey 8.0.1 with io-threads"},
		{"redis-7.0", "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64", "Redis 7.0.15"},
	} {
		assert.Equal(t, tc.want, server{name: tc.name, version: tc.version}.title(), tc.name)
	}
}

func TestReportShowsCountsSkipsAndFailures(t *testing.T) {
	good := run{suites: map[string]*suite{pkgA: {passed: 3}, pkgB: {passed: 2}}, wall: 61 * time.Second}
	degraded := run{suites: map[string]*suite{
		pkgA: {passed: 2, skipped: 1, skips: []note{{"TestAOF/WAITAOF", "redis 7.0.15 has no WAITAOF"}}},
		pkgB: {passed: 1, failed: 1, failures: []string{"TestX"}},
	}, wall: 2 * time.Minute}
	r := report{date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), commit: "abc1234", servers: []server{
		{name: "valkey-8.0", version: "Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64", origin: "bookworm-backports", run: good},
		{name: "redis-7.0", version: "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64", origin: "bookworm", run: degraded},
	}}
	var b strings.Builder
	r.write(&b)
	got := b.String()

	for _, want := range []string{
		"on 2026-01-02 at commit abc1234",
		"| Valkey 8.0.1 | bookworm-backports | jemalloc-5.3.0 |",
		"| suite | Valkey 8.0.1 | Redis 7.0.15 |",
		"| client | 2/2 | FAIL 1/2 |",
		"| test/builtin | 3/3 | 2/3, 1 skipped |",
		"| **every suite** | **5/5** | **FAIL 3/5, 1 skipped** |",
		"| wall time | 1m1s | 2m0s |",
		"- Redis 7.0.15, test/builtin: `TestAOF/WAITAOF` — redis 7.0.15 has no WAITAOF",
		"- Redis 7.0.15, client: `TestX`",
	} {
		t.Run("shows "+want, func(t *testing.T) { assert.Contains(t, got, want) })
	}
	t.Run("a run with a failure is not ok", func(t *testing.T) { assert.False(t, r.ok()) })
	t.Run("a run where every suite passed is ok", func(t *testing.T) {
		assert.True(t, report{servers: []server{{run: good}}}.ok())
	})
	t.Run("a suite one server did not run is not ok", func(t *testing.T) {
		missing := run{suites: map[string]*suite{pkgA: {passed: 3}}}
		assert.False(t, report{servers: []server{{run: good}, {run: missing}}}.ok())
	})
}

func TestCommonDir(t *testing.T) {
	tests := []struct {
		name string
		pkgs []string
		want string
	}{
		{"the module's directory", []string{"m/client", "m/test", "m/test/builtin"}, "m/"},
		{"a package that prefixes another is not a directory of it", []string{"m/test", "m/test/builtin"}, "m/"},
		{"names that share letters cut at the slash", []string{"m/tea", "m/test"}, "m/"},
		{"one package", []string{"m/test"}, "m/"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, commonDir(tt.pkgs)) })
	}
}
