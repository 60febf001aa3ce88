package builtin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/echomq/emq/registry"
)

// as sends c through cl.
func as(t *testing.T, cl valkey.Client, c command) valkey.ValkeyResult {
	return cl.Do(ctx(t), c.build(cl))
}

// grantEveryVerb is the ACL rule that grants every verb and nothing else.
func grantEveryVerb(t *testing.T, s *valkeytest.Server) []string {
	rules, err := s.VerbGrant()
	require.NoError(t, err)
	return rules
}

// refused reports whether r is an ACL refusal.
func refused(r valkey.ValkeyResult) bool { return strings.HasPrefix(errorText(r), "NOPERM ") }

func TestACLCategoriesHoldTheVerbs(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(4)
	require.NoError(t, err)
	if !s.Product().ModuleACLCategories() {
		aclWithoutModuleCategories(t, s, m)
		return
	}
	ok(t, s, "ACL", "SETUSER", "tagged", "on", "nopass", "+@emq", "~emq:{a}:*")
	ok(t, s, "ACL", "SETUSER", "nowrite", "on", "nopass", "+@all", "-@write", "~*")
	ok(t, s, "ACL", "SETUSER", "fast", "on", "nopass", "+@fast", "~*")
	ok(t, s, "ACL", "SETUSER", "reader", "on", "nopass", "+@read", "~*")
	tagged, nowrite, fast := newClient(t, s, "tagged"), newClient(t, s, "nowrite"), newClient(t, s, "fast")
	reader := newClient(t, s, "reader")

	t.Run("the module loads with no ACL note", func(t *testing.T) {
		assert.Empty(t, s.LoadWarnings())
	})

	t.Run("COMMAND LIST FILTERBY ACLCAT emq lists the verbs, ACL CAT emq too but on Valkey 8.0", func(t *testing.T) {
		var verbs []string
		for _, r := range registry.Rows() {
			verbs = append(verbs, r.Name)
		}
		listed, err := s.Do("COMMAND", "LIST", "FILTERBY", "ACLCAT", "emq").AsStrSlice()
		require.NoError(t, err)
		assert.ElementsMatch(t, verbs, listed)
		cat, err := s.Do("ACL", "CAT", "emq").AsStrSlice()
		require.NoError(t, err)
		if p := s.Product(); p.Name == "valkey" && p.Major == 8 && p.Minor == 0 {
			assert.Empty(t, cat, "Valkey 8.0 leaves module commands out of ACL CAT (docs/commands.md, ACL)")
			return
		}
		assert.ElementsMatch(t, verbs, cat)
	})

	t.Run("+@emq grants no built-in", func(t *testing.T) {
		assert.True(t, refused(as(t, tagged, builtin("HSET", 1, keys.Job("a", m.Mint(ids.Job).String()), "f", "v"))))
	})

	t.Run("-@write refuses every write verb and allows EMQ.CAPS", func(t *testing.T) {
		calls, written := oneOfEach(m, "w")
		for _, c := range calls {
			assert.True(t, refused(as(t, nowrite, c)), c.String())
		}
		assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, written...)...))
		assert.NoError(t, as(t, nowrite, caps).Error())
	})

	t.Run("+@fast allows ENQUEUE, PUBLISH, FAILURES.INCR and CAPS, not APPEND", func(t *testing.T) {
		calls, _ := oneOfEach(m, "f")
		for _, c := range append(calls, caps) {
			got := errorText(as(t, fast, c))
			if c.name == "EMQ.APPEND" {
				assert.True(t, strings.HasPrefix(got, "NOPERM "), got)
			} else {
				assert.Empty(t, got, c.String())
			}
		}
	})

	t.Run("+@read allows EMQ.CAPS and no write verb", func(t *testing.T) {
		assert.NoError(t, as(t, reader, caps).Error(), "a reader asks what the node serves")
		calls, written := oneOfEach(m, "r")
		for _, c := range calls {
			assert.True(t, strings.HasPrefix(errorText(as(t, reader, c)), "NOPERM "), c.String())
		}
		assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, written...)...))
	})
}

// aclWithoutModuleCategories holds a server that has no module ACL
// categories (Redis 7.0) to what the module's load note says: the verbs
// are in no category, so only grants by name or +@all reach them.
func aclWithoutModuleCategories(t *testing.T, s *valkeytest.Server, m *ids.Minter) {
	ok(t, s, "ACL", "SETUSER", "writer", "on", "nopass", "+@write", "+@fast", "+@slow", "~*")
	ok(t, s, "ACL", "SETUSER", "nowrite", "on", "nopass", "+@all", "-@write", "~*")
	ok(t, s, "ACL", "SETUSER", "enqueuer", "on", "nopass", "+emq.enqueue", "~*")
	writer, nowrite, enqueuer := newClient(t, s, "writer"), newClient(t, s, "nowrite"), newClient(t, s, "enqueuer")

	t.Run("the load log says to grant the verbs by name or with +@all", func(t *testing.T) {
		notes := strings.Join(s.LoadWarnings(), "\n")
		assert.Contains(t, notes, "+emq.enqueue")
		assert.Contains(t, notes, "+@all")
	})

	t.Run("+@emq is refused: the server has no such category", func(t *testing.T) {
		assert.Error(t, s.Do("ACL", "SETUSER", "tagged", "+@emq").Error())
	})

	t.Run("+@write, +@fast and +@slow grant no verb", func(t *testing.T) {
		calls, written := oneOfEach(m, "w")
		for _, c := range append(calls, caps) {
			assert.True(t, refused(as(t, writer, c)), c.String())
		}
		assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, written...)...))
	})

	t.Run("+@all -@write still grants every verb", func(t *testing.T) {
		calls, _ := oneOfEach(m, "n")
		for _, c := range append(calls, caps) {
			assert.NoError(t, as(t, nowrite, c).Error(), c.String())
		}
	})

	t.Run("a grant by name allows that verb and no other", func(t *testing.T) {
		calls, _ := oneOfEach(m, "e")
		for _, c := range append(calls, caps) {
			got := as(t, enqueuer, c)
			if c.name == "EMQ.ENQUEUE" {
				assert.NoError(t, got.Error(), c.String())
			} else {
				assert.True(t, refused(got), c.String())
			}
		}
	})
}

func TestACLGovernsVerbsLikeBuiltins(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(4)
	require.NoError(t, err)
	ok(t, s, append(append([]string{"ACL", "SETUSER", "tagged", "on", "nopass"}, grantEveryVerb(t, s)...), "~emq:{a}:*")...)
	tagged := newClient(t, s, "tagged")

	t.Run("the verbs' grant with a key pattern allows every verb on its keys", func(t *testing.T) {
		calls, _ := oneOfEach(m, "a")
		for _, c := range append(calls, caps) {
			assert.NoError(t, as(t, tagged, c).Error(), c.String())
		}
	})

	t.Run("the verbs' grant with a key pattern refuses every verb on other keys with NOPERM", func(t *testing.T) {
		calls, written := oneOfEach(m, "b")
		for _, c := range calls {
			assert.True(t, refused(as(t, tagged, c)), c.String())
		}
		assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, written...)...))
	})

	t.Run("a numkeys that lies never reaches a key outside the pattern", func(t *testing.T) {
		lies, outside := numkeysLies(m, "a", "b")
		for _, c := range lies {
			got := errorText(as(t, tagged, c))
			assert.True(t, strings.HasPrefix(got, "EMQSHAPE ") || strings.HasPrefix(got, "NOPERM ") ||
				strings.HasPrefix(got, "wrong number of arguments"), "%s: %q", c, got)
			assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, outside...)...), "%s touched a key outside the pattern", c)
		}
	})

	t.Run("ACL DRYRUN answers for every verb as for a built-in", func(t *testing.T) {
		allowed, _ := oneOfEach(m, "a")
		denied, _ := oneOfEach(m, "b")
		for i := range allowed {
			assert.Equal(t, "OK", str(t, s, append([]string{"ACL", "DRYRUN", "tagged"}, allowed[i].argv()...)...), allowed[i].String())
			got := str(t, s, append([]string{"ACL", "DRYRUN", "tagged"}, denied[i].argv()...)...)
			assert.Contains(t, got, "no permissions to access the '"+denied[i].keys[0]+"' key", denied[i].String())
		}
	})

	t.Run("COMMAND GETKEYS names every verb's keys", func(t *testing.T) {
		calls, _ := oneOfEach(m, "g")
		for _, c := range calls {
			got, err := s.Do(append([]string{"COMMAND", "GETKEYS"}, c.argv()...)...).AsStrSlice()
			require.NoError(t, err, c.String())
			assert.Equal(t, c.keys, got, c.String())
		}
		assert.Equal(t, errorText(s.Do("COMMAND", "GETKEYS", "PING")), errorText(s.Do("COMMAND", "GETKEYS", "EMQ.CAPS")),
			"EMQ.CAPS has no keys, as PING has none")
	})

	t.Run("COMMAND GETKEYSANDFLAGS marks every written key RW", func(t *testing.T) {
		calls, _ := oneOfEach(m, "g")
		for _, c := range calls {
			rows, err := s.Do(append([]string{"COMMAND", "GETKEYSANDFLAGS"}, c.argv()...)...).ToArray()
			require.NoError(t, err, c.String())
			require.Len(t, rows, len(c.keys), c.String())
			for _, row := range rows {
				kf, err := row.ToArray()
				require.NoError(t, err)
				flags, err := kf[1].AsStrSlice()
				require.NoError(t, err)
				assert.Contains(t, flags, "RW", c.String())
			}
		}
	})

	t.Run("ACL LOG records the denied verb and key", func(t *testing.T) {
		ok(t, s, "ACL", "LOG", "RESET")
		calls, _ := oneOfEach(m, "b")
		as(t, tagged, calls[0])
		entries := s.ACLLog(t)
		require.NotEmpty(t, entries)
		assert.Equal(t, "key", entries[0]["reason"])
		assert.Equal(t, calls[0].keys[0], entries[0]["object"])
	})
}
