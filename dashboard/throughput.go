package dashboard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/echomq/emq/inspect"
)

// window is how many minutes of throughput and depth a dashboard keeps.
const window = 60

// throughput is the last hour as the dashboard sampled it: per minute,
// the jobs completed (INFO emq's emq_jobs_acked) and failed (emq_jobs_
// retried + emq_jobs_delayed + emq_jobs_dead), summed over the primaries;
// per queue, its pending and dead sizes. The server counts nothing more
// for it: the counters are the module's, the sizes ZCARDs.
type throughput struct {
	mu      sync.Mutex
	last    map[string]jobCounts // per node: the counters at its last sample
	minutes [window]minuteCounts // ring, by Unix minute
	depths  map[string]*[window]depth
	failed  error // why the last sample failed; nil after one that read every primary
}

// jobCounts are the counters throughput differences.
type jobCounts struct{ completed, failed int64 }

// minuteCounts are the jobs completed and failed in one minute.
type minuteCounts struct {
	minute            int64 // Unix minute; 0: no sample
	completed, failed int64
}

// depth is a queue's sizes at the last sample of a minute.
type depth struct {
	minute        int64
	pending, dead int64
}

func newThroughput() *throughput {
	return &throughput{last: map[string]jobCounts{}, depths: map[string]*[window]depth{}}
}

// countsOf reads a node's counters.
func countsOf(n inspect.NodeStats) jobCounts {
	return jobCounts{completed: n.Get("emq_jobs_acked"),
		failed: n.Get("emq_jobs_retried") + n.Get("emq_jobs_delayed") + n.Get("emq_jobs_dead")}
}

// grown is how much a counter grew from was to is; a counter below its
// last value restarted (the module loaded again), so all of it is new.
func grown(was, is int64) int64 {
	if is < was {
		return is
	}
	return is - was
}

// sample reads INFO emq of every primary and every queue's sizes, and adds
// them to the current minute. The counters are added before the sizes are
// read, so a queue that cannot be read stops no chart: it only has no
// sparkline.
//
// With a primary of a cluster that does not answer, the others are counted
// and the error says which was not.
func (t *throughput) sample(ctx context.Context, in *inspect.Inspector) (err error) {
	defer func() {
		t.mu.Lock()
		t.failed = err
		t.mu.Unlock()
	}()
	nodes, lost := in.Stats(ctx)
	if lost != nil && !inspect.Partial(lost) {
		return lost
	}
	m := in.Now().Unix() / 60
	t.count(m, nodes)
	sums, err := in.Overview(ctx)
	if err != nil && !inspect.Partial(err) {
		return err
	}
	t.measure(m, sums)
	return lost
}

// count adds the growth of the nodes' counters to minute m.
func (t *throughput) count(m int64, nodes []inspect.NodeStats) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := &t.minutes[m%window]
	if b.minute != m {
		*b = minuteCounts{}
	}
	for _, n := range nodes {
		c := countsOf(n)
		if was, ok := t.last[n.Addr]; ok {
			b.minute = m
			b.completed += grown(was.completed, c.completed)
			b.failed += grown(was.failed, c.failed)
		}
		t.last[n.Addr] = c
	}
}

// measure keeps the queues' sizes at minute m; a queue that could not be
// read is skipped.
func (t *throughput) measure(m int64, sums []inspect.Summary) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range sums {
		if s.Err != nil {
			continue
		}
		d := t.depths[s.Queue]
		if d == nil {
			d = new([window]depth)
			t.depths[s.Queue] = d
		}
		d[m%window] = depth{minute: m, pending: s.Counts[inspect.Pending], dead: s.Counts[inspect.Dead]}
	}
	for q, d := range t.depths { // forget queues gone for the whole window
		if latest(d) <= m-window {
			delete(t.depths, q)
		}
	}
}

// latest is the last minute d was sampled.
func latest(d *[window]depth) int64 {
	var m int64
	for _, x := range d {
		m = max(m, x.minute)
	}
	return m
}

// The throughput chart's size, in SVG units.
const (
	chartSlot   = 12 // per minute
	chartBar    = 5  // each of completed and failed
	chartHeight = 100
)

// chart is the last hour's throughput as bars, one pair per minute,
// oldest left.
type chart struct {
	Bars              []bar
	Width, Height     int
	Max               int64
	Completed, Failed int64
	Sampled           bool   // some minute has a sample
	Err               string // why the last sample failed, if it did
}

// bar is one minute of the chart.
type bar struct {
	X, CompletedY, CompletedH, FailedX, FailedY, FailedH int
	Title                                                string
}

// chart draws the hour up to now.
func (t *throughput) chart(now time.Time) chart {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := chart{Width: window * chartSlot, Height: chartHeight}
	if t.failed != nil {
		c.Err = t.failed.Error()
	}
	m := now.Unix() / 60
	var counts [window]minuteCounts
	for i := range window {
		if b := t.minutes[(m-window+1+int64(i))%window]; b.minute == m-window+1+int64(i) {
			counts[i] = b
			c.Sampled = true
			c.Max = max(c.Max, b.completed, b.failed)
			c.Completed += b.completed
			c.Failed += b.failed
		}
	}
	for i, b := range counts {
		x := i * chartSlot
		ch, fh := scale(b.completed, c.Max, chartHeight), scale(b.failed, c.Max, chartHeight)
		title := fmt.Sprintf("%d min ago: no sample", window-1-i)
		if b.minute != 0 {
			title = fmt.Sprintf("%s: %d completed, %d failed", time.Unix(b.minute*60, 0).UTC().Format("15:04"), b.completed, b.failed)
		}
		c.Bars = append(c.Bars, bar{X: x, CompletedY: chartHeight - ch, CompletedH: ch,
			FailedX: x + chartBar, FailedY: chartHeight - fh, FailedH: fh, Title: title})
	}
	return c
}

// scale is v of top as a height of at most h, at least 1 for any v > 0.
func scale(v, top int64, h int) int {
	if v <= 0 || top <= 0 {
		return 0
	}
	return int(max(1, v*int64(h)/top))
}

// The sparkline's size, in SVG units.
const (
	sparkWidth  = 120
	sparkHeight = 24
)

// sparkline is a queue's pending and dead sizes over the hour, as SVG
// polyline points.
type sparkline struct {
	Pending, Dead string
	Width, Height int
}

// sparkline draws queue's sizes over the hour up to now; empty points
// when it has fewer than two samples.
func (t *throughput) sparkline(queue string, now time.Time) sparkline {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := sparkline{Width: sparkWidth, Height: sparkHeight}
	d := t.depths[queue]
	if d == nil {
		return s
	}
	m := now.Unix() / 60
	var xs []int
	var pending, dead []int64
	var top int64
	for i := range window {
		x := d[(m-window+1+int64(i))%window]
		if x.minute != m-window+1+int64(i) {
			continue
		}
		xs = append(xs, i*sparkWidth/(window-1))
		pending, dead = append(pending, x.pending), append(dead, x.dead)
		top = max(top, x.pending, x.dead)
	}
	if len(xs) < 2 {
		return s
	}
	points := func(v []int64) string {
		var b strings.Builder
		for i, x := range xs {
			fmt.Fprintf(&b, "%d,%d ", x, sparkHeight-1-scale(v[i], top, sparkHeight-2))
		}
		return strings.TrimSpace(b.String())
	}
	s.Pending, s.Dead = points(pending), points(dead)
	return s
}
