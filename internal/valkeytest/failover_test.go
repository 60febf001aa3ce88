package valkeytest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// alignShardIDs repairs what Valkey 8.0 refuses to load (a replica's
// shard-id apart from its primary's) and leaves every other file alone.
func TestAlignShardIDs(t *testing.T) {
	const (
		primary  = "b27d 127.0.0.1:36958@38452,,tls-port=0,shard-id=aaaa master - 0 1796164197773 2 connected 0-5460"
		replica  = "e80d 127.0.0.1:36959@38453,,tls-port=0,shard-id=%s myself,slave b27d 0 1796164197773 2 connected"
		other    = "c31f 127.0.0.1:36960@38454,,tls-port=0,shard-id=cccc master - 0 1796164197773 3 connected 5461-16383"
		vars     = "vars currentEpoch 7 lastVoteEpoch 7"
		repaired = "e80d 127.0.0.1:36959@38453,,tls-port=0,shard-id=aaaa myself,slave b27d 0 1796164197773 2 connected"
	)
	for _, tc := range []struct {
		name, replicaShard string
		changed            bool
	}{
		{"a replica apart from its primary takes the primary's", "bbbb", true},
		{"a replica in its primary's shard is left alone", "aaaa", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "nodes.conf")
			text := primary + "\n" + fmt.Sprintf(replica, tc.replicaShard) + "\n" + other + "\n" + vars + "\n"
			require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
			changed, err := alignShardIDs(path)
			require.NoError(t, err)
			assert.Equal(t, tc.changed, changed)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			want := text
			if tc.changed {
				want = primary + "\n" + repaired + "\n" + other + "\n" + vars + "\n"
			}
			assert.Equal(t, want, string(b))
		})
	}
}
