package ids_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name  string
		ns    ids.Namespace
		in    string
		ok    bool
		value uint64
	}{
		{"a JOB id", ids.Job, "JOB0018f2a4c1e00001", true, 0x0018f2a4c1e00001},
		{"a MSG id", ids.Msg, "MSG0018f2a4c1e00001", true, 0x0018f2a4c1e00001},
		{"an EVT id", ids.Evt, "EVT0018f2a4c1e00001", true, 0x0018f2a4c1e00001},
		{"a SUB id", ids.Sub, "SUB0018f2a4c1e00001", true, 0x0018f2a4c1e00001},
		{"the smallest id", ids.Job, "JOB0000000000000000", true, 0},
		{"the largest id", ids.Job, "JOB7fffffffffffffff", true, 1<<63 - 1},
		{"every hex digit", ids.Job, "JOB0123456789abcdef", true, 0x0123456789abcdef},
		{"another namespace", ids.Job, "MSG0018f2a4c1e00001", false, 0},
		{"a lowercase namespace", ids.Job, "job0018f2a4c1e00001", false, 0},
		{"uppercase hex", ids.Job, "JOB0018F2A4C1E00001", false, 0},
		{"one uppercase digit", ids.Job, "JOB0018f2a4c1e0000A", false, 0},
		{"a non-hex digit", ids.Job, "JOB0018f2a4c1e0000g", false, 0},
		{"a space among the digits", ids.Job, "JOB0018f2a4c1e 0001", false, 0},
		{"a NUL among the digits", ids.Job, "JOB0018f2a4c1e\x000001", false, 0},
		{"bit 63 set", ids.Job, "JOB8000000000000000", false, 0},
		{"all bits set", ids.Job, "JOBffffffffffffffff", false, 0},
		{"18 bytes", ids.Job, "JOB0018f2a4c1e0000", false, 0},
		{"20 bytes", ids.Job, "JOB0018f2a4c1e000010", false, 0},
		{"only the namespace", ids.Job, "JOB", false, 0},
		{"nothing", ids.Job, "", false, 0},
		{"a sign before the digits", ids.Job, "JOB-018f2a4c1e00001", false, 0},
		{"a 0x prefix", ids.Job, "JOB0x18f2a4c1e00001", false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, ok := ids.Parse(c.ns, []byte(c.in))
			require.Equal(t, c.ok, ok)
			if c.ok {
				assert.Equal(t, ids.ID{NS: c.ns, Value: c.value}, id)
				assert.Equal(t, c.in, id.String(), "an id prints as it was read")
			}
		})
	}
}

// TestParseDecidesEveryByteOfEveryDigit: each of the 256 byte values in
// each of an id's 16 digit places, in ids whose other digits are every
// hex digit in turn, is accepted — by Parse and by Valid — exactly when
// docs/ids.md's definition accepts it, and read as its value.
func TestParseDecidesEveryByteOfEveryDigit(t *testing.T) {
	for _, base := range []string{"JOB0000000000000000", "JOB0123456789abcdef", "JOB7fffffffffffffff", "JOB0fedcba987654321"} {
		for place := 3; place < ids.Len; place++ {
			for c := range 256 {
				b := []byte(base)
				b[place] = byte(c)
				id, ok := ids.Parse(ids.Job, b)
				require.Equal(t, wellFormed(ids.Job, b), ok, "%q", b)
				require.Equal(t, ok, ids.Valid(ids.Job, b), "Valid %q", b)
				if ok {
					require.Equal(t, string(b), id.String(), "%q", b)
				}
			}
		}
	}
}

func TestNew(t *testing.T) {
	cases := []struct {
		name      string
		ms        uint64
		node, seq uint32
		ok        bool
		text      string
	}{
		{"the epoch itself", 0, 0, 0, true, "JOB0000000000000000"},
		{"one millisecond, sequence 1", 1, 0, 1, true, "JOB0000000000400001"},
		{"node 1", 0, 1, 0, true, "JOB0000000000001000"},
		{"every field at its largest", ids.MaxMs, ids.MaxNode, ids.MaxSeq, true, "JOB7fffffffffffffff"},
		{"milliseconds beyond 41 bits", ids.MaxMs + 1, 0, 0, false, ""},
		{"a node beyond 1023", 0, ids.MaxNode + 1, 0, false, ""},
		{"a sequence beyond 4095", 0, 0, ids.MaxSeq + 1, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, ok := ids.New(ids.Job, c.ms, c.node, c.seq)
			require.Equal(t, c.ok, ok)
			if !c.ok {
				return
			}
			assert.Equal(t, c.text, id.String())
			assert.Equal(t, c.ms, id.Ms())
			assert.Equal(t, c.node, id.Node())
			assert.Equal(t, c.seq, id.Seq())
			assert.Equal(t, ids.EpochMs+c.ms, id.UnixMs())
		})
	}
}

func TestAppendAddsTheIDToWhatIsThere(t *testing.T) {
	id, ok := ids.New(ids.Evt, 1, 2, 3)
	require.True(t, ok)
	assert.Equal(t, "k:"+id.String(), string(id.Append([]byte("k:"))))
	assert.Len(t, id.String(), ids.Len)
}

func TestStreamID(t *testing.T) {
	cases := []struct {
		id, want string
	}{
		{"EVT0000000000000000", "1704067200000-0"},
		{"EVT0000000000000001", "1704067200000-1"},
		{"EVT0000000000001001", "1704067200000-4097"},
		{"EVT00000000003fffff", "1704067200000-4194303"},
		{"EVT0000000000400000", "1704067200001-0"},
		{"EVT0018f2a4c1e00001", "1705741420295-2097153"},
		{"EVT7fffffffffffffff", "3903090455551-4194303"},
	}
	for _, c := range cases {
		t.Run(c.id+" is "+c.want, func(t *testing.T) {
			id, ok := ids.Parse(ids.Evt, []byte(c.id))
			require.True(t, ok)
			assert.Equal(t, c.want, id.StreamID().String())
			back, ok := ids.ParseStreamID(c.want)
			require.True(t, ok)
			assert.Equal(t, id.StreamID(), back)
		})
	}
}

func TestStreamIDKeepsMintOrder(t *testing.T) {
	// Neighbours across every field boundary, in mint order.
	values := []uint64{0, 1, 0xfff, 0x1000, 0x3fffff, 0x400000, 0x400001, 0x7fffff, 0x800000, 1<<63 - 2, 1<<63 - 1}
	for i := 1; i < len(values); i++ {
		a := ids.ID{NS: ids.Evt, Value: values[i-1]}.StreamID()
		b := ids.ID{NS: ids.Evt, Value: values[i]}.StreamID()
		assert.True(t, a.Less(b), "%s < %s", a, b)
		assert.False(t, b.Less(a), "%s < %s", b, a)
	}
}

func TestStreamIDLess(t *testing.T) {
	cases := []struct {
		name string
		a, b ids.StreamID
		less bool
	}{
		{"a smaller millisecond", ids.StreamID{Ms: 1, Seq: 9}, ids.StreamID{Ms: 2, Seq: 0}, true},
		{"a larger millisecond", ids.StreamID{Ms: 2, Seq: 0}, ids.StreamID{Ms: 1, Seq: 9}, false},
		{"the same millisecond, smaller sequence", ids.StreamID{Ms: 1, Seq: 1}, ids.StreamID{Ms: 1, Seq: 2}, true},
		{"the same millisecond, larger sequence", ids.StreamID{Ms: 1, Seq: 2}, ids.StreamID{Ms: 1, Seq: 1}, false},
		{"equal IDs", ids.StreamID{Ms: 1, Seq: 1}, ids.StreamID{Ms: 1, Seq: 1}, false},
		{"0-0 below 0-1", ids.StreamID{}, ids.StreamID{Seq: 1}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.less, c.a.Less(c.b))
		})
	}
}

func TestParseStreamID(t *testing.T) {
	cases := []struct {
		in   string
		ok   bool
		want ids.StreamID
	}{
		{"0-0", true, ids.StreamID{}},
		{"1704067200000-4097", true, ids.StreamID{Ms: 1704067200000, Seq: 4097}},
		{"18446744073709551615-18446744073709551615", true, ids.StreamID{Ms: 1<<64 - 1, Seq: 1<<64 - 1}},
		{"18446744073709551616-0", false, ids.StreamID{}},
		{"0-18446744073709551616", false, ids.StreamID{}},
		{"", false, ids.StreamID{}},
		{"1", false, ids.StreamID{}},
		{"1-", false, ids.StreamID{}},
		{"-1", false, ids.StreamID{}},
		{"1--2", false, ids.StreamID{}},
		{"1-2-3", false, ids.StreamID{}},
		{"+1-2", false, ids.StreamID{}},
		{" 1-2", false, ids.StreamID{}},
		{"1-2 ", false, ids.StreamID{}},
		{"a-1", false, ids.StreamID{}},
		{"1-b", false, ids.StreamID{}},
		{"1_0-2", false, ids.StreamID{}},
		{"99999999999999999999-0", false, ids.StreamID{}},
		{"00-1", false, ids.StreamID{}},
		{"1-01", false, ids.StreamID{}},
		{"1-+1", false, ids.StreamID{}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, ok := ids.ParseStreamID(c.in)
			require.Equal(t, c.ok, ok)
			bgot, bok := ids.ParseStreamID([]byte(c.in))
			require.Equal(t, c.ok, bok, "bytes and text read alike")
			if c.ok {
				assert.Equal(t, c.want, got)
				assert.Equal(t, c.want, bgot)
				assert.Equal(t, c.in, got.String())
			}
		})
	}
}
