// Package ids parses, formats and mints EchoMQ branded ids.
//
// A branded id is a 3-byte namespace (JOB, MSG, EVT or SUB) followed by 16
// lowercase hexadecimal digits of a 64-bit snowflake whose top bit is 0:
//
//	JOB0018f2a4c1e00001
//
// The snowflake holds, high to low, milliseconds since the EMQ epoch
// (2024-01-01T00:00:00Z) in bits 62–22, a node in bits 21–12 and a sequence in
// bits 11–0. Fixed-width lowercase hex makes byte order mint order.
//
// The module and Go clients share this package, so an id a client mints is
// exactly an id the module accepts.
package ids

import (
	"cmp"
	"encoding/binary"
	"math"
	"strconv"
)

// Namespace is the 3-byte brand at the front of an id.
type Namespace string

// The namespaces a branded id may carry.
const (
	Job Namespace = "JOB"
	Msg Namespace = "MSG"
	Evt Namespace = "EVT"
	Sub Namespace = "SUB"
)

// Len is the length of a branded id in bytes.
const Len = 19

// EpochMs is the EMQ epoch, 2024-01-01T00:00:00Z, in Unix milliseconds.
const EpochMs = 1704067200000

// Snowflake field widths and limits.
const (
	seqBits  = 12
	nodeBits = 10
	// MaxNode is the largest node number a snowflake can carry.
	MaxNode = 1<<nodeBits - 1
	// MaxSeq is the largest sequence within one millisecond and node.
	MaxSeq = 1<<seqBits - 1
	// MaxMs is the largest millisecond offset from the epoch (41 bits).
	MaxMs = 1<<41 - 1
)

// ID is a branded id: a namespace and its snowflake.
type ID struct {
	NS    Namespace
	Value uint64
}

// Parse reads b as an id of namespace ns. It reports false for anything that
// is not exactly such an id: wrong length, another namespace, uppercase or
// non-hex digits, or the top bit set.
func Parse(ns Namespace, b []byte) (ID, bool) {
	if len(b) != Len || len(ns) != 3 || b[0] != ns[0] || b[1] != ns[1] || b[2] != ns[2] {
		return ID{}, false
	}
	v, ok := parseHex((*[16]byte)(b[3:]))
	if !ok || v>>63 != 0 {
		return ID{}, false
	}
	return ID{NS: ns, Value: v}, true
}

// parseHex reads 16 lowercase hex digits, two at a time.
func parseHex(b *[16]byte) (uint64, bool) {
	var v uint64
	bad := byte(0)
	for i := 0; i < 16; i += 2 {
		hi, lo := hexValue[b[i]], hexValue[b[i+1]]
		bad |= hi | lo
		v = v<<8 | uint64(hi)<<4 | uint64(lo)
	}
	return v, bad&notHex == 0
}

// Valid reports whether b is exactly an id of namespace ns, as Parse
// decides — its length, the namespace, 16 lowercase hex digits, the top
// bit clear (the first digit 0 … 7) — without reading its value: half
// Parse's cost, for a caller that only asks.
func Valid(ns Namespace, b []byte) bool {
	if len(b) != Len || len(ns) != 3 || b[0] != ns[0] || b[1] != ns[1] || b[2] != ns[2] || b[3] > '7' {
		return false
	}
	return hexDigits8(binary.LittleEndian.Uint64(b[3:])) && hexDigits8(binary.LittleEndian.Uint64(b[11:]))
}

// hexDigits8 reports whether each byte of x is a lowercase hex digit, the
// eight at once, each a lane of x: a byte is a digit or a letter a … f
// when adding to it sets its top bit for the range's first byte and not
// for the byte past its last (no lane carries into the next, as none has
// its top bit set: a byte that has is no digit).
func hexDigits8(x uint64) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	digit := (x + (0x80-'0')*ones) &^ (x + (0x80-'9'-1)*ones)
	letter := (x + (0x80-'a')*ones) &^ (x + (0x80-'f'-1)*ones)
	return x&tops == 0 && (digit|letter)&tops == tops
}

// notHex marks the bytes that are not lowercase hex digits in hexValue.
const notHex = 0x80

// hexValue maps a lowercase hex digit to its value and anything else to notHex.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = notHex
	}
	for i, c := range []byte(hexDigits) {
		t[c] = byte(i)
	}
	return t
}()

// New returns the id of namespace ns for the snowflake fields ms (since the
// EMQ epoch), node and seq. It reports false when a field is out of range.
func New(ns Namespace, ms uint64, node, seq uint32) (ID, bool) {
	if ms > MaxMs || node > MaxNode || seq > MaxSeq {
		return ID{}, false
	}
	return ID{NS: ns, Value: ms<<(nodeBits+seqBits) | uint64(node)<<seqBits | uint64(seq)}, true
}

const hexDigits = "0123456789abcdef"

// Append appends the id's 19 bytes to dst.
func (id ID) Append(dst []byte) []byte {
	dst = append(dst, id.NS...)
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[id.Value>>uint(shift)&0xf])
	}
	return dst
}

// String returns the id's 19-byte text.
func (id ID) String() string {
	var buf [Len]byte
	return string(id.Append(buf[:0]))
}

// Ms returns the id's milliseconds since the EMQ epoch.
func (id ID) Ms() uint64 { return id.Value >> (nodeBits + seqBits) }

// Node returns the id's node number.
func (id ID) Node() uint32 { return uint32(id.Value>>seqBits) & MaxNode }

// Seq returns the id's sequence within its millisecond and node.
func (id ID) Seq() uint32 { return uint32(id.Value) & MaxSeq }

// UnixMs returns the wall-clock time the id was minted at, in Unix ms.
func (id ID) UnixMs() uint64 { return EpochMs + id.Ms() }

// StreamID returns the stream ID an entry appended under this id gets:
// <EpochMs + ms>-<node and sequence>. The mapping preserves order.
func (id ID) StreamID() StreamID {
	return StreamID{Ms: EpochMs + id.Value>>(nodeBits+seqBits), Seq: id.Value & (1<<(nodeBits+seqBits) - 1)}
}

// StreamID is a stream entry ID, <ms>-<seq>.
type StreamID struct {
	Ms, Seq uint64
}

// Less reports whether s sorts before t.
func (s StreamID) Less(t StreamID) bool {
	return s.Ms < t.Ms || (s.Ms == t.Ms && s.Seq < t.Seq)
}

// Compare returns -1, 0 or +1 as s sorts before t, is t, or sorts after
// it (slices.SortFunc's order, Less's).
func (s StreamID) Compare(t StreamID) int {
	return cmp.Or(cmp.Compare(s.Ms, t.Ms), cmp.Compare(s.Seq, t.Seq))
}

// Append appends the ID's text, <ms>-<seq>, to dst.
func (s StreamID) Append(dst []byte) []byte {
	dst = strconv.AppendUint(dst, s.Ms, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, s.Seq, 10)
}

// String returns the ID's text, <ms>-<seq>.
func (s StreamID) String() string {
	var buf [41]byte
	return string(s.Append(buf[:0]))
}

// ParseStreamID reads a full stream ID as the server writes one:
// <ms>-<seq>, each the decimal text of a 64-bit unsigned integer with no
// sign and no leading zero, so that an accepted text is the ID's own.
func ParseStreamID[T string | []byte](text T) (StreamID, bool) {
	for i := 0; i < len(text); i++ {
		if text[i] != '-' {
			continue
		}
		ms, msOK := parseUint64(text[:i])
		seq, seqOK := parseUint64(text[i+1:])
		return StreamID{Ms: ms, Seq: seq}, msOK && seqOK
	}
	return StreamID{}, false
}

// parseUint64 reads b as the canonical decimal text of a uint64.
func parseUint64[T string | []byte](b T) (uint64, bool) {
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
