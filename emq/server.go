package emq

import "github.com/echomq/emq/ids"

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

// Server is one command's view of the server it runs in. The keys of a call
// are its arguments 2 … 1+numkeys, addressed by their 0-based position.
type Server interface {
	// Open opens the call's first n keys for writing and learns their types;
	// with values, it also reads the bytes of those that hold strings.
	Open(n int, values bool)
	// Type returns the type of key k, as found by Open.
	Type(k int) KeyType
	// Value returns the bytes of string key k, read by Open with values;
	// valid until the call ends.
	Value(k int) []byte
	// StreamTop returns the last generated ID of stream key k (0-0 if empty).
	StreamTop(k int) ids.StreamID
	// NowMs returns the server's clock in Unix milliseconds.
	NowMs() int64
	// Apply makes every write of p, in order, replicates them as the
	// built-ins they stand for, and replies p.Reply. It returns false, having
	// written and replied nothing, when p's first write is an XAdd whose ID is
	// not above its stream's top: the one check only the write itself can do.
	Apply(p *Plan) bool
	// ReplyArray starts an array reply of n elements.
	ReplyArray(n int)
	// ReplyString adds a bulk string to the reply.
	ReplyString(s string)
}

// Call is one invocation of a verb.
type Call struct {
	Args   [][]byte // the command line, Args[0] being the verb's name
	Server Server
	Plan   *Plan // an empty plan for the verb to fill; reused across calls
	Limits Limits
}

// Limits are the module's configured bounds on a call.
type Limits struct {
	AppendMaxEntries int // entries per EMQ.APPEND call; 0 means no bound
}

// Verb is a verb's implementation: it replies through c.Server, or returns a
// refusal for the caller to reply, having written nothing.
type Verb func(c Call) error
