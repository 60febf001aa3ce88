package keys_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/keys"
)

// hashTag is the part of key the server hashes for its cluster slot: what
// lies between the first '{' and the first '}' after it, when not empty.
func hashTag(key []byte) []byte {
	open := bytes.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := bytes.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// FuzzSplit: no key panics a split; at most one layout accepts a key; an
// accepted key rebuilds exactly from its parts, its name is a valid name,
// and that name is the key's hash tag, so a verb's keys share a slot.
func FuzzSplit(f *testing.F) {
	f.Fuzz(func(t *testing.T, key []byte) {
		var names [][]byte
		if queue, id, ok := keys.SplitJob(key); ok {
			names = append(names, queue)
			require.Equal(t, string(key), keys.Job(string(queue), string(id)), "job key rebuilds")
		}
		if queue, ok := keys.SplitPending(key); ok {
			names = append(names, queue)
			require.Equal(t, string(key), keys.Pending(string(queue)), "pending key rebuilds")
		}
		if topic, sname, ok := keys.SplitStream(key); ok {
			names = append(names, topic)
			require.True(t, keys.ValidStreamName(sname), "sname %q", sname)
			require.Equal(t, string(key), keys.Stream(string(topic), string(sname)), "stream key rebuilds")
		}
		if topic, sub, msg, ok := keys.SplitFail(key); ok {
			names = append(names, topic)
			require.NotContains(t, string(sub), ":", "the SUB segment ends at the first ':'")
			require.Equal(t, string(key), keys.Fail(string(topic), string(sub), string(msg)), "failure key rebuilds")
		}
		require.LessOrEqual(t, len(names), 1, "%q follows one layout at most", key)
		for _, name := range names {
			require.True(t, keys.ValidName(name), "name %q", name)
			require.Equal(t, string(name), string(hashTag(key)), "the name is the hash tag")
		}
	})
}

// FuzzSplitSetOf: knowing the call's queue (a valid name, or none) never
// changes how a key splits — only what the split costs.
func FuzzSplitSetOf(f *testing.F) {
	f.Add([]byte("emq:{q}:active"), []byte("q"))
	f.Add([]byte("emq:{qq}:active"), []byte("q"))
	f.Add([]byte("emq:{q}:active"), []byte(""))
	f.Fuzz(func(t *testing.T, key, queue []byte) {
		if len(queue) > 0 && !keys.ValidName(queue) {
			return
		}
		if len(queue) == 0 {
			queue = nil
		}
		for _, set := range []string{keys.PendingSet, keys.ActiveSet, keys.Config} {
			want, wantOK := keys.SplitSet(key, set)
			got, ok := keys.SplitSetOf(key, set, queue)
			require.Equal(t, wantOK, ok, "%q in %s of %q", key, set, queue)
			require.Equal(t, string(want), string(got))
		}
	})
}

// FuzzBuild: every key built from a valid name splits back into the parts
// it was built from; a stream key does exactly when its sname is valid.
func FuzzBuild(f *testing.F) {
	f.Fuzz(func(t *testing.T, name, id, sname, sub, msg string) {
		if !keys.ValidName([]byte(name)) {
			return
		}
		queue, gotID, ok := keys.SplitJob([]byte(keys.Job(name, id)))
		require.Equal(t, !strings.Contains(id, ":"), ok, "an id is one segment: %q", id)
		if ok {
			assert.Equal(t, name, string(queue))
			assert.Equal(t, id, string(gotID))
		}

		queue, ok = keys.SplitPending([]byte(keys.Pending(name)))
		require.True(t, ok)
		assert.Equal(t, name, string(queue))

		topic, gotSname, ok := keys.SplitStream([]byte(keys.Stream(name, sname)))
		require.Equal(t, keys.ValidStreamName([]byte(sname)), ok, "sname %q", sname)
		if ok {
			assert.Equal(t, name, string(topic))
			assert.Equal(t, sname, string(gotSname))
		}

		topic, gotSub, gotMsg, ok := keys.SplitFail([]byte(keys.Fail(name, sub, msg)))
		twoSegments := sub != "" && msg != "" && !strings.Contains(sub+msg, ":")
		require.Equal(t, twoSegments, ok, "a failure key has two id segments: %q %q", sub, msg)
		if !ok {
			return
		}
		assert.Equal(t, name, string(topic))
		assert.Equal(t, sub, string(gotSub))
		assert.Equal(t, msg, string(gotMsg))
	})
}
