// Package surface checks what a user discovers about the module from the
// server itself — COMMAND INFO, COMMAND DOCS, COMMAND GETKEYS, INFO emq and
// the emq.* configs — against the command table and the calls made.
package surface

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/host"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/registry"
)

func strs(t *testing.T, m valkey.ValkeyMessage) []string {
	t.Helper()
	v, err := m.AsStrSlice()
	require.NoError(t, err)
	return v
}

// wantFlags is the flags COMMAND INFO shows for a row: the row's own, in the
// server's spelling, plus module — never movablekeys, since every verb's
// keys sit at fixed positions.
func wantFlags(r registry.Row) []string {
	var out []string
	for _, f := range strings.Fields(r.Flags) {
		f = strings.TrimPrefix(f, "allow-") // allow-loading shows as loading
		out = append(out, strings.ReplaceAll(f, "-", ""))
	}
	return append(out, "module")
}

func TestCommandInfoMatchesTheTable(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	for _, r := range registry.Rows() {
		t.Run(r.Name, func(t *testing.T) {
			info, err := s.Do("COMMAND", "INFO", r.Name).ToArray()
			require.NoError(t, err)
			require.Len(t, info, 1)
			fields, err := info[0].ToArray()
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(fields), 9)
			name, _ := fields[0].ToString()
			assert.Equal(t, strings.ToLower(r.Name), strings.ToLower(name))
			arity, _ := fields[1].AsInt64()
			assert.Equal(t, int64(r.Arity), arity, "arity")
			assert.ElementsMatch(t, wantFlags(r), strs(t, fields[2]), "flags")
			first, _ := fields[3].ToInt64()
			last, _ := fields[4].ToInt64()
			step, _ := fields[5].ToInt64()
			if r.Keys > 0 {
				assert.Equal(t, []int64{2, int64(1 + r.Keys), 1}, []int64{first, last, step}, "first/last/step")
			} else {
				assert.Equal(t, []int64{0, 0, 0}, []int64{first, last, step}, "first/last/step")
			}
			var acl []string // none where the server has no module ACL categories
			for _, c := range strings.Fields(r.ACL) {
				if s.Product().ModuleACLCategories() {
					acl = append(acl, "@"+c)
				}
			}
			assert.ElementsMatch(t, acl, strs(t, fields[6]), "ACL categories")
			specs, err := fields[8].ToArray()
			require.NoError(t, err)
			if r.KeyFlags == 0 {
				assert.Empty(t, specs, "a verb without keys has no key spec")
				return
			}
			require.Len(t, specs, 1, "one key spec")
			spec, err := specs[0].AsMap()
			require.NoError(t, err)
			assert.ElementsMatch(t, keyFlagNames(r.KeyFlags), strs(t, spec["flags"]))
			if slices.Contains(strings.Fields(r.Flags), "write") { // without, %R~ would let a reader write
				assert.NotZero(t, r.KeyFlags&(host.KeyInsert|host.KeyUpdate|host.KeyDelete), "a write verb's keys are inserted, updated or deleted from")
			}
			bs := asMap(t, spec["begin_search"])
			assert.Equal(t, "index", mustString(t, bs["type"]))
			bsSpec := asMap(t, bs["spec"])["index"]
			pos, _ := bsSpec.ToInt64()
			assert.Equal(t, int64(2), pos, "the keys begin after numkeys")
			fk := asMap(t, spec["find_keys"])
			assert.Equal(t, "range", mustString(t, fk["type"]))
			fkSpec := asMap(t, fk["spec"])["lastkey"]
			lastkey, _ := fkSpec.ToInt64()
			assert.Equal(t, int64(r.Keys-1), lastkey, "a fixed range of Keys keys")
		})
	}
}

func keyFlagNames(f host.KeyFlags) []string {
	names := map[host.KeyFlags]string{host.KeyRO: "RO", host.KeyRW: "RW", host.KeyAccess: "access",
		host.KeyUpdate: "update", host.KeyInsert: "insert", host.KeyDelete: "delete"}
	var out []string
	for bit, name := range names {
		if f&bit != 0 {
			out = append(out, name)
		}
	}
	return out
}

func asMap(t *testing.T, m valkey.ValkeyMessage) map[string]valkey.ValkeyMessage {
	t.Helper()
	v, err := m.AsMap()
	require.NoError(t, err)
	return v
}

func mustString(t *testing.T, m valkey.ValkeyMessage) string {
	t.Helper()
	v, err := m.ToString()
	require.NoError(t, err)
	return v
}

func TestCommandDocsMatchTheTable(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	for _, r := range registry.Rows() {
		t.Run(r.Name, func(t *testing.T) {
			docs, err := s.Do("COMMAND", "DOCS", r.Name).AsMap()
			require.NoError(t, err)
			require.Len(t, docs, 1)
			var doc map[string]valkey.ValkeyMessage
			for _, v := range docs {
				doc, err = v.AsMap()
				require.NoError(t, err)
			}
			assert.Equal(t, r.Summary, mustString(t, doc["summary"]))
			assert.Equal(t, r.Since, mustString(t, doc["since"]))
			assert.Equal(t, r.Complexity, mustString(t, doc["complexity"]))
			assert.Equal(t, "emq", mustString(t, doc["module"]))
			if len(r.Args) == 0 {
				assert.NotContains(t, doc, "arguments")
				return
			}
			assertArgs(t, r.Args, doc["arguments"])
		})
	}
}

// TestVariadicVerbsDocumentTheirOptions: a verb whose arity lets a call
// leave arguments out or add more (-N) documents which — an optional or a
// repeating argument — so that valkey-cli's hints and COMMAND DOCS show
// them.
func TestVariadicVerbsDocumentTheirOptions(t *testing.T) {
	var varies func(args []host.ArgSpec) bool
	varies = func(args []host.ArgSpec) bool {
		return slices.ContainsFunc(args, func(a host.ArgSpec) bool { return a.Optional || a.Multiple || varies(a.Sub) })
	}
	for _, r := range registry.Rows() {
		if r.Arity < 0 {
			assert.True(t, varies(r.Args), "%s (arity %d) documents no optional or repeating argument", r.Name, r.Arity)
		}
	}
}

var argTypes = map[host.ArgType]string{host.ArgString: "string", host.ArgInteger: "integer", host.ArgKey: "key", host.ArgBlock: "block"}

func assertArgs(t *testing.T, want []host.ArgSpec, got valkey.ValkeyMessage) {
	t.Helper()
	args, err := got.ToArray()
	require.NoError(t, err)
	require.Len(t, args, len(want))
	for i, w := range want {
		a, err := args[i].AsMap()
		require.NoError(t, err)
		assert.Equal(t, strings.ToLower(w.Name), mustString(t, a["name"]))
		assert.Equal(t, argTypes[w.Type], mustString(t, a["type"]), w.Name)
		if w.Type == host.ArgKey {
			ks := a["key_spec_index"]
			n, err := ks.AsInt64()
			require.NoError(t, err)
			assert.Equal(t, int64(0), n, "%s refers to the key spec", w.Name)
		}
		assert.Equal(t, w.Multiple, slices.Contains(argFlags(t, a), "multiple"), "%s may repeat", w.Name)
		if len(w.Sub) > 0 {
			assertArgs(t, w.Sub, a["arguments"])
		}
	}
}

// argFlags returns the flags of a documented argument; none when COMMAND
// DOCS leaves them out.
func argFlags(t *testing.T, arg map[string]valkey.ValkeyMessage) []string {
	t.Helper()
	f, ok := arg["flags"]
	if !ok {
		return nil
	}
	return strs(t, f)
}

// docArg returns the documented argument name of a verb.
func docArg(t *testing.T, s *valkeytest.Server, verb, name string) map[string]valkey.ValkeyMessage {
	t.Helper()
	docs, err := s.Do("COMMAND", "DOCS", verb).AsMap()
	require.NoError(t, err)
	for _, d := range docs {
		argv := asMap(t, d)["arguments"]
		args, err := argv.ToArray()
		require.NoError(t, err)
		for _, a := range args {
			if arg := asMap(t, a); mustString(t, arg["name"]) == name {
				return arg
			}
		}
	}
	require.FailNow(t, verb+" documents no argument "+name)
	return nil
}

// What valkey-cli's hints show: a batch repeats its entries, an envelope is
// one entry.
func TestCommandDocsHintOneEntryForPublish(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	t.Run("EMQ.PUBLISH's entry is not multiple", func(t *testing.T) {
		assert.NotContains(t, argFlags(t, docArg(t, s, "EMQ.PUBLISH", "entry")), "multiple")
	})
	t.Run("EMQ.APPEND's entry is multiple", func(t *testing.T) {
		assert.Contains(t, argFlags(t, docArg(t, s, "EMQ.APPEND", "entry")), "multiple")
	})
}

// The count a claim takes, as valkey-cli's help shows it: SETTLE's may be
// 0 (settle only), a claim's not.
func TestCommandDocsSayTheCountsTheClaimsTake(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	for verb, bounds := range map[string]string{"EMQ.CLAIM": "1 to 1000", "EMQ.BCLAIM": "1 to 1000", "EMQ.SETTLE": "0 to 1000"} {
		t.Run(verb, func(t *testing.T) {
			assert.Contains(t, mustString(t, docArg(t, s, verb, "count")["summary"]), bounds)
		})
	}
}

func TestGetKeys(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	cases := []struct {
		name string
		cmd  []string
		keys []string
	}{
		{"enqueue names its two keys", []string{"EMQ.ENQUEUE", "2", "emq:{q}:job:JOB0018f2a4c1e00001", "emq:{q}:pending", "JOB0018f2a4c1e00001", "p"},
			[]string{"emq:{q}:job:JOB0018f2a4c1e00001", "emq:{q}:pending"}},
		{"append names its stream", []string{"EMQ.APPEND", "1", "emq:{t}:stream:s", "1", "EVT0018f2a4c1e00001", "1", "a", "b"},
			[]string{"emq:{t}:stream:s"}},
		{"publish names its stream", []string{"EMQ.PUBLISH", "1", "emq:{t}:stream:msgs", "1", "EVT0018f2a4c1e00001", "1", "a", "b"},
			[]string{"emq:{t}:stream:msgs"}},
		{"failures.incr names its counter", []string{"EMQ.FAILURES.INCR", "1", "emq:{t}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00001", "5"},
			[]string{"emq:{t}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00001"}},
		{"park names its source, dead-letter stream and counter", []string{"EMQ.PARK", "3", "emq:{t}:stream:s", "emq:{t}:stream:dlq",
			"emq:{t}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00001", "g", "c", "1-1", "EVT0018f2a4c1e00001", "r"},
			[]string{"emq:{t}:stream:s", "emq:{t}:stream:dlq", "emq:{t}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00001"}},
		{"keys sit at fixed positions, whatever numkeys says", []string{"EMQ.FAILURES.INCR", "2", "a", "b"}, []string{"a"}},
		{"a numkeys past the arguments moves no key", []string{"EMQ.ENQUEUE", "9", "a", "b", "c", "d"}, []string{"a", "b"}},
		{"a negative numkeys moves no key", []string{"EMQ.ENQUEUE", "-1", "a", "b", "c", "d"}, []string{"a", "b"}},
		{"a numkeys that is no number moves no key", []string{"EMQ.ENQUEUE", "two", "a", "b", "c", "d"}, []string{"a", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Do(append([]string{"COMMAND", "GETKEYS"}, c.cmd...)...).AsStrSlice()
			require.NoError(t, err)
			assert.Equal(t, c.keys, got)
			withFlags, err := s.Do(append([]string{"COMMAND", "GETKEYSANDFLAGS"}, c.cmd...)...).ToArray()
			require.NoError(t, err)
			require.Len(t, withFlags, len(c.keys))
			pair, err := withFlags[0].ToArray()
			require.NoError(t, err)
			assert.Contains(t, strs(t, pair[1]), "RW")
		})
	}
	t.Run("caps has no keys, as PING has none", func(t *testing.T) {
		err := s.Do("COMMAND", "GETKEYS", "EMQ.CAPS").Error()
		require.Error(t, err)
		// Redis 7.0 refuses COMMAND GETKEYS of a command alone for its arity.
		assert.Equal(t, s.Do("COMMAND", "GETKEYS", "PING").Error().Error(), err.Error())
	})
}

// TestKeySpecsSayWhatEachVerbDoes holds the key specs' logical flag to
// what each write verb does to its keys, as docs/commands.md ("Key
// positions") lists: the admissions insert, the removals delete, the rest
// update.
func TestKeySpecsSayWhatEachVerbDoes(t *testing.T) {
	does := map[string]host.KeyFlags{
		"EMQ.ENQUEUE": host.KeyInsert, "EMQ.SCHEDULE": host.KeyInsert, "EMQ.ENQUEUEMANY": host.KeyInsert,
		"EMQ.REMOVE": host.KeyDelete, "EMQ.UNREPEAT": host.KeyDelete,
	}
	for _, r := range registry.Rows() {
		if !slices.Contains(strings.Fields(r.Flags), "write") {
			continue
		}
		want, ok := does[r.Name]
		if !ok {
			want = host.KeyUpdate
		}
		assert.Equal(t, want, r.KeyFlags&(host.KeyInsert|host.KeyUpdate|host.KeyDelete), r.Name)
	}
}

// TestKeyPermissionsFollowTheKeySpec asks ACL DRYRUN, for every verb with
// keys, of a user who may only read every key and of one who may only
// write them: a write verb needs write (its key spec says insert, update
// or delete), and one whose key spec says access needs read too, as for a
// built-in.
func TestKeyPermissionsFollowTheKeySpec(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	for user, keys := range map[string]string{"reader": "%R~*", "writer": "%W~*"} {
		require.NoError(t, s.Do("ACL", "SETUSER", user, "on", "nopass", "+@all", keys).Error())
	}
	for _, r := range registry.Rows() {
		if r.Keys == 0 {
			continue
		}
		t.Run(r.Name, func(t *testing.T) {
			argv := []string{r.Name, strconv.Itoa(r.Keys)}
			for i := range r.Keys {
				argv = append(argv, "emq:{q}:k"+strconv.Itoa(i))
			}
			for len(argv) < max(r.Arity, -r.Arity) {
				argv = append(argv, "0")
			}
			writes := slices.Contains(strings.Fields(r.Flags), "write")
			for user, allowed := range map[string]bool{"reader": !writes, "writer": r.KeyFlags&host.KeyAccess == 0} {
				got, err := s.Do(append([]string{"ACL", "DRYRUN", user}, argv...)...).ToString()
				require.NoError(t, err)
				if allowed {
					assert.Equal(t, "OK", got, user)
				} else {
					assert.Contains(t, got, "no permissions to access the 'emq:{q}:k0' key", user)
				}
			}
		})
	}
}

// TestChangesCountOnePerReplicatedCommand: the server's count of changes
// (rdb_changes_since_last_save) moves by one for each command a verb
// replicates, where the same writes sent by a client count each field
// and member (docs/commands.md, "What else the server counts").
func TestChangesCountOnePerReplicatedCommand(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	changes := func(args ...string) int64 {
		t.Helper()
		before := valkeytest.InfoInt(s.Info("persistence"), "rdb_changes_since_last_save")
		require.NoError(t, s.Do(args...).Error())
		return valkeytest.InfoInt(s.Info("persistence"), "rdb_changes_since_last_save") - before
	}
	const id = "JOB0018f2a4c1e00001"
	assert.Equal(t, int64(2), changes("EMQ.ENQUEUE", "2", "emq:{c}:job:"+id, "emq:{c}:pending", id, "p"), "HSET and ZADD, replicated")
	assert.Equal(t, int64(3), changes("HSET", "emq:{d}:job:"+id, "state", "pending", "attempts", "0", "payload", "p"), "a client's HSET of three fields")
	assert.Equal(t, int64(1), changes("ZADD", "emq:{d}:pending", "0", id))
}

// emqInfo returns INFO emq's counters.
func emqInfo(t *testing.T, s *valkeytest.Server) map[string]int64 {
	t.Helper()
	fields := s.Info("emq")
	require.NotEmpty(t, fields, "INFO emq answers")
	return valkeytest.InfoInts(fields)
}

func TestInfoCountsEveryCall(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	const job, pending, fail = "emq:{q}:job:JOB0018f2a4c1e00001", "emq:{q}:pending", "emq:{t}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00001"
	steps := []struct {
		name  string
		cmd   []string
		moved map[string]int64 // counters that move, by how much; every other stays
	}{
		{"an admitted job", []string{"EMQ.ENQUEUE", "2", job, pending, "JOB0018f2a4c1e00001", "p"},
			map[string]int64{"emq_calls_enqueue": 1, "emq_ok_enqueue": 1, "emq_jobs_admitted": 1}},
		{"a duplicate", []string{"EMQ.ENQUEUE", "2", job, pending, "JOB0018f2a4c1e00001", "p"},
			map[string]int64{"emq_calls_enqueue": 1, "emq_ok_enqueue": 1, "emq_jobs_duplicate": 1}},
		{"a kind refusal", []string{"EMQ.ENQUEUE", "2", job, pending, "MSG0018f2a4c1e00001", "p"},
			map[string]int64{"emq_calls_enqueue": 1, "emq_refused_enqueue": 1, "emq_refused_emqkind": 1}},
		{"a batch of three", []string{"EMQ.APPEND", "1", "emq:{t}:stream:s", "3", "EVT0018f2a4c1e00001", "1", "a", "b",
			"EVT0018f2a4c1e00002", "1", "a", "b", "EVT0018f2a4c1e00003", "1", "a", "b"},
			map[string]int64{"emq_calls_append": 1, "emq_ok_append": 1, "emq_entries_appended": 3}},
		{"an order refusal", []string{"EMQ.APPEND", "1", "emq:{t}:stream:s", "1", "EVT0018f2a4c1e00001", "1", "a", "b"},
			map[string]int64{"emq_calls_append": 1, "emq_refused_append": 1, "emq_refused_emqorder": 1}},
		{"an envelope", []string{"EMQ.PUBLISH", "1", "emq:{t}:stream:msgs", "1", "EVT0018f2a4c1e00001", "2", "msg", "MSG0018f2a4c1e00001", "payload", "x"},
			map[string]int64{"emq_calls_publish": 1, "emq_ok_publish": 1, "emq_envelopes_published": 1}},
		{"an envelope refusal", []string{"EMQ.PUBLISH", "1", "emq:{t}:stream:msgs", "1", "EVT0018f2a4c1e00002", "1", "payload", "x"},
			map[string]int64{"emq_calls_publish": 1, "emq_refused_publish": 1, "emq_refused_emqenvelope": 1}},
		{"a failure counted", []string{"EMQ.FAILURES.INCR", "1", fail, "1000"},
			map[string]int64{"emq_calls_failures_incr": 1, "emq_ok_failures_incr": 1, "emq_failures_counted": 1}},
		{"a shape refusal", []string{"EMQ.FAILURES.INCR", "1", fail, "0"},
			map[string]int64{"emq_calls_failures_incr": 1, "emq_refused_failures_incr": 1, "emq_refused_emqshape": 1}},
		{"a layout refusal", []string{"EMQ.FAILURES.INCR", "1", pending, "1000"},
			map[string]int64{"emq_calls_failures_incr": 1, "emq_refused_failures_incr": 1, "emq_refused_emqlayout": 1}},
		{"caps", []string{"EMQ.CAPS"}, map[string]int64{"emq_calls_caps": 1, "emq_ok_caps": 1}},
		{"a built-in command", []string{"PING"}, nil},
	}
	before := emqInfo(t, s)
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			_ = s.Do(st.cmd...)
			after := emqInfo(t, s)
			for field, was := range before {
				if strings.HasPrefix(field, "emq_go_") {
					continue
				}
				assert.Equal(t, was+st.moved[field], after[field], field)
			}
			before = after
		})
	}
	t.Run("a wrong type is counted under its code", func(t *testing.T) {
		require.NoError(t, s.Do("SET", fail, "x").Error())
		require.NoError(t, s.Do("DEL", fail).Error())
		require.NoError(t, s.Do("LPUSH", fail, "x").Error())
		was := emqInfo(t, s)["emq_refused_wrongtype"]
		require.ErrorContains(t, s.Do("EMQ.FAILURES.INCR", "1", fail, "1000").Error(), "WRONGTYPE")
		assert.Equal(t, was+1, emqInfo(t, s)["emq_refused_wrongtype"])
	})
	t.Run("every verb, refusal code and event has its fields", func(t *testing.T) {
		info := emqInfo(t, s)
		var want []string
		for _, r := range registry.Rows() {
			name := strings.ReplaceAll(strings.TrimPrefix(strings.ToLower(r.Name), "emq."), ".", "_")
			want = append(want, "emq_calls_"+name, "emq_ok_"+name, "emq_refused_"+name)
		}
		for _, code := range emqerrors.Codes {
			want = append(want, "emq_refused_"+strings.ToLower(code.String()))
		}
		for _, e := range emq.CounterNames {
			want = append(want, "emq_"+e)
		}
		for _, f := range want {
			assert.Contains(t, info, f)
		}
	})
	t.Run("Go runtime figures are there", func(t *testing.T) {
		info := emqInfo(t, s)
		for _, f := range []string{"emq_go_heap_inuse_bytes", "emq_go_heap_live_bytes", "emq_go_heap_objects", "emq_go_total_allocs", "emq_go_gc_cycles", "emq_go_threads", "emq_go_maxprocs"} {
			assert.Contains(t, info, f)
		}
		assert.Positive(t, info["emq_go_heap_inuse_bytes"])
		assert.Positive(t, info["emq_go_threads"], "the runtime's threads, the server's main thread among them")
	})
}

func TestAppendMaxEntries(t *testing.T) {
	batch := func(n int) []string {
		cmd := []string{"EMQ.APPEND", "1", "emq:{t}:stream:s", strconv.Itoa(n)}
		for i := 1; i <= n; i++ {
			cmd = append(cmd, "EVT0018f2a4c1e0"+strconv.FormatInt(int64(0x1000+i), 16), "1", "f", "v")
		}
		return cmd
	}
	cases := []struct {
		name string
		opts valkeytest.Options
		want string
	}{
		{"default", valkeytest.Options{}, "100000"},
		{"a load argument", valkeytest.Options{ModuleArgs: []string{"append-max-entries", "3"}}, "3"},
		{"a config line", valkeytest.Options{Config: []string{"emq.append-max-entries", "4"}}, "4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := valkeytest.Start(t, c.opts)
			got, err := s.Do("CONFIG", "GET", "emq.append-max-entries").AsStrMap()
			require.NoError(t, err)
			assert.Equal(t, c.want, got["emq.append-max-entries"])
		})
	}
	t.Run("the cap refuses above it and CONFIG SET moves it", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{ModuleArgs: []string{"append-max-entries", "3"}})
		require.ErrorContains(t, s.Do(batch(4)...).Error(), "EMQSHAPE n is above emq.append-max-entries (3)")
		n, _ := s.Do("EXISTS", "emq:{t}:stream:s").AsInt64()
		assert.Zero(t, n, "a refused batch writes nothing")
		require.NoError(t, s.Do(batch(3)...).Error())
		require.NoError(t, s.Do("CONFIG", "SET", "emq.append-max-entries", "5").Error())
		require.NoError(t, s.Do("DEL", "emq:{t}:stream:s").Error())
		require.NoError(t, s.Do(batch(5)...).Error())
		require.Error(t, s.Do("CONFIG", "SET", "emq.append-max-entries", "0").Error(), "0 is below the minimum")
	})
	t.Run("an unknown load argument fails the load", func(t *testing.T) {
		_, err := valkeytest.Launch(valkeytest.Options{ModuleArgs: []string{"no-such-setting", "1"}})
		require.Error(t, err)
	})
}
