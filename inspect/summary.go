package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// Summary is what an operator sees of a queue at a glance.
type Summary struct {
	Queue string
	// Counts are the sizes of the queue's sets, by state.
	Counts map[State]int64
	// Paused is the config's paused flag, any value of it as the verbs
	// read it: claims deliver nothing.
	Paused bool
	// Limit is the config's rate limit as the verbs apply it; its Max is
	// 0 when none is set, or the one set is not one EMQ.LIMIT could set.
	Limit Limit
	// Events is the cap of the queue's events stream while its lifecycle
	// events are on (the config's events field); 0 when they are off.
	Events int64
	// Repeats is how many repeat schedules the queue has (the size of its
	// repeats set), finished ones included.
	Repeats int64
	// Due is how many delayed jobs are due by the inspector's clock, and
	// Expired how many active jobs' leases have passed: work a claim (or
	// the queue's timer, for a queue with a waiting worker) moves on — to
	// pending, or a stall's retry — that Counts still show where it was.
	// Numbers that stay up say no worker claims.
	Due, Expired int64
	// Head is the JOB id at the head of pending — the next to be claimed —
	// or "" when nothing is pending; HeadAge is how long ago it was minted.
	// With one priority in use the head is the oldest pending job; with
	// several it is the oldest of the most urgent priority.
	Head    string
	HeadAge time.Duration
	// Err is why the queue could not be read: the server refused a read
	// of one of its keys (WRONGTYPE for a key of another type under its
	// layout, say). Its counts and settings are then unknown; the other
	// queues are read all the same.
	Err error
}

// Limit is a queue's rate limit: at most Max jobs delivered per Window.
type Limit struct {
	Max    int64
	Window time.Duration
}

// String is "max/window", or "-" when there is no limit.
func (l Limit) String() string {
	if l.Max == 0 {
		return "-"
	}
	return strconv.FormatInt(l.Max, 10) + "/" + l.Window.String()
}

// Total is the number of jobs in the queue's sets.
func (s Summary) Total() int64 {
	var n int64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Blank reports whether the queue holds no job, has no setting (not
// paused, no rate limit, events off) and no schedule: the server knows
// nothing of it, as of a mistyped name.
func (s Summary) Blank() bool {
	return s.Total() == 0 && !s.Paused && s.Limit.Max == 0 && s.Events == 0 && s.Repeats == 0
}

// perQueue is how many commands summarize one queue: a ZCARD per state,
// the config's fields, the head of pending, the ZCARD of its schedules,
// the ZCOUNTs of delayed jobs due and of leases passed.
const perQueue = 4 + 3 + 2

// summaryBatch bounds the commands of one pipeline.
const summaryBatch = 256

// Summaries summarizes each queue of names, in order: a fixed number of
// O(1) or O(log N) commands per queue (ZCARD of each set and of the
// schedules, HMGET of the config, ZRANGE of the head of pending, ZCOUNT
// of the delayed jobs due and the leases passed), pipelined. A queue whose
// read the server refused has its Summary.Err; the error is a read that
// got no answer, or a reply about the server's own state (unreadable).
func (in *Inspector) Summaries(ctx context.Context, names []string) ([]Summary, error) {
	out := make([]Summary, 0, len(names))
	now := in.opts.Now()
	// a delayed job is due at its time; a lease passes after its deadline
	due, passed := strconv.FormatInt(now.UnixMilli(), 10), "("+strconv.FormatInt(now.UnixMilli(), 10)
	for start := 0; start < len(names); start += summaryBatch {
		batch := names[start:min(start+summaryBatch, len(names))]
		cmds := make(valkey.Commands, 0, perQueue*len(batch))
		for _, q := range batch {
			for _, st := range States {
				cmds = append(cmds, in.vk.B().Zcard().Key(keys.Set(q, string(st))).Build())
			}
			cmds = append(cmds, in.vk.B().Hmget().Key(keys.Set(q, keys.Config)).Field(configFields...).Build(),
				in.vk.B().Zrange().Key(keys.Pending(q)).Min("0").Max("0").Build(),
				in.vk.B().Zcard().Key(keys.Set(q, keys.Repeats)).Build(),
				in.vk.B().Zcount().Key(keys.Set(q, keys.DelayedSet)).Min("-inf").Max(due).Build(),
				in.vk.B().Zcount().Key(keys.Set(q, keys.ActiveSet)).Min("-inf").Max(passed).Build())
		}
		replies := in.vk.DoMulti(ctx, cmds...)
		for i, q := range batch {
			s, err := summaryOf(q, replies[i*perQueue:(i+1)*perQueue], now)
			if unreadable(err) {
				s, err = Summary{Queue: q, Err: err}, nil
			}
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// serverStates are the codes of the error replies a server gives about
// its own state, not the key it was asked of: a script or a module's call
// running (BUSY), its data loading (LOADING), a replica without its
// primary (MASTERDOWN), a cluster down (CLUSTERDOWN), a slot moving
// (TRYAGAIN).
var serverStates = []string{"BUSY", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"}

// unreadable reports whether err is the server's refusal of a read of a
// queue's own keys (WRONGTYPE, NOPERM …), which leaves that queue unread
// and the others read. A reply about the server's state says nothing of
// the queue: as a read that got no answer, it fails the whole read.
func unreadable(err error) bool {
	var reply *valkey.ValkeyError
	if !Refused(err) || !errors.As(err, &reply) {
		return false
	}
	code, _, _ := strings.Cut(reply.Error(), " ")
	return !slices.Contains(serverStates, code)
}

// Summary summarizes one queue; a queue that could not be read is its
// error.
func (in *Inspector) Summary(ctx context.Context, queue string) (Summary, error) {
	s, err := in.Summaries(ctx, []string{queue})
	if err != nil {
		return Summary{}, err
	}
	return s[0], s[0].Err
}

// configFields are the config's fields a summary reads.
var configFields = []string{"paused", "rate_max", "rate_ms", "events"}

// summaryOf reads one queue's replies, in the order Summaries sent them.
func summaryOf(q string, r []valkey.ValkeyResult, now time.Time) (Summary, error) {
	s := Summary{Queue: q, Counts: make(map[State]int64, len(States))}
	for i, st := range States {
		n, err := r[i].AsInt64()
		if err != nil {
			return s, fmt.Errorf("queue %s: ZCARD %s: %w", q, st, err)
		}
		s.Counts[st] = n
	}
	config, err := r[4].ToArray()
	if err != nil {
		return s, fmt.Errorf("queue %s: config: %w", q, err)
	}
	var c emq.Config // read as the verbs read it
	for i, field := range configFields {
		if v, err := config[i].ToString(); err == nil {
			c.Field([]byte(field), []byte(v))
		}
	}
	s.Paused, s.Events = c.Paused, c.EventsCap
	if max, ms := c.Limit(); max > 0 {
		s.Limit = Limit{Max: max, Window: time.Duration(ms) * time.Millisecond}
	}
	head, err := r[5].AsStrSlice()
	if err != nil {
		return s, fmt.Errorf("queue %s: head of pending: %w", q, err)
	}
	if len(head) > 0 {
		s.Head, s.HeadAge = head[0], ageOf(head[0], now)
	}
	if s.Repeats, err = r[6].AsInt64(); err != nil {
		return s, fmt.Errorf("queue %s: ZCARD repeats: %w", q, err)
	}
	if s.Due, err = r[7].AsInt64(); err != nil {
		return s, fmt.Errorf("queue %s: delayed jobs due: %w", q, err)
	}
	if s.Expired, err = r[8].AsInt64(); err != nil {
		return s, fmt.Errorf("queue %s: leases passed: %w", q, err)
	}
	return s, nil
}

// Overview summarizes every queue found ([Inspector.Queues]), in name
// order. With a primary of a cluster that does not answer, it summarizes
// the queues of those that do and returns the *UnreachableError too.
func (in *Inspector) Overview(ctx context.Context) ([]Summary, error) {
	names, lost := in.Queues(ctx)
	if lost != nil && !Partial(lost) {
		return nil, lost
	}
	sums, err := in.Summaries(ctx, names)
	if err != nil {
		return nil, err
	}
	return sums, lost
}
