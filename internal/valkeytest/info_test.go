package valkeytest

import (
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusNumber(t *testing.T) {
	path := t.TempDir() + "/status"
	require.NoError(t, os.WriteFile(path, []byte("Name:\tvalkey-server\nVmRSS:\t   10240 kB\nvoluntary_ctxt_switches:\t42\nnonvoluntary_ctxt_switches:\t7\n"), 0o644))
	tests := []struct {
		field   string
		want    int64
		wantErr string
	}{
		{"VmRSS", 10240, ""},                // the number, its unit left
		{"voluntary_ctxt_switches", 42, ""}, // the field whole, not a suffix of another's
		{"nonvoluntary_ctxt_switches", 7, ""},
		{"Threads", 0, "no Threads in"},
		{"Name", 0, "invalid syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			got, err := StatusNumber(path, tt.field)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("a file that is gone (a thread that ended) is a path error", func(t *testing.T) {
		_, err := StatusNumber(t.TempDir()+"/gone/status", "VmRSS")
		var unread *fs.PathError
		assert.ErrorAs(t, err, &unread)
	})
}
