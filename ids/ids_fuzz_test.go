package ids_test

import (
	"bytes"
	"cmp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
)

var namespaces = []ids.Namespace{ids.Job, ids.Msg, ids.Evt, ids.Sub}

// wellFormed is docs/ids.md's definition of an id of namespace ns, read with
// strconv rather than the package's own parser: 19 bytes, the namespace,
// 16 lowercase hex digits, bit 63 clear.
func wellFormed(ns ids.Namespace, b []byte) bool {
	if len(b) != ids.Len || string(b[:3]) != string(ns) {
		return false
	}
	digits := b[3:]
	if !bytes.Equal(digits, bytes.ToLower(digits)) {
		return false
	}
	v, err := strconv.ParseUint(string(digits), 16, 64)
	return err == nil && v>>63 == 0
}

// FuzzParse: Parse and Valid accept exactly docs/ids.md's ids, an accepted id prints
// back as its input, rebuilds from its fields, and belongs to one namespace.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		accepted := 0
		for _, ns := range namespaces {
			id, ok := ids.Parse(ns, b)
			require.Equal(t, wellFormed(ns, b), ok, "Parse(%s, %q) decides as docs/ids.md", ns, b)
			require.Equal(t, ok, ids.Valid(ns, b), "Valid(%s, %q) decides as Parse", ns, b)
			if !ok {
				require.Zero(t, id, "a refusal returns the zero id")
				continue
			}
			accepted++
			require.Equal(t, string(b), id.String(), "String(Parse(x)) == x")
			require.Equal(t, string(b), string(id.Append(nil)))
			require.Equal(t, ns, id.NS)
			rebuilt, ok := ids.New(ns, id.Ms(), id.Node(), id.Seq())
			require.True(t, ok, "an accepted id's fields are in range")
			require.Equal(t, id, rebuilt, "New(fields of id) == id")
			sid := id.StreamID()
			back, ok := ids.ParseStreamID(sid.String())
			require.True(t, ok)
			require.Equal(t, sid, back, "the stream ID round-trips through its text")
		}
		require.LessOrEqual(t, accepted, 1, "an id belongs to one namespace at most")
	})
}

// FuzzStreamIDOrder: snowflake order, byte order of the ids and order of
// their stream IDs are one order (docs/ids.md).
func FuzzStreamIDOrder(f *testing.F) {
	f.Fuzz(func(t *testing.T, a, b uint64) {
		x, y := ids.ID{NS: ids.Evt, Value: a &^ (1 << 63)}, ids.ID{NS: ids.Evt, Value: b &^ (1 << 63)}
		less := x.Value < y.Value
		require.Equal(t, less, x.String() < y.String(), "byte order is mint order")
		require.Equal(t, less, x.StreamID().Less(y.StreamID()), "stream ID order is mint order")
		require.Equal(t, cmp.Compare(x.Value, y.Value), x.StreamID().Compare(y.StreamID()), "Compare is Less's order")
		require.Equal(t, x.Value == y.Value, x.StreamID() == y.StreamID(), "the mapping is one to one")
		require.Equal(t, ids.EpochMs+x.Ms(), x.StreamID().Ms, "the stream ID's ms is wall-clock time")
	})
}

// FuzzParseStreamID: no input panics, and an accepted text is the stream
// ID's own (canonical), read alike from bytes.
func FuzzParseStreamID(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) {
		sid, ok := ids.ParseStreamID(text)
		if !ok {
			return
		}
		require.Equal(t, text, sid.String())
		back, ok := ids.ParseStreamID([]byte(text))
		require.True(t, ok)
		require.Equal(t, sid, back)
	})
}
