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
//	emq_queue_oldest_pending_age_seconds{queue}   age of the head of pending
//	emq_queue_unreadable{queue}                   1 for a queue the server refused to read
//	emq_node_up{node}                             1 for a primary read, 0 for one that did not answer
//	emq_<counter>_total{node}                     each INFO emq counter
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
	queues, jobs, paused, limit, windowSecs, oldest *prometheus.Desc
	unreadable, up                                  *prometheus.Desc
}

// NewCollector returns a Collector reading through in, each scrape's
// reads bounded by timeout (DefaultTimeout when 0).
func NewCollector(in *inspect.Inspector, timeout time.Duration) *Collector {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	q := []string{"queue"}
	return &Collector{
		in:         in,
		timeout:    timeout,
		queues:     prometheus.NewDesc("emq_queues", "Queues found by discovery.", nil, nil),
		jobs:       prometheus.NewDesc("emq_queue_jobs", "Jobs of the queue in each state (the size of its set).", []string{"queue", "state"}, nil),
		paused:     prometheus.NewDesc("emq_queue_paused", "1 when the queue is paused: claims deliver nothing.", q, nil),
		limit:      prometheus.NewDesc("emq_queue_rate_limit", "Jobs the queue delivers per window, when limited.", q, nil),
		windowSecs: prometheus.NewDesc("emq_queue_rate_window_seconds", "The window of the queue's rate limit.", q, nil),
		oldest:     prometheus.NewDesc("emq_queue_oldest_pending_age_seconds", "Age of the job at the head of pending (0 when none).", q, nil),
		up:         prometheus.NewDesc("emq_node_up", "1 for a primary that answered the scrape, 0 for one the cluster lists that did not: its queues have no series.", []string{"node"}, nil),
		unreadable: prometheus.NewDesc("emq_queue_unreadable", "1 for a queue the server refused to read (a key of its layout of another type, say): it has no other series.", q, nil),
	}
}

// Describe sends nothing: INFO emq's fields are known only once read, so
// the collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads the queues and INFO emq.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
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
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, s.HeadAge.Seconds(), s.Queue)
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
	node := []string{"node"}
	for _, n := range nodes {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1, n.Addr)
		for _, f := range n.Fields {
			name, kind := f.Name+"_total", prometheus.CounterValue
			if inspect.IsLevel(f.Name) {
				name, kind = f.Name, prometheus.GaugeValue
			}
			help := "INFO emq's " + f.Name + " (docs/commands.md)."
			desc := prometheus.NewDesc(name, help, node, nil)
			ch <- prometheus.MustNewConstMetric(desc, kind, float64(f.Value), n.Addr)
		}
	}
	return nil
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
