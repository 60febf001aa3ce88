package client

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// Field is one field/value pair of a stream entry. Both are binary-safe.
type Field struct {
	Name, Value string
}

// Entry is one stream entry: its EVT id, whose stream ID it is appended
// under, and its fields (at least one; none empty or named id, which the
// verb writes).
type Entry struct {
	ID     ids.ID
	Fields []Field
}

// Envelope is what EMQ.PUBLISH appends to a topic's msgs stream.
type Envelope struct {
	ID      ids.ID  // the entry's EVT id
	Msg     ids.ID  // the message's MSG id, the field msg
	Payload []byte  // the field payload
	Fields  []Field // more fields; none empty or named id, msg or payload
}

// Enqueue admits job id with payload to queue: it writes the job row
// (state pending, attempts 0, payload) and adds id to the pending set. It
// reports false, writing nothing, when the job row already exists.
func (c *Client) Enqueue(ctx context.Context, queue string, id ids.ID, payload []byte) (admitted bool, err error) {
	return runVerb(ctx, c, c.enqueueCall(queue, id, payload), admittedReply)
}

// enqueueCall is EMQ.ENQUEUE of job id with payload to queue.
func (c *Client) enqueueCall(queue string, id ids.ID, payload []byte) verbCall {
	text := id.String()
	return verbCall{verb: emq.Enqueue, cp: CapEnqueue, keys: []string{keys.Job(queue, text), keys.Pending(queue)},
		args: []string{text, valkey.BinaryString(payload)}, script: c.admit}
}

func admittedReply(r valkey.ValkeyResult) (bool, error) {
	n, err := r.AsInt64()
	return n == 1, refusal(err)
}

// Append appends entries to stream of topic, in order, and returns their
// stream IDs. Each entry's stream ID is its id's ([ids.ID.StreamID]); they
// must increase and be above the stream's top. Natively the batch lands
// whole or not at all; on a fallback node entries are added one XADD at a
// time and a refusal at entry i leaves entries before i appended: their IDs
// are returned with the error.
func (c *Client) Append(ctx context.Context, topic, stream string, entries []Entry) ([]ids.StreamID, error) {
	return c.appendBatch(ctx, emq.Append, CapAppend, keys.Stream(topic, stream), entries)
}

// Publish appends env to the msgs stream of topic, the durable publish of
// one message, and returns its stream ID.
func (c *Client) Publish(ctx context.Context, topic string, env Envelope) (ids.StreamID, error) {
	entry := Entry{ID: env.ID, Fields: append([]Field{
		{"msg", env.Msg.String()}, {"payload", valkey.BinaryString(env.Payload)},
	}, env.Fields...)}
	got, err := c.appendBatch(ctx, emq.Publish, CapPublish, keys.Stream(topic, "msgs"), []Entry{entry})
	if err != nil {
		return ids.StreamID{}, err
	}
	return got[0], nil
}

// appendBatch checks a batch and sends it to key: verb natively, else one
// XADD per entry.
func (c *Client) appendBatch(ctx context.Context, verb *emq.Verb, cp Cap, key string, entries []Entry) ([]ids.StreamID, error) {
	if len(entries) == 0 { // no command can carry it: n=0 is the module's refusal
		return nil, emqerrors.New(emqerrors.Shape, "n must be a positive integer")
	}
	args := []string{strconv.Itoa(len(entries))}
	for _, e := range entries {
		args = append(args, e.ID.String(), strconv.Itoa(len(e.Fields)))
		for _, f := range e.Fields {
			args = append(args, f.Name, f.Value)
		}
	}
	if err := check(verb, append([]string{"1", key}, args...)...); err != nil {
		return nil, err
	}
	if err := checkIncreasing(entries); err != nil {
		return nil, err
	}
	cmd := c.vk.B().Arbitrary(verb.Name, "1").Keys(key).Args(args...).Build()
	return call(ctx, c, cp, cmd, streamIDsReply, func() ([]ids.StreamID, error) {
		return c.xaddEach(ctx, key, entries)
	})
}

func streamIDsReply(r valkey.ValkeyResult) ([]ids.StreamID, error) {
	texts, err := r.AsStrSlice()
	if err != nil {
		return nil, refusal(err)
	}
	out := make([]ids.StreamID, len(texts))
	for i, t := range texts {
		var ok bool
		if out[i], ok = ids.ParseStreamID(t); !ok {
			return nil, fmt.Errorf("client: reply %q is not a stream ID", t)
		}
	}
	return out, nil
}

// xaddEach is the fallback of a batch: XADD <key> <stream ID> id <EVT id>
// <fields…> per entry, stopping at the first that fails.
func (c *Client) xaddEach(ctx context.Context, key string, entries []Entry) ([]ids.StreamID, error) {
	out := make([]ids.StreamID, 0, len(entries))
	for i, e := range entries {
		sid := e.ID.StreamID()
		args := []string{sid.String(), "id", e.ID.String()}
		for _, f := range e.Fields {
			args = append(args, f.Name, f.Value)
		}
		err := c.vk.Do(ctx, c.vk.B().Arbitrary("XADD").Keys(key).Args(args...).Build()).Error()
		if verr, ok := valkey.IsValkeyErr(err); ok && isXAddOrder(verr) {
			return out, emqerrors.New(emqerrors.Order, "entry %d: %s is not above the stream top", i+1, sid)
		}
		if err != nil {
			return out, refusal(err)
		}
		out = append(out, sid)
	}
	return out, nil
}

// isXAddOrder reports whether XADD refused an ID not above the stream's top
// (valkey-go drops the reply's "ERR ").
func isXAddOrder(err *valkey.ValkeyError) bool {
	const text = "The ID specified in XADD is equal or smaller than the target stream top item"
	return err.Error() == text
}

// FailuresIncr counts one failure of message msg for subscriber sub on
// topic and sets the count's TTL to ttl rounded up to whole seconds, and
// returns the new count.
func (c *Client) FailuresIncr(ctx context.Context, topic string, sub, msg ids.ID, ttl time.Duration) (int64, error) {
	key := keys.Fail(topic, sub.String(), msg.String())
	ms := millis(ttl)
	if err := check(emq.FailuresIncr, "1", key, ms); err != nil {
		return 0, err
	}
	cmd := c.vk.B().Arbitrary("EMQ.FAILURES.INCR", "1").Keys(key).Args(ms).Build()
	return call(ctx, c, CapFailuresIncr, cmd, countReply, func() (int64, error) {
		return countReply(c.failures.Exec(ctx, c.vk, []string{key}, []string{ms}))
	})
}

// incrRefusals are INCR's errors (less the "ERR " valkey-go drops) for a stored value that cannot be
// counted, which only the fallback meets: the verb refuses the same values
// as EMQCOUNT, in the same words.
var incrRefusals = []string{"value is not an integer or out of range", "increment or decrement would overflow"}

// countReply reads the new count.
func countReply(r valkey.ValkeyResult) (int64, error) {
	n, err := r.AsInt64()
	if verr, ok := valkey.IsValkeyErr(err); ok {
		if msg := withoutScript(verr.Error()); slices.Contains(incrRefusals, msg) {
			return 0, &emqerrors.Refusal{Code: emqerrors.Count, Msg: msg}
		}
	}
	return n, refusal(err)
}
