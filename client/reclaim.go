package client

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/valkey-io/valkey-go"
)

// reclaimer takes over a consumer group's entries that stayed delivered
// and unacknowledged past idle (XAUTOCLAIM), for consumer name: a pass over
// the group's pending entries, then none until idle/2 after it ended. An
// idle of 0 or less takes nothing over.
type reclaimer struct {
	key, group, name string
	idle             time.Duration
	cursor           string    // XAUTOCLAIM's next start
	passed           time.Time // when the last full pass ended
}

func newReclaimer(key, group, name string, idle time.Duration) reclaimer {
	return reclaimer{key: key, group: group, name: name, idle: idle, cursor: "0-0"}
}

// take returns the next count entries idle past idle, when it is time to
// look, or none. Those deleted from the stream while pending — XAUTOCLAIM
// drops them from the group and lists their IDs — come without fields, in
// ID order among the others, as XREADGROUP gives a consumer its own such
// entries.
func (r *reclaimer) take(ctx context.Context, vk valkey.Client, count int64) ([]valkey.XRangeEntry, error) {
	if r.idle <= 0 || time.Since(r.passed) < r.idle/2 {
		return nil, nil
	}
	reply, err := vk.Do(ctx, vk.B().Xautoclaim().Key(r.key).Group(r.group).Consumer(r.name).
		MinIdleTime(strconv.FormatInt(r.idle.Milliseconds(), 10)).Start(r.cursor).
		Count(count).Build()).ToArray()
	if err != nil {
		return nil, refusal(err)
	}
	if len(reply) < 3 {
		return nil, fmt.Errorf("client: XAUTOCLAIM reply %v", reply)
	}
	if r.cursor, err = reply[0].ToString(); err != nil {
		return nil, err
	}
	if r.cursor == "0-0" { // a full pass made
		r.passed = time.Now()
	}
	entries, err := reply[1].AsXRange()
	if err != nil {
		return nil, err
	}
	deleted, err := reply[2].AsStrSlice()
	if err != nil {
		return nil, err
	}
	if len(deleted) == 0 {
		return entries, nil
	}
	for _, id := range deleted {
		entries = append(entries, valkey.XRangeEntry{ID: id})
	}
	slices.SortFunc(entries, func(a, b valkey.XRangeEntry) int {
		x, _ := ids.ParseStreamID(a.ID) // the server's
		y, _ := ids.ParseStreamID(b.ID)
		return x.Compare(y)
	})
	return entries, nil
}

// ackWait is how long a consumer's XACK may take before it is given up.
const ackWait = time.Second

// ack acknowledges the entries of stream key in group, in one XACK — not
// cancelled with ctx, as the entries were handled, but given up after
// ackWait, so that a server that does not answer holds a consumer's end
// no longer than that, not until the connection gives up (10 s). An XACK
// a broken connection failed is sent again, within ackWait, up to
// ackTries times: valkey-go, which sends a read again over a new
// connection, does not send a write again, and XACK, which writes, may
// be sent twice. Entries it did not acknowledge are delivered again.
func ack(ctx context.Context, vk valkey.Client, key, group string, entries []string) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackWait)
	defer cancel()
	var err error
	for range ackTries {
		err = vk.Do(actx, vk.B().Xack().Key(key).Group(group).Id(entries...).Build()).Error()
		if _, refused := valkey.IsValkeyErr(err); err == nil || refused || actx.Err() != nil {
			break
		}
	}
	return err
}

// ackTries is how many times ack sends an XACK that a broken connection
// failed: the client's connections may each fail one command after a cut.
const ackTries = 3
