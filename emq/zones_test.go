package emq

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestZonesAreTheModulesOwn: a schedule's zone is the module's own copy of
// the zone database, never the host's — which may differ from host to host,
// and which a tick would read from disk in the server's main thread: with
// ZONEINFO holding a Europe/Berlin that is UTC, 02:00 in Berlin is still
// 01:00 UTC in December. It runs in a child process, as Go reads ZONEINFO
// once.
func TestZonesAreTheModulesOwn(t *testing.T) {
	if os.Getenv("EMQ_ZONES_CHILD") == "1" {
		loc, err := location([]byte("Europe/Berlin"))
		require.NoError(t, err)
		assert.Equal(t, 1, time.Date(2030, 12, 1, 2, 0, 0, 0, loc).UTC().Hour())
		return
	}
	dir := t.TempDir()
	utc := tzif("UTC")
	_, err := time.LoadLocationFromTZData("Europe/Berlin", utc)
	require.NoError(t, err, "the host's Berlin is a zone file Go reads")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "Europe"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Europe", "Berlin"), utc, 0o644))
	child := exec.Command(os.Args[0], "-test.run=^TestZonesAreTheModulesOwn$", "-test.count=1")
	child.Env = append(os.Environ(), "EMQ_ZONES_CHILD=1", "ZONEINFO="+dir)
	out, err := child.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// tzif is a zone file (TZif, version 1) of one zone: UTC's offset, named abbr.
func tzif(abbr string) []byte {
	b := append([]byte("TZif"), make([]byte, 16)...) // version 1, 15 bytes reserved
	for _, n := range []uint32{0, 0, 0, 0, 1, uint32(len(abbr) + 1)} {
		b = binary.BigEndian.AppendUint32(b, n) // isut, isstd, leap, time, type and char counts
	}
	b = append(b, 0, 0, 0, 0, 0, 0) // the one type: offset 0, not DST, its name at 0
	return append(append(b, abbr...), 0)
}
