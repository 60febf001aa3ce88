package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A callgrind dump in the shape --dump-instr=no writes: compressed names,
// relative positions, and calls whose inclusive cost must not count twice.
const sampleDump = `# callgrind format
version: 1
positions: line
events: Ir
summary: 225

ob=(1) /usr/bin/valkey-server
fl=(1) ???
fn=(1) call
0 100
cob=(2) /work/build/emq.so
cfn=(2) emqServe
calls=1 0
0 60
+2 5

ob=(2)
fn=(2)
* 50
-1 10

ob=(1)
fn=(5) call'2
0 7
fn=(3) processTimeEvents
0 3
cfn=(4) serverCron
calls=1 0
0 27
fn=(4)
0 27

ob=(2)
fn=(6) github.com/echomq/emq/host.yieldOnTime
0 4
cfn=(7) runtime.mcall
calls=1 0
0 9
fn=(7)
0 9
totals: 225
`

func TestParseProfile(t *testing.T) {
	p, err := parseProfile(strings.NewReader(sampleDump), filepath.Base)
	require.NoError(t, err)
	assert.Equal(t, int64(215), p.total, "a call's inclusive cost is its callee's, not counted again")
	assert.Equal(t, map[string]int64{"call [valkey-server]": 112, "emqServe [emq.so]": 60,
		"processTimeEvents [valkey-server]": 3, "serverCron [valkey-server]": 27,
		"github.com/echomq/emq/host.yieldOnTime [emq.so]": 4, "runtime.mcall [emq.so]": 9}, p.function)
	assert.Equal(t, map[string]int64{"valkey-server": 142, "emq.so": 73}, p.object)
	assert.Equal(t, int64(27), p.cron, "the cron's calls' inclusive cost")
	assert.Equal(t, int64(9), p.yield, "the scheduler turns' inclusive cost, not the check that makes them")
	assert.Equal(t, int64(215-27-9), p.counted(), "a measurement counts all but the cron and the turns")
	assert.NotContains(t, p.function, "call'2 [valkey-server]", "a recursive activation is its function's")
}

func TestMinusIsPerNameBothWays(t *testing.T) {
	p := map[string]int64{"a": 10, "b": 5}
	q := map[string]int64{"a": 4, "c": 7}
	assert.Equal(t, map[string]int64{"a": 6, "b": 5, "c": -7}, minus(p, q))
}

func TestDiffCostsListsObjectsThenMoreThenFewer(t *testing.T) {
	p := profile{object: map[string]int64{"emq.so": 40, "valkey-server": 100},
		function: map[string]int64{"f [emq.so]": 40, "g [valkey-server]": 100}}
	q := profile{object: map[string]int64{"valkey-server": 120},
		function: map[string]int64{"g [valkey-server]": 110, "h [valkey-server]": 10}}
	want := "      +20  emq.so\n      -10  valkey-server\n      +10  in all\n\n" +
		"      +20  f [emq.so]\n       -5  g [valkey-server]\n       -5  h [valkey-server]\n"
	assert.Equal(t, want, diffCosts(p, q, 2))
}

func TestTopSortsByCostThenName(t *testing.T) {
	got := top(map[string]int64{"b": 5, "a": 5, "c": 9, "d": 1}, 3)
	assert.Equal(t, []cost{{"c", 9}, {"a", 5}, {"b", 5}}, got)
}

func TestProfilePlusAddsBothSteps(t *testing.T) {
	enqueue := profile{total: 30, cron: 3, yield: 2, function: map[string]int64{"f [a]": 10, "g [a]": 20}, object: map[string]int64{"a": 30}}
	drain := profile{total: 5, cron: 1, function: map[string]int64{"g [a]": 1, "h [b]": 4}, object: map[string]int64{"a": 1, "b": 4}}
	sum := enqueue.plus(drain)
	assert.Equal(t, int64(35), sum.total)
	assert.Equal(t, int64(35-4-2), sum.counted(), "the cron and the turns of both left out")
	assert.Equal(t, map[string]int64{"f [a]": 10, "g [a]": 21, "h [b]": 4}, sum.function)
	assert.Equal(t, map[string]int64{"a": 31, "b": 4}, sum.object)
	assert.Equal(t, int64(20), enqueue.function["g [a]"], "the operands are left alone")
}

// The counts leave out the calls of the function yieldFunction names: a
// rename in host would put the scheduler's turns back in every count.
func TestYieldFunctionIsTheHostsYield(t *testing.T) {
	pkg, name, ok := strings.Cut(strings.TrimPrefix(yieldFunction, "github.com/echomq/emq/"), ".")
	require.True(t, ok)
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
	require.NoError(t, err)
	found := false
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name {
				found = true
			}
		}
	}
	assert.True(t, found, "package %s declares no func %s", pkg, name)
}
