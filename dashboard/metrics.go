package dashboard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/echomq/emq/inspect"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector is a prometheus.Collector of every queue's sizes and INFO
// emq. A scrape costs a fixed number of O(1) commands per queue (package
// inspect's Summaries) and one INFO per primary; the list of queues comes
// from the inspector's cache, refreshed by a background scan, so no scrape
// waits for a SCAN after the first.
//
//	emq_queues                                    queues found
//	emq_queue_jobs{queue,state}                   jobs per state (ZCARD)
//	emq_queue_paused{queue}                       1 when paused
//	emq_queue_rate_limit{queue}                   jobs per window, when limited
//	emq_queue_rate_window_seconds{queue}          the limit's window
//	emq_queue_delayed_due{queue}                  delayed jobs due, not yet moved to pending
//	emq_queue_active_expired{queue}               active jobs whose lease passed, not yet requeued
//	emq_queue_oldest_pending_age_seconds{queue}   age of the head of pending
//	emq_queue_schedules{queue}                    its repeat schedules
//	emq_queue_unreadable{queue}                   1 for a queue the server refused to read
//	emq_node_up{node}                             1 for a primary read, 0 for one not read
//	emq_calls_total{node,verb}                    calls of each verb
//	emq_calls_ok_total{node,verb}                 its calls that succeeded
//	emq_calls_refused_total{node,verb}            its calls refused
//	emq_refusals_total{node,code}                 refused calls by code
//	emq_<counter>_total{node}                     each other INFO emq counter
//	emq_<level>{node}                             each INFO emq level (blocked workers, Go heap)
//
// A scrape that cannot read the server fails (HTTP 500), so Prometheus
// marks the target down rather than keep stale numbers. A cluster's
// primary that does not answer, while others do, fails no scrape: it is
// emq_node_up 0, and its queues and counters have no series.
//
// A queue's label is its name ([queueLabel]: a name that is not UTF-8 has
// its stray bytes escaped). Two names can share a label — one not UTF-8
// and one spelling its escape out — and then only the first, in byte
// order, has series: emq_queues still counts both.
type Collector struct {
	in                                              *inspect.Inspector
	timeout                                         time.Duration
	base                                            context.Context // the scrape's request (MetricsHandler); nil: none
	queues, jobs, paused, limit, windowSecs, oldest *prometheus.Desc
	schedules, due, expired                         *prometheus.Desc
	unreadable, up                                  *prometheus.Desc
	calls, ok, refused, refusals                    *prometheus.Desc
}

// NewCollector returns a Collector reading through in, each scrape's
// reads bounded by timeout (DefaultTimeout when 0).
func NewCollector(in *inspect.Inspector, timeout time.Duration) *Collector {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	q := []string{"queue"}
	verb, code := []string{"node", "verb"}, []string{"node", "code"}
	return &Collector{
		in:         in,
		timeout:    timeout,
		queues:     prometheus.NewDesc("emq_queues", "Queues found by discovery.", nil, nil),
		jobs:       prometheus.NewDesc("emq_queue_jobs", "Jobs of the queue in each state (the size of its set).", []string{"queue", "state"}, nil),
		paused:     prometheus.NewDesc("emq_queue_paused", "1 when the queue is paused: claims deliver nothing.", q, nil),
		limit:      prometheus.NewDesc("emq_queue_rate_limit", "Jobs the queue delivers per window, when limited.", q, nil),
		windowSecs: prometheus.NewDesc("emq_queue_rate_window_seconds", "The window of the queue's rate limit.", q, nil),
		due:        prometheus.NewDesc("emq_queue_delayed_due", "Delayed jobs whose time has come that no claim or timer has moved to pending yet (still counted delayed): staying up, no worker claims.", q, nil),
		expired:    prometheus.NewDesc("emq_queue_active_expired", "Active jobs whose lease has passed that no claim has requeued yet (still counted active): staying up, no worker claims.", q, nil),
		oldest:     prometheus.NewDesc("emq_queue_oldest_pending_age_seconds", "Age of the job at the head of pending, the next to be claimed (0 when none): with priorities, the oldest of the most urgent one.", q, nil),
		schedules:  prometheus.NewDesc("emq_queue_schedules", "Repeat schedules of the queue, finished ones included.", q, nil),
		up:         prometheus.NewDesc("emq_node_up", "1 for a primary that answered the scrape, 0 for one the cluster lists that did not: its queues have no series.", []string{"node"}, nil),
		unreadable: prometheus.NewDesc("emq_queue_unreadable", "1 for a queue the server refused to read (a key of its layout of another type, say): it has no other series.", q, nil),
		calls:      prometheus.NewDesc("emq_calls_total", "Calls of each emq verb since the module loaded, refused ones included.", verb, nil),
		ok:         prometheus.NewDesc("emq_calls_ok_total", "Calls of each emq verb that succeeded: calls less refused.", verb, nil),
		refused:    prometheus.NewDesc("emq_calls_refused_total", "Calls of each emq verb refused with an error reply.", verb, nil),
		refusals:   prometheus.NewDesc("emq_refusals_total", "Refused calls of every verb by the error reply's code (EMQLAYOUT …; ERR counts recovered panics).", code, nil),
	}
}

// Describe sends nothing: INFO emq's fields are known only once read, so
// the collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads the queues and INFO emq.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	base := c.base
	if base == nil {
		base = context.Background()
	}
	ctx, cancel := context.WithTimeout(base, c.timeout)
	defer cancel()
	if err := c.collect(ctx, ch); err != nil {
		ch <- prometheus.NewInvalidMetric(c.queues, err)
	}
}

func (c *Collector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	sums, lost := c.in.Overview(ctx)
	if lost != nil && !inspect.Partial(lost) {
		return lost
	}
	ch <- prometheus.MustNewConstMetric(c.queues, prometheus.GaugeValue, float64(len(sums)))
	labelled := make(map[string]bool, len(sums))
	for _, s := range sums {
		s.Queue = queueLabel(s.Queue)
		if labelled[s.Queue] {
			continue // a second series of one label fails the whole scrape
		}
		labelled[s.Queue] = true
		if s.Err != nil {
			ch <- prometheus.MustNewConstMetric(c.unreadable, prometheus.GaugeValue, 1, s.Queue)
			continue
		}
		for _, st := range inspect.States {
			ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(s.Counts[st]), s.Queue, string(st))
		}
		paused := 0.0
		if s.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, paused, s.Queue)
		if s.Limit.Max > 0 {
			ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(s.Limit.Max), s.Queue)
			ch <- prometheus.MustNewConstMetric(c.windowSecs, prometheus.GaugeValue, s.Limit.Window.Seconds(), s.Queue)
		}
		ch <- prometheus.MustNewConstMetric(c.due, prometheus.GaugeValue, float64(s.Due), s.Queue)
		ch <- prometheus.MustNewConstMetric(c.expired, prometheus.GaugeValue, float64(s.Expired), s.Queue)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, s.HeadAge.Seconds(), s.Queue)
		ch <- prometheus.MustNewConstMetric(c.schedules, prometheus.GaugeValue, float64(s.Repeats), s.Queue)
	}
	nodes, lost := c.in.Stats(ctx)
	var down *inspect.UnreachableError
	if lost != nil && !errors.As(lost, &down) {
		return lost
	}
	if down != nil {
		for _, addr := range down.Addrs {
			ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0, addr)
		}
	}
	for _, n := range nodes {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1, n.Addr)
		for _, f := range inspect.Tag(n.Fields) {
			ch <- c.infoMetric(f, n.Addr)
		}
	}
	return nil
}

// infoMetric is one INFO emq field of node as a series: a verb's or a
// code's field is one series of its family, labelled with the verb or the
// code; a level is a gauge, any other field a counter named <field>_total.
func (c *Collector) infoMetric(f inspect.Tagged, node string) prometheus.Metric {
	v := float64(f.Value)
	switch f.Role {
	case inspect.VerbCalls:
		return prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, v, node, f.Of)
	case inspect.VerbOK:
		return prometheus.MustNewConstMetric(c.ok, prometheus.CounterValue, v, node, f.Of)
	case inspect.VerbRefused:
		return prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, v, node, f.Of)
	case inspect.CodeRefusals:
		return prometheus.MustNewConstMetric(c.refusals, prometheus.CounterValue, v, node, f.Of)
	case inspect.Level:
		return prometheus.MustNewConstMetric(prometheus.NewDesc(f.Name, fieldHelp(f.Name), []string{"node"}, nil), prometheus.GaugeValue, v, node)
	}
	name := f.Name + "_total"
	if f.Name == "emq_go_total_allocs" {
		name = "emq_go_allocs_total" // not "total" twice
	}
	return prometheus.MustNewConstMetric(prometheus.NewDesc(name, fieldHelp(f.Name), []string{"node"}, nil), prometheus.CounterValue, v, node)
}

// fieldHelp is the HELP of INFO emq's field name: what it counts, from
// docs/commands.md; a field a newer module adds is named as it is.
func fieldHelp(name string) string {
	if h, ok := fieldHelps[name]; ok {
		return h
	}
	return "INFO emq's " + name + ", new to this dashboard (docs/commands.md)."
}

// fieldHelps say what INFO emq's counters and levels count (docs/commands.md,
// "Configuration and INFO" and the blocking claim's waits).
var fieldHelps = map[string]string{
	"emq_jobs_admitted":       "Jobs admitted to pending (EMQ.ENQUEUE; EMQ.SCHEDULE and EMQ.ENQUEUEMANY due now), duplicates not counted.",
	"emq_jobs_duplicate":      "Admissions of a job id the queue already held: answered, nothing written.",
	"emq_entries_appended":    "Entries appended to streams (EMQ.APPEND).",
	"emq_envelopes_published": "Envelopes published (EMQ.PUBLISH).",
	"emq_failures_counted":    "Failures counted (EMQ.FAILURES.INCR).",
	"emq_jobs_claimed":        "Jobs claimed: moved from pending to active under a lease.",
	"emq_jobs_extended":       "Leases of active jobs extended.",
	"emq_jobs_acked":          "Jobs acknowledged: completed and taken out of active.",
	"emq_jobs_retried":        "Failed jobs moved back to pending.",
	"emq_jobs_delayed":        "Failed jobs moved to delayed, to retry after a backoff.",
	"emq_jobs_dead":           "Jobs moved to dead: attempts spent or failed for good.",
	"emq_jobs_promoted":       "Delayed jobs whose time came, moved to pending by a claim's sweep.",
	"emq_stalls_requeued":     "Active jobs whose lease ended, requeued by a claim's sweep.",
	"emq_dangling_dropped":    "Set members that named no job — their row gone, or no JOB id — dropped (by a claim or its sweep, EMQ.REMOVE or a repeat's tick).",
	"emq_jobs_revived":        "Dead jobs revived to pending.",
	"emq_jobs_released":       "Claimed jobs given back unstarted to pending, their attempts not spent (EMQ.SETTLE's RELEASE).",
	"emq_parked":              "Messages parked.",
	"emq_parks_noop":          "Parks that found the entry no longer pending.",
	"emq_jobs_scheduled":      "Jobs admitted to delayed (EMQ.SCHEDULE or EMQ.ENQUEUEMANY with a time to come).",
	"emq_jobs_removed":        "Jobs removed (EMQ.REMOVE).",
	"emq_repeats_ticked":      "Jobs made by the ticks of repeat schedules.",
	"emq_repeats_held":        "Claim turns and timer sweeps that held due schedule ticks back: the server would have refused EMQ.ENQUEUE (over maxmemory).",
	"emq_events_appended":     "Events appended to queues' event streams.",
	"emq_settled":             "Settlements EMQ.SETTLE applied.",
	"emq_settles_refused":     "Settlements EMQ.SETTLE refused.",
	"emq_jobs_refused":        "Jobs EMQ.ENQUEUEMANY refused in its reply (a row of another type, or outside the caller's ACL).",
	"emq_claims_paused":       "Claim turns of a paused queue: they delivered nothing.",
	"emq_claims_limited":      "Claim turns the queue's rate limit cut.",
	"emq_blocked_workers":     "Blocking claims waiting now.",
	"emq_timers":              "Queue timers armed now, and queues waiting for a later pass of the event loop.",
	"emq_wakeups_served":      "Wake-ups of blocking claims that replied.",
	"emq_wakeups_idle":        "Wake-ups of blocking claims that found nothing and kept waiting.",
	"emq_block_timeouts":      "Blocking claims ended by their timeout or CLIENT UNBLOCK (TIMEOUT, its default; not ERROR).",
	"emq_timers_fired":        "Times a queue's timer ran for its waiters: a sweep, or a look again later where the server takes no writes.",
	"emq_timers_deferred":     "Queues whose timer found its event-loop pass's sweeping budget spent and waited for a later pass.",
	"emq_timers_refused":      "Sweeps of a queue's timer the queue refused (a key of it holding another type, its slot migrating): each looks again in 100 ms.",
	"emq_go_heap_inuse_bytes": "Bytes of the module's Go heap in use.",
	"emq_go_heap_live_bytes":  "Bytes of the module's Go heap the last collection kept.",
	"emq_go_heap_objects":     "Objects on the module's Go heap.",
	"emq_go_total_allocs":     "Go allocations of the module since it loaded.",
	"emq_go_gc_cycles":        "Go collections of the module since it loaded.",
	"emq_go_threads":          "Threads the module's Go runtime holds: those it started and the server's that called into it (each keeps ~6 KB of its heap).",
	"emq_go_maxprocs":         "The module's Go runtime's GOMAXPROCS: the CPUs the server could use when the module loaded, and at least 3.",
}

// queueLabel is a queue's name as a label value, which Prometheus takes
// only in UTF-8 (one name that is not failed every scrape): a UTF-8 name
// as it is; in another, each byte that starts no character becomes \xHH,
// as Go's %q writes it.
func queueLabel(name string) string {
	if utf8.ValidString(name) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, `\x%02x`, name[i])
		} else {
			b.WriteString(name[i : i+n])
		}
		i += n
	}
	return b.String()
}
