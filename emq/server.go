package emq

import (
	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
)

// KeyType is what a key holds, as far as the verbs care.
type KeyType uint8

// The key types a verb distinguishes.
const (
	Empty KeyType = iota // no such key
	String
	Hash
	ZSet
	Stream
	Other // a list, a set or a module type
)

// Value is a string the server read for the call: a hash field's value.
// Its layout is C's emq_value (host/layout.go).
type Value struct {
	Bytes []byte // in place, valid until the call ends
	Ref   Ref    // names the same bytes in writes and replies
	Found bool   // false: no such field; Bytes and Ref are zero
}

// Member is a sorted-set member the server read for the call. Its layout is
// C's emq_member.
type Member struct {
	Bytes []byte // in place, valid until the call ends
	Ref   Ref    // names the same bytes in writes and replies
	Score float64
}

// Row is a sorted-set member and its job row, opened with the member's
// read (Server.ZRangeRows). Its layout is C's emq_row.
type Row struct {
	Member
	Key    int     // the row's key number, or Denied
	Values []Value // the fields read, one per field asked, as HashGet reads them
}

// Server is one command's view of the server it runs in: it opens keys,
// reads them and applies a plan. The call's declared keys are its
// arguments 2 … 1+numkeys, numbered from 0; keys a verb derives (the job
// rows a claim pops) are numbered after them as they are opened.
type Server interface {
	// Open opens the call's first n keys for writing (a read-only verb's
	// for reading) and learns their types; with values, it also reads the
	// bytes of those that hold strings. When settingsOf names a queue (nil:
	// none) it looks, in the same step, for the queue's settings keys
	// (SettingsKeys): a queue without a config pays one lookup more, and
	// one with settings no further step to open them.
	Open(n int, values bool, settingsOf []byte) SettingsKeys
	// OpenDerived opens the key named by scratch ref name of p, after
	// checking that the caller's ACL key permissions allow the verb's
	// access to it, and returns its number; when it holds a hash, it reads
	// fields (refs of p) of it in the same step, as HashGet does — values
	// holds one per field, zero for another type, valid as HashGet's. ok
	// is false, with nothing opened, when the caller may not touch it.
	OpenDerived(p *Plan, name Ref, access Access, fields []Ref) (k int, values []Value, ok bool)
	// Type returns the type of key k, as found when it was opened.
	Type(k int) KeyType
	// Value returns the bytes of string key k (nil for another type), read
	// by Open with values or now; valid until the call ends.
	Value(k int) []byte
	// Moving reports whether key k may be on another node: the server is a
	// cluster node and k's slot is being migrated to or imported from
	// another. It asks the cluster, so a verb asks only of a key it found
	// empty where its queue says it should be (elsewhere).
	Moving(k int) bool
	// Routed reports whether the server routed the call as a command: on a
	// cluster node it ran only with its declared keys all here (mid-
	// migration, a command whose keys the move split is refused TRYAGAIN).
	// A waiting client's wake-up and a queue timer's sweep run with no
	// such check: a declared key they find empty may have moved.
	Routed() bool
	// Woken reports whether the call is a waiting client's wake-up, which
	// claims what pending holds and sweeps nothing: while clients wait,
	// their queue's timer sweeps for them.
	Woken() bool
	// Wanted is, for a queue timer's sweep, the jobs the queue's waiting
	// clients want — their counts summed; 0 for any other call. The sweep
	// moves no more (turn.serving): however much came due at once, waking
	// workers costs the server about what it hands them.
	Wanted() int
	// ExpireAt returns key k's absolute expiry (Unix ms), or -1 for none;
	// a derived string's was read when it was opened.
	ExpireAt(k int) int64
	// HashGet reads the fields of hash key k (refs of p); the values are
	// valid until the call ends, the slice until the next HashGet.
	HashGet(p *Plan, k int, fields []Ref) []Value
	// HashFields reads every field of hash key k (none for another type)
	// with its value, alternating, in one pass: cheaper than HashGet for a
	// small hash whose fields are mostly absent. They are copies, whose Ref
	// is NoRef, valid until the next HashFields or Open.
	HashFields(k int) []Value
	// ZRange reads at most limit members of sorted set key k whose score is
	// at most max (below max, with exclusive), lowest first, after the
	// first offset of them; valid until the call ends, the slice until the
	// next ZRange.
	ZRange(k int, max float64, exclusive bool, offset, limit int) []Member
	// ZRangeRows reads members as ZRange does and, in the same step, opens
	// each one's job row — named by scratch ref prefix of p (the queue's
	// emq:{<queue>}:job:) followed by the member — as OpenDerived opens a
	// derived key for AccessReadWrite, reading fields of it; a row the call
	// opened before its first ZRangeRows keeps its number (no second
	// handle on a key may outlive a delete made through the first: the
	// rows a call deletes, a settlement's, are opened before it sweeps). A
	// row the caller may not touch is Denied: nothing opened, read or
	// logged, and the verb that acts on it refuses through OpenDerived,
	// which logs the denial. Valid as ZRange's members, the slice until the
	// next ZRangeRows.
	ZRangeRows(p *Plan, k int, max float64, exclusive bool, limit int, prefix Ref, fields []Ref) []Row
	// ZScore reads member's score in sorted set key k; found is false when
	// the set does not hold it (or k is not a sorted set).
	ZScore(k int, member []byte) (score float64, found bool)
	// StreamTop returns the last generated ID of stream key k (0-0 if empty).
	StreamTop(k int) ids.StreamID
	// StreamEntry reads entry id of stream key k: its fields and values in
	// stored order, alternating. found is false when the stream holds no
	// such entry (never added, or deleted). The values are valid until the
	// call ends, the slice until the next StreamEntry.
	StreamEntry(k int, id ids.StreamID) (fields []Value, found bool)
	// PendingOwner reads who owns entry id in the pending list of consumer
	// group group (a ref of p) of stream key k: the consumer's name, valid
	// until the call ends, or pending false when the entry is not pending.
	// err is the server's own refusal when the key has no such group or
	// does not exist (NOGROUP), in the server's words.
	PendingOwner(p *Plan, k int, group Ref, id ids.StreamID) (owner []byte, pending bool, err error)
	// MayWait reports whether a blocking verb may keep the caller waiting
	// rather than reply nil: not inside MULTI/EXEC, a script, or for a
	// client that may not block.
	MayWait() bool
	// NowMs returns the server's clock in Unix milliseconds, read once when
	// the command started.
	NowMs() int64
	// OutOfMemory reports whether the server is over its maxmemory now —
	// where it refuses the deny-oom commands, EMQ.ENQUEUE among them.
	OutOfMemory() bool
	// Apply makes every write of p — its XAddAuto appends to the events
	// stream first, then the others in order — replicates them as the
	// built-ins they stand for, and replies p.Replies. Having written and
	// replied nothing, it returns ErrNotAboveTop when p's first write is an
	// XAdd whose ID is not above its stream's top, ErrEventsFull when the
	// events stream takes no entry — the checks only the write itself can
	// do — and ErrScriptMisreads when a script on a server that would
	// misread p's reply, an error element inside it, made the call. Any other failure is a bug it reports as an errors.Internal
	// refusal naming the writes made.
	Apply(p *Plan) error
}

// Access is what a verb does with a key it derives, which the caller's
// ACL key permissions must allow, as a script's server.call of the
// built-in it stands for would need: read it, write it, or both.
type Access uint8

// The accesses to a derived key.
const (
	AccessRead      Access = 1 << iota // its value is read
	AccessWrite                        // it is written: made, changed or deleted
	AccessReadWrite = AccessRead | AccessWrite
)

// The access verbs make to a queue's settings keys (SettingsKeys): the
// config is read (its own verbs declare it), the limiter read and
// written, the events stream appended to.
const (
	ConfigAccess  = AccessRead
	LimiterAccess = AccessReadWrite
	EventsAccess  = AccessWrite
)

// SettingsKeys is what Server.Open found of a queue's settings keys: its
// config, emq:{<queue>}:config, and those the config names — the limiter
// when it has rate_max, the events stream when it has events. Each is the
// number of the key, opened as a derived key (ACL-checked; a string's
// bytes and expiry read with it); NoKey when there is no config, or the
// config does not name the key; or Denied when the caller's ACL key
// permissions deny it: nothing opened, read or logged, and the verb that
// needs it refuses through OpenDerived, which logs the denial.
type SettingsKeys struct {
	Config, Limiter, Events int
	// Fields are the config's fields and values, as HashFields reads them.
	Fields []Value
}

// What SettingsKeys holds for a key besides its number.
const (
	NoKey  = -1 // none, or not looked for
	Denied = -2 // the caller may not touch it
)

// ErrNotAboveTop is Apply's refusal of a plan whose first append is not
// above its stream's top; nothing was written.
var ErrNotAboveTop = static(errors.Order, "the first entry is not above the stream top")

// ErrScriptMisreads is Apply's refusal of a plan whose reply holds an
// error element (a settlement, or a job of a batch, refused) when a
// script made the call on a server whose scripts misread one: Valkey
// 9.1's, where the script reads a wrong table or fails, and every script
// after it fails until a restart. Nothing was written.
var ErrScriptMisreads = static(errors.Internal, "a script on this server misreads a reply with an error inside it "+
	"(Valkey 9.1), and one of this call's settlements or jobs is refused: the call is refused whole, "+
	"nothing written; make it outside a script, or with no item refused")

// ErrEventsFull is Apply's refusal of a plan whose queue's events stream
// takes no more entries: its top is the last stream ID there is (written
// by hand). Nothing was written.
var ErrEventsFull = static(errors.Order, "the events stream's top is the last ID there is, or too near it for the call's entries: delete the stream, or turn events off")
