package torture

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// The job lifecycle (docs/commands.md) under torture. Its calls depend on
// what the queue holds and on the server's clock — leases and backoffs of a
// few milliseconds pass while the run goes on, and any claim may sweep — so a
// call's exact reply is not predicted: a valid call's reply must be the
// verb's success or a refusal of the stored state (EMQNOJOB, EMQLEASE,
// EMQSTATE), a mutated call's any refusal or success, garbage a refusal. What
// the model learns from the replies only steers the next calls to jobs in the
// right state; at the end the queues themselves are checked: an id in at most
// one set, the set its row's state, no job lost.

// The lifecycle's refusals of stored state.
const (
	noJob = "EMQNOJOB"
	lease = "EMQLEASE"
	state = "EMQSTATE"
)

// stateCodes are the refusals a valid lifecycle call may meet.
var stateCodes = []string{noJob, lease, state}

// The queue's sets, in the order of docs/commands.md's table.
var lifeSets = []string{keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet}

// unixMs2020 is 2020-01-01 in Unix milliseconds: every deadline is later.
const unixMs2020 = 1_577_836_800_000

// lifeQueues is how many lifecycle queues a worker uses in a space.
const lifeQueues = 2

// lifeJob is what a worker believes of one of its jobs.
type lifeJob struct {
	queue, id string
	state     string // as the last reply about it said
	attempt   int64
}

// lifeModel is a worker's jobs of one space, as the replies told.
type lifeModel struct {
	jobs    []*lifeJob // every job not known to be gone
	byID    map[string]*lifeJob
	queues  map[string]bool
	acked   int // jobs acknowledged, whose rows are gone or done
	removed int // jobs removed
}

func (g *gen) lifeOf(space string) *lifeModel {
	if g.life == nil {
		g.life = map[string]*lifeModel{}
	}
	if g.life[space] == nil {
		g.life[space] = &lifeModel{byID: map[string]*lifeJob{}, queues: map[string]bool{}}
	}
	return g.life[space]
}

// lifeQueue names queue k of the lifecycle in space.
func (g *gen) lifeQueue(space string, k int) string { return g.space(space, k) + "l" }

// inState picks a job the model believes in state, or nil.
func (m *lifeModel) inState(g *gen, want string) *lifeJob {
	var fit []*lifeJob
	for _, j := range m.jobs {
		if j.state == want {
			fit = append(fit, j)
		}
	}
	if len(fit) == 0 {
		return nil
	}
	return fit[g.pick(len(fit))]
}

// gone forgets a job acknowledged.
func (m *lifeModel) gone(id string) {
	if m.drop(id) {
		m.acked++
	}
}

// drop forgets a job, reporting whether the model knew it.
func (m *lifeModel) drop(id string) bool {
	for i, j := range m.jobs {
		if j.id == id {
			m.jobs = append(m.jobs[:i], m.jobs[i+1:]...)
			delete(m.byID, id)
			return true
		}
	}
	return false
}

// lifeBuilt is a lifecycle call under construction: where its integer
// arguments sit, with the range docs/commands.md admits for each.
type lifeBuilt struct {
	built
	bounds map[int][2]int64
}

func lifeArgs(verb string, numkeys int, jobID, queue string, sets []string, ints ...int64) lifeBuilt {
	b := lifeBuilt{bounds: map[int][2]int64{1: {int64(numkeys), int64(numkeys)}}}
	b.args = text(verb, strconv.Itoa(numkeys))
	b.counts = []int{1}
	if jobID != "" {
		b.keys = append(b.keys, len(b.args))
		b.ids = append(b.ids, idAt{len(b.args), len(keys.Job(queue, "")), ids.Job})
		b.args = append(b.args, []byte(keys.Job(queue, jobID)))
	}
	for _, s := range sets {
		b.keys = append(b.keys, len(b.args))
		b.args = append(b.args, []byte(keys.Set(queue, s)))
	}
	b.ints(ints...)
	return b
}

// ints appends integer arguments, each given as value, lowest, highest.
func (b *lifeBuilt) ints(ints ...int64) {
	for i := 0; i+2 < len(ints); i += 3 {
		b.bounds[len(b.args)] = [2]int64{ints[i+1], ints[i+2]}
		b.counts = append(b.counts, len(b.args))
		b.args = append(b.args, []byte(strconv.FormatInt(ints[i], 10)))
	}
}

// key appends a key argument.
func (b *lifeBuilt) key(key string) {
	b.keys = append(b.keys, len(b.args))
	b.args = append(b.args, []byte(key))
}

// id appends a job id argument.
func (b *lifeBuilt) id(id string) {
	b.ids = append(b.ids, idAt{len(b.args), 0, ids.Job})
	b.args = append(b.args, []byte(id))
}

// The bounds of docs/commands.md's integer arguments.
const (
	maxInt32 = math.MaxInt32
	max40    = 1 << 40
)

func claimCall(queue string, leaseMs, n, maxAttempts int64) lifeBuilt {
	return lifeArgs("EMQ.CLAIM", 4, "", queue, lifeSets, leaseMs, 1, maxInt32, n, 1, 1000, maxAttempts, 1, maxInt32)
}

func extendCall(queue, id string, attempt, leaseMs int64) lifeBuilt {
	return lifeArgs("EMQ.EXTEND", 2, id, queue, []string{keys.ActiveSet}, attempt, 1, maxInt32, leaseMs, 1, maxInt32)
}

func ackCall(queue, id string, attempt, keepMs int64) lifeBuilt {
	return lifeArgs("EMQ.ACK", 2, id, queue, []string{keys.ActiveSet}, attempt, 1, maxInt32, keepMs, 0, max40)
}

func failCall(queue, id string, attempt, backoffMs, maxAttempts int64, why []byte) lifeBuilt {
	b := lifeArgs("EMQ.FAIL", 5, id, queue, lifeSets, attempt, 1, maxInt32, backoffMs, 0, max40, maxAttempts, 1, maxInt32)
	b.args = append(b.args, why)
	return b
}

func stalledCall(queue string, limit int64) lifeBuilt {
	return lifeArgs("EMQ.STALLED.CHECK", 2, "", queue, []string{keys.PendingSet, keys.ActiveSet}, limit, 1, 100_000)
}

func reviveCall(queue, id string) lifeBuilt {
	return lifeArgs("EMQ.REVIVE", 3, id, queue, []string{keys.PendingSet, keys.DeadSet})
}

// settlement is one settlement of an EMQ.SETTLE: its kind (ACK, DONE, FAIL
// or RELEASE, in any case), job, attempt, keep_ms or backoff_ms, and result
// or error.
type settlement struct {
	kind    string
	job     *lifeJob
	attempt int64
	ms      int64
	text    []byte
}

func settleCall(queue string, leaseMs, count, maxAttempts int64, sts []settlement) lifeBuilt {
	b := lifeArgs("EMQ.SETTLE", 4, "", queue, lifeSets, leaseMs, 1, maxInt32, count, 0, 1000, maxAttempts, 1, maxInt32,
		int64(len(sts)), 0, 1000)
	for _, st := range sts {
		b.args = append(b.args, []byte(st.kind))
		b.id(st.job.id)
		if strings.EqualFold(st.kind, "RELEASE") {
			b.ints(st.attempt, 1, maxInt32)
			continue
		}
		low := int64(0)
		if strings.EqualFold(st.kind, "DONE") {
			low = 1
		}
		b.ints(st.attempt, 1, maxInt32, st.ms, low, max40)
		if !strings.EqualFold(st.kind, "ACK") {
			b.args = append(b.args, st.text)
		}
	}
	return b
}

func scheduleCall(queue, id string, payload []byte, priority, atMs int64) lifeBuilt {
	b := lifeArgs("EMQ.SCHEDULE", 3, "", queue, nil)
	b.ids = append(b.ids, idAt{len(b.args), len(keys.Job(queue, "")), ids.Job})
	b.key(keys.Job(queue, id))
	for _, set := range []string{keys.PendingSet, keys.DelayedSet} {
		b.key(keys.Set(queue, set))
	}
	b.id(id)
	b.ids[0], b.ids[1] = b.ids[1], b.ids[0] // the argument's id first, as ENQUEUE's
	b.args = append(b.args, payload)
	b.ints(priority, 0, maxInt32, atMs, 0, 1<<47)
	return b
}

func enqueueManyCall(queue string, priority, atMs int64, jobIDs []string, payloads [][]byte) lifeBuilt {
	b := lifeArgs("EMQ.ENQUEUEMANY", 2, "", queue, []string{keys.PendingSet, keys.DelayedSet}, priority, 0, maxInt32, atMs, 0, 1<<47)
	for i, id := range jobIDs {
		b.id(id)
		b.args = append(b.args, payloads[i])
	}
	return b
}

func removeCall(queue, id string) lifeBuilt {
	return lifeArgs("EMQ.REMOVE", 5, id, queue, lifeSets)
}

// repeatCall sets the schedule name of queue (EMQ.REPEAT).
func repeatCall(queue, name, spec, tz string, payload []byte, priority, startMs, endMs, limit int64) lifeBuilt {
	b := lifeArgs("EMQ.REPEAT", 3, "", queue, nil)
	b.key(keys.Repeat(queue, name))
	b.key(keys.Set(queue, keys.Repeats))
	b.key(keys.Set(queue, keys.Config))
	b.args = append(b.args, []byte(spec), []byte(tz), payload)
	b.ints(priority, 0, maxInt32, startMs, 0, 1<<47, endMs, 0, 1<<47, limit, 0, maxInt32)
	return b
}

// unrepeatCall removes the schedule name of queue (EMQ.UNREPEAT).
func unrepeatCall(queue, name string) lifeBuilt {
	b := lifeArgs("EMQ.UNREPEAT", 2, "", queue, nil)
	b.key(keys.Repeat(queue, name))
	b.key(keys.Set(queue, keys.Repeats))
	return b
}

// settingCall is one of a queue's setting verbs — PAUSE, RESUME, LIMIT,
// EVENTS — on its config and second key.
func settingCall(verb, queue, second string, ints ...int64) lifeBuilt {
	return lifeArgs(verb, 2, "", queue, []string{keys.Config, second}, ints...)
}

// atMs is when an admission makes its job claimable: now (0), in the
// past, in a minute or so, or never — not so near now that the reply could
// not tell whether the job was admitted or scheduled (INFO emq counts
// them apart).
func (g *gen) atMs() int64 {
	switch g.pick(4) {
	case 0:
		return unixMs2020
	case 1:
		return time.Now().UnixMilli() + 30_000 + g.r.Int64N(60_000)
	case 2:
		return 1 << 47
	}
	return 0
}

// admitted is the state an admission at atMs puts its job in.
func admitted(atMs int64) string {
	if atMs > time.Now().UnixMilli() {
		return "delayed"
	}
	return "pending"
}

// priority is mostly 0, else one of a few, now and then the highest.
func (g *gen) priority() int64 {
	switch g.pick(4) {
	case 0:
		return 1 + int64(g.pick(5))
	case 1:
		if g.pick(4) == 0 {
			return maxInt32
		}
	}
	return 0
}

// leaseMs is mostly an hour, sometimes a few milliseconds, so that leases
// pass during the run and claims and STALLED.CHECK requeue them.
func (g *gen) leaseMs() int64 {
	if g.pick(3) == 0 {
		return 1 + g.r.Int64N(200)
	}
	return 3_600_000
}

// lifeCall makes a lifecycle call in space, aimed by the model at a job in
// the state the verb takes, and what to learn from its reply.
func (g *gen) lifeCall(space string) (lifeBuilt, string, func(reply)) {
	m := g.lifeOf(space)
	queue := g.lifeQueue(space, g.pick(lifeQueues))
	m.queues[queue] = true
	active := m.inState(g, "active")
	// an attempt the lease may have passed to, or not yet reached
	attempt := func(j *lifeJob) int64 {
		if g.pick(8) == 0 {
			return max(1, j.attempt+int64(g.pick(3))-1)
		}
		return j.attempt
	}
	switch p := g.pick(100); {
	case p < 25 || len(m.jobs) == 0:
		id := g.mint(ids.Job)
		b := lifeBuilt{built: enqueueCall(queue, id, g.bytes(g.pick(32)))}
		return b, "enqueue", func(r reply) {
			if r.n == 1 {
				j := &lifeJob{queue: queue, id: id, state: "pending"}
				m.jobs = append(m.jobs, j)
				m.byID[id] = j
			}
		}
	case p < 50 || active == nil && p < 80:
		b := claimCall(queue, g.leaseMs(), 1+int64(g.pick(4)), 1+int64(g.pick(4)))
		return b, "claim", m.claimedIn(queue)
	case p < 58 && active != nil:
		b := extendCall(active.queue, active.id, attempt(active), g.leaseMs())
		return b, "extend", func(reply) {}
	case p < 70 && active != nil:
		// No row may expire within the run, above all not between a refused
		// batch's two digests; a mutation of keep_ms 0 could make it 1.
		keep := int64(0)
		if g.pick(3) == 0 || space != "valid" {
			keep = g.failTTL()
		}
		b := ackCall(active.queue, active.id, attempt(active), keep)
		return b, "ack", func(r reply) {
			if !r.isError() {
				m.gone(active.id)
			}
		}
	case p < 80 && active != nil:
		backoff := []int64{0, 1 + g.r.Int64N(100), 3_600_000}[g.pick(3)]
		b := failCall(active.queue, active.id, attempt(active), backoff, 1+int64(g.pick(4)), g.bytes(g.pick(24)))
		return b, "fail", func(r reply) {
			if r.kind == '$' {
				active.state = r.text
			}
		}
	case p < 84:
		return stalledCall(queue, 1+int64(g.pick(20))), "stalled.check", func(reply) {}
	case p < 90:
		return g.lifeSettle(space, m, queue, attempt)
	case p < 97:
		return g.lifeOf03(m, queue)
	}
	j := m.inState(g, "dead")
	if j == nil {
		j = m.jobs[g.pick(len(m.jobs))]
	}
	return reviveCall(j.queue, j.id), "revive", func(r reply) {
		if !r.isError() {
			j.state, j.attempt = "pending", 0
		}
	}
}

// lifeSettle makes an EMQ.SETTLE of up to three settlements — of active
// jobs, a job in another state now and then, and a job settled again under
// another attempt (settled twice, or refused and then settled) — and a
// claim of up to three jobs, or none.
func (g *gen) lifeSettle(space string, m *lifeModel, queue string, attempt func(*lifeJob) int64) (lifeBuilt, string, func(reply)) {
	var sts []settlement
	for range g.pick(4) {
		j := m.inState(g, "active")
		if j == nil || j.queue != queue || g.pick(6) == 0 {
			j = m.jobs[g.pick(len(m.jobs))]
		}
		// a job never claimed is at attempt 0
		st := settlement{job: j, attempt: max(1, attempt(j))}
		if len(sts) > 0 && g.pick(4) == 0 { // the job before, under an attempt of its own
			st = settlement{job: sts[len(sts)-1].job, attempt: max(1, sts[len(sts)-1].attempt+int64(g.pick(3))-1)}
		}
		switch g.pick(4) {
		case 0:
			// as the ack case: no row may expire within the run
			st.kind = "ACK"
			if g.pick(3) == 0 || space != "valid" {
				st.ms = g.failTTL()
			}
		case 1:
			st.kind, st.ms, st.text = "DONE", g.failTTL(), g.bytes(g.pick(24))
		case 2:
			st.kind, st.ms, st.text = "FAIL", []int64{0, 1 + g.r.Int64N(100), 3_600_000}[g.pick(3)], g.bytes(g.pick(24))
		default:
			st.kind = "RELEASE"
		}
		if g.pick(5) == 0 {
			st.kind = strings.ToLower(st.kind)
		}
		sts = append(sts, st)
	}
	b := settleCall(queue, g.leaseMs(), int64(g.pick(4)), 1+int64(g.pick(4)), sts)
	return b, "settle", func(r reply) {
		if r.kind != '*' || len(r.elems) != 2 {
			return
		}
		for i, e := range r.elems[0].elems {
			switch {
			case i >= len(sts) || e.isError():
			case e.kind == '$':
				sts[i].job.state = e.text
			case strings.EqualFold(sts[i].kind, "RELEASE"):
				sts[i].job.state = "pending"
			default:
				m.gone(sts[i].job.id)
			}
		}
		m.claimedIn(queue)(r.elems[1])
	}
}

// lifeOf03 makes a call of a verb of version 0.3 on queue: an admission
// at a time and priority (EMQ.SCHEDULE, EMQ.ENQUEUEMANY, whose batch may
// name a job twice or one that exists), an EMQ.REMOVE, a change of the
// queue's settings — pause, resume, a rate limit, its events stream — or
// of its repeat schedules, whose ticks the claims then make.
func (g *gen) lifeOf03(m *lifeModel, queue string) (lifeBuilt, string, func(reply)) {
	admit := func(id, state string) {
		j := &lifeJob{queue: queue, id: id, state: state}
		m.jobs = append(m.jobs, j)
		m.byID[id] = j
	}
	switch g.pick(11) {
	case 0, 1:
		id, at := g.mint(ids.Job), g.atMs()
		return scheduleCall(queue, id, g.bytes(g.pick(32)), g.priority(), at), "schedule", func(r reply) {
			if r.n == 1 {
				admit(id, admitted(at))
			}
		}
	case 2, 3:
		var jobIDs []string
		var payloads [][]byte
		for range 1 + g.pick(4) {
			id := g.mint(ids.Job)
			switch j := m.jobs[g.pick(len(m.jobs))]; {
			case len(jobIDs) > 0 && g.pick(4) == 0:
				id = jobIDs[g.pick(len(jobIDs))]
			case j.queue == queue && g.pick(6) == 0: // one id, one queue: the model knows a job by its id
				id = j.id
			}
			jobIDs, payloads = append(jobIDs, id), append(payloads, g.bytes(g.pick(32)))
		}
		at := g.atMs()
		return enqueueManyCall(queue, g.priority(), at, jobIDs, payloads), "enqueuemany", func(r reply) {
			for i, e := range r.elems {
				if i < len(jobIDs) && e.kind == ':' && e.n == 1 {
					admit(jobIDs[i], admitted(at))
				}
			}
		}
	case 4:
		j := m.jobs[g.pick(len(m.jobs))]
		return removeCall(j.queue, j.id), "remove", func(r reply) {
			if r.kind == ':' && r.n == 1 {
				m.drop(j.id)
				m.removed++
			}
		}
	case 5:
		verb := []string{"EMQ.PAUSE", "EMQ.RESUME"}[g.pick(2)]
		return settingCall(verb, queue, keys.PendingSet), strings.ToLower(verb[4:]), func(reply) {}
	case 6:
		// Windows of an hour or two: the limiter, which expires at its
		// window's end, must not between a refused batch's two digests.
		most := int64(g.pick(6)) // 0 removes the limit
		window := 3_600_000 + g.r.Int64N(3_600_000)
		return settingCall("EMQ.LIMIT", queue, keys.PendingSet, most, 0, 1_000_000, window, 1, maxInt32), "limit", func(reply) {}
	case 7, 8:
		return g.lifeRepeat(queue), "repeat", func(reply) {}
	case 9:
		if g.pick(2) == 0 {
			return lifeArgs("EMQ.REPEATS", 1, "", queue, []string{keys.Repeats}), "repeats", func(reply) {}
		}
		return unrepeatCall(queue, repeatNames[g.pick(len(repeatNames))]), "unrepeat", func(reply) {}
	}
	capacity := []int64{0, 0, 10, 1000}[g.pick(4)]
	return settingCall("EMQ.EVENTS", queue, keys.Events, capacity, 0, maxInt32), "events", func(reply) {}
}

// repeatNames are the names of a lifecycle queue's repeat schedules.
var repeatNames = []string{"r0", "r1", "r2"}

// lifeRepeat sets one of queue's schedules: three times in eight ticking
// every 20 ms and once every 250 ms, so that the run's claims make its
// jobs, else hourly or by a cron rule in a time zone; starting now, at a phase set in the past,
// or in a minute; ending never or in two days (a tick before the end,
// whatever the rule); made without limit or a few times.
func (g *gen) lifeRepeat(queue string) lifeBuilt {
	specs := []string{"@every 20ms", "@every 20ms", "@every 20ms", "@every 250ms", "@every 1h", "* * * * *", "*/5 * * * *", "@hourly"}
	spec, tz := specs[g.pick(len(specs))], []string{"", "", "Europe/Berlin", "America/New_York"}[g.pick(4)]
	now := time.Now().UnixMilli()
	start, end, limit := []int64{0, 0, 0, unixMs2020, unixMs2020, now + 30_000 + g.r.Int64N(60_000)}[g.pick(6)], int64(0), int64(0)
	if g.pick(4) == 0 {
		end = now + 2*24*3_600_000
	}
	if g.pick(3) == 0 {
		limit = 1 + int64(g.pick(5))
	}
	return repeatCall(queue, repeatNames[g.pick(len(repeatNames))], spec, tz, g.bytes(g.pick(32)), g.priority(), start, end, limit)
}

// claimedIn learns the jobs of a claim's reply on queue: active under
// their attempts, and a job the model never admitted — a repeat schedule's
// tick — among its jobs from now on.
func (m *lifeModel) claimedIn(queue string) func(reply) {
	return func(r reply) {
		for _, e := range r.elems {
			j := m.byID[e.elems[0].text]
			if j == nil {
				j = &lifeJob{queue: queue, id: e.elems[0].text}
				m.jobs = append(m.jobs, j)
				m.byID[j.id] = j
			}
			j.state, j.attempt = "active", e.elems[1].n
		}
	}
}

// lifeValid is a lifecycle call of the valid space.
func (g *gen) lifeValid() call {
	b, what, learn := g.lifeCall("valid")
	c := call{args: b.args, class: valid, what: "valid/" + what, learn: learn}
	if what == "enqueue" {
		c.want, c.mayRefuse = "1", nil
		return c
	}
	c.mayRefuse = stateCodes
	return c
}

// lifeMutated is a lifecycle call of the mutant space with one count, key,
// id or byte changed, the refusal predicted where the change decides it;
// its admissions go in unchanged, to give the others jobs to act on.
func (g *gen) lifeMutated() call {
	b, what, learn := g.lifeCall("mutant")
	c := call{args: b.args, class: mutated, what: "mutated/" + what, learn: learn}
	if what == "enqueue" {
		return c
	}
	switch g.pick(4) {
	case 0:
		i := g.pick(len(c.args))
		a := append([]byte{}, c.args[i]...)
		if len(a) == 0 {
			a = []byte{0}
		}
		a[g.pick(len(a))] = byte(g.r.Uint32())
		c.args[i] = a
		c.what += fmt.Sprintf("/byte-of-arg-%d", i)
	case 1:
		g.lifeCount(&c, b)
	case 2:
		if len(b.ids) == 0 {
			g.lifeKey(&c, b)
			break
		}
		g.lifeID(&c, b)
	default:
		g.lifeKey(&c, b)
	}
	return c
}

// lifeCount changes an integer argument: to one more or less, or to a
// spelling or value no verb takes; EMQSHAPE when out of its range.
func (g *gen) lifeCount(c *call, b lifeBuilt) {
	i := b.counts[g.pick(len(b.counts))]
	orig, _ := strconv.ParseInt(string(c.args[i]), 10, 64)
	candidates := append([]string{strconv.FormatInt(orig+1, 10), strconv.FormatInt(orig-1, 10)}, badCounts...)
	v := candidates[g.pick(len(candidates))]
	c.args[i] = []byte(v)
	c.what += fmt.Sprintf("/count-arg-%d=%q", i, v)
	if !inBounds(v, b.bounds[i]) {
		c.codes = []string{shape}
	}
}

// inBounds reports whether v is the canonical decimal of a number within r.
func inBounds(v string, r [2]int64) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && strconv.FormatInt(n, 10) == v && !strings.HasPrefix(v, "-") && n >= r[0] && n <= r[1]
}

// lifeKey puts a key of no layout, or of another queue, in a key's place.
func (g *gen) lifeKey(c *call, b lifeBuilt) {
	i := b.keys[g.pick(len(b.keys))]
	other := g.space("mutant", 9)
	keyOf := append([]string{keys.Job(other, g.mint(ids.Job)), keys.Set(other, lifeSets[g.pick(4)])}, nonKeys...)
	key := keyOf[g.pick(len(keyOf))]
	c.args[i], c.codes = []byte(key), []string{layout}
	c.what += fmt.Sprintf("/key-arg-%d=%q", i, key)
}

// lifeID makes the job key's id malformed: another namespace, uppercase,
// a byte short, the top bit set.
func (g *gen) lifeID(c *call, b lifeBuilt) {
	at := b.ids[0]
	a := c.args[at.arg]
	id := a[at.off : at.off+ids.Len]
	repl := [][]byte{append([]byte("MSG"), id[3:]...), []byte("JOB0123456789ABCDEF"), append([]byte{}, id[:ids.Len-1]...),
		append([]byte("JOB8"), id[4:]...)}[g.pick(4)]
	c.args[at.arg], c.codes = splice(a, at.off, ids.Len, repl), []string{kind}
	c.what += fmt.Sprintf("/id=%q", repl)
}

// plantLife puts the lifecycle's junk in place: for each wrong type, a
// queue whose every key holds it; and a job row that is neither active nor
// dead, in a queue with no sets, which the state refusals meet.
func (g *gen) plantLife() [][]string {
	var cmds [][]string
	for _, t := range []string{"string", "list", "set", "hash", "stream"} {
		queue := g.space("junk", 10) + "-" + t
		for _, key := range append([]string{keys.Job(queue, g.lifeJunkID())}, setKeys(queue, lifeSets)...) {
			cmds = append(cmds, map[string][]string{
				"string": {"SET", key, "v"}, "list": {"RPUSH", key, "a"}, "set": {"SADD", key, "a"},
				"hash": {"HSET", key, "f", "v"}, "stream": {"XADD", key, "1-1", "f", "v"},
			}[t])
		}
	}
	row := keys.Job(g.space("junk", 11)+"l", g.lifeJunkID())
	return append(cmds, []string{"HSET", row, "state", "pending", "attempts", "0", "payload", ""})
}

// lifeJunkID is the one job id of the junk queues: the worker's first.
func (g *gen) lifeJunkID() string {
	id, _ := ids.New(ids.Job, baseMs, g.node, 0)
	return id.String()
}

func setKeys(queue string, sets []string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, keys.Set(queue, s))
	}
	return out
}

// lifeTemplate is a lifecycle call of verb k in queue, on job id.
func (g *gen) lifeTemplate(k int, queue, id string) lifeBuilt {
	switch k {
	case 0:
		return claimCall(queue, g.leaseMs(), 1, 3)
	case 1:
		return extendCall(queue, id, 1, g.leaseMs())
	case 2:
		return ackCall(queue, id, 1, 0)
	case 3:
		return failCall(queue, id, 1, 0, 3, []byte("x"))
	case 4:
		return stalledCall(queue, 10)
	}
	return reviveCall(queue, id)
}

// lifeGarbage is a lifecycle call that must be refused, writing nothing:
// numkeys lying, a count out of range, a key of no layout, a malformed
// job id, keys of a wrong type, or a job in the wrong state.
func (g *gen) lifeGarbage() call {
	queue := g.space("junk", 12) + "l"
	b := g.lifeTemplate(g.pick(6), queue, g.mint(ids.Job))
	c := call{args: b.args, class: garbage, refuse: true}
	verb := strings.ToLower(strings.TrimPrefix(string(b.args[0]), "EMQ."))
	switch p := g.pick(6); {
	case p == 0:
		lies := append([]string{"0", "1", "6", "100", "4294967298"}, badCounts...)
		lie := lies[g.pick(len(lies))]
		if lie == string(b.args[1]) {
			lie = "7"
		}
		c.args[1], c.codes = []byte(lie), []string{shape}
		c.what = fmt.Sprintf("garbage/%s/numkeys=%q", verb, lie)
	case p == 1:
		i := b.counts[g.pick(len(b.counts))]
		var bad []string
		for _, v := range badCounts {
			if !inBounds(v, b.bounds[i]) {
				bad = append(bad, v)
			}
		}
		v := bad[g.pick(len(bad))]
		c.args[i], c.codes = []byte(v), []string{shape}
		c.what = fmt.Sprintf("garbage/%s/count-arg-%d=%q", verb, i, v)
	case p == 2:
		i := b.keys[g.pick(len(b.keys))]
		key := nonKeys[g.pick(len(nonKeys))]
		c.args[i], c.codes = []byte(key), []string{layout}
		c.what = fmt.Sprintf("garbage/%s/key-arg-%d=%q", verb, i, key)
	case p == 3 && len(b.ids) > 0:
		g.lifeID(&c, b)
		c.what = "garbage/" + verb + c.what
	case p == 3 || p == 4:
		t := []string{"string", "list", "set", "hash", "stream"}[g.pick(5)]
		b = g.lifeTemplate(g.pick(6), g.space("junk", 10)+"-"+t, g.lifeJunkID())
		c.args, c.codes = b.args, []string{wrongTyp}
		c.what = fmt.Sprintf("garbage/%s/%s-keys", strings.ToLower(string(b.args[0])), t)
	default:
		// the planted row: pending, so not active under any attempt, not
		// dead; or a job of no row
		k, id := 1+g.pick(3), g.lifeJunkID()
		if g.pick(4) == 0 {
			k = 5
		}
		b = g.lifeTemplate(k, g.space("junk", 11)+"l", id)
		c.args, c.codes = b.args, []string{map[int]string{1: lease, 2: lease, 3: lease, 5: state}[k]}
		if g.pick(3) == 0 {
			b = g.lifeTemplate(k, g.space("junk", 11)+"l", g.mint(ids.Job))
			c.args, c.codes = b.args, []string{noJob}
		}
		c.what = fmt.Sprintf("garbage/%s/state-%s", strings.ToLower(string(b.args[0])), c.codes[0])
	}
	return c
}

// lifeSuccess checks that r has the shape of a lifecycle verb's success.
func lifeSuccess(verb string, args [][]byte, r reply, s *verbStats) error {
	switch verb {
	case "EMQ.CLAIM":
		return claimSuccess(args, r, s)
	case "EMQ.SETTLE":
		n, _ := strconv.Atoi(string(args[9]))
		if r.kind != '*' || len(r.elems) != 2 || r.elems[0].kind != '*' || len(r.elems[0].elems) != n {
			return fmt.Errorf("want [the n=%d settlements' replies, the claim's], got %s", n, r)
		}
		at := 10 // the first settlement's kind
		for i, e := range r.elems[0].elems {
			code, _, _ := strings.Cut(e.text, " ")
			kind := strings.ToUpper(string(args[at]))
			at += map[string]int{"ACK": 4, "DONE": 5, "FAIL": 5, "RELEASE": 3}[kind] // the call was accepted: a kind it knows
			switch {
			case e.isError() && moduleCodes[code]:
				s.settlesRefused++
			case kind == "FAIL" && e.kind == '$' && (e.text == "pending" || e.text == "delayed" || e.text == "dead"):
				s.failed++
			case kind == "RELEASE" && e.String() == "1":
				s.released++
			case kind != "FAIL" && kind != "RELEASE" && e.String() == "1":
				s.acked++
			default:
				return fmt.Errorf("settlement %d (%s): want 1 for ACK, DONE and RELEASE, pending, delayed or dead for FAIL, or a refusal, got %s", i+1, kind, e)
			}
		}
		return claimSuccess(args, r.elems[1], s)
	case "EMQ.EXTEND":
		if r.kind != ':' || r.n <= unixMs2020 {
			return fmt.Errorf("want a deadline in Unix ms, got %s", r)
		}
	case "EMQ.ACK", "EMQ.REVIVE":
		if r.String() != "1" {
			return fmt.Errorf("want 1, got %s", r)
		}
	case "EMQ.FAIL":
		if r.kind != '$' || r.text != "pending" && r.text != "delayed" && r.text != "dead" {
			return fmt.Errorf("want pending, delayed or dead, got %s", r)
		}
	case "EMQ.SCHEDULE", "EMQ.REMOVE", "EMQ.PAUSE", "EMQ.RESUME", "EMQ.EVENTS", "EMQ.UNREPEAT":
		if r.kind != ':' || r.n != 0 && r.n != 1 {
			return fmt.Errorf("want 0 or 1, got %s", r)
		}
		switch verb {
		case "EMQ.SCHEDULE":
			s.admission(args[8], r.n)
		case "EMQ.REMOVE":
			s.removed += r.n
		}
	case "EMQ.REPEAT":
		if r.kind != ':' || r.n != 0 && r.n <= unixMs2020 {
			return fmt.Errorf("want the first tick in Unix ms, or 0, got %s", r)
		}
		if r.n != 0 && r.n < time.Now().UnixMilli()+1000 {
			s.ticking++
		}
	case "EMQ.REPEATS":
		if r.kind != '*' || r.null {
			return fmt.Errorf("want a list of the queue's schedules, got %s", r)
		}
		for _, e := range r.elems {
			if e.kind != '*' || len(e.elems) != 24 || e.elems[0].text != "name" {
				return fmt.Errorf("want each schedule as name and the row's 11 fields, got %s", e)
			}
		}
	case "EMQ.LIMIT":
		if r.String() != "1" {
			return fmt.Errorf("want 1, got %s", r)
		}
	case "EMQ.ENQUEUEMANY":
		if r.kind != '*' || len(r.elems) != (len(args)-6)/2 {
			return fmt.Errorf("want a reply per job, got %s", r)
		}
		for i, e := range r.elems {
			code, _, _ := strings.Cut(e.text, " ")
			switch {
			case e.isError() && moduleCodes[code]:
			case e.kind == ':' && (e.n == 0 || e.n == 1):
				s.admission(args[5], e.n)
			default:
				return fmt.Errorf("job %d: want 0, 1 or a refusal, got %s", i+1, e)
			}
		}
	case "EMQ.STALLED.CHECK":
		limit, _ := strconv.ParseInt(string(args[4]), 10, 64)
		if r.kind != ':' || r.n < 0 || r.n > limit {
			return fmt.Errorf("want 0 to limit=%d, got %s", limit, r)
		}
	}
	return nil
}

// admission counts a job an admission at atMs admitted (n 1: into pending,
// or delayed, scheduled) or met as a duplicate (n 0).
func (s *verbStats) admission(atMs []byte, n int64) {
	at, _ := strconv.ParseInt(string(atMs), 10, 64)
	switch {
	case n == 0:
		s.duplicates++
	case admitted(at) == "delayed":
		s.scheduled++
	default:
		s.admitted++
	}
}

// claimSuccess checks that r has the shape of a claim's reply — EMQ.CLAIM's,
// or EMQ.SETTLE's claim part — and counts its jobs.
func claimSuccess(args [][]byte, r reply, s *verbStats) error {
	n, _ := strconv.Atoi(string(args[7]))
	if r.kind != '*' || !r.null && (len(r.elems) == 0 || len(r.elems) > n) {
		return fmt.Errorf("want nil or 1 to count=%d jobs, got %s", n, r)
	}
	for _, e := range r.elems {
		if e.kind != '*' || len(e.elems) != 3 || e.elems[0].kind != '$' || e.elems[1].kind != ':' || e.elems[1].n < 1 || e.elems[2].kind != '$' {
			return fmt.Errorf("want [id attempt payload] for each job, got %s", e)
		}
		if _, ok := ids.Parse(ids.Job, []byte(e.elems[0].text)); !ok {
			return fmt.Errorf("a claimed id that is no JOB id: %s", e)
		}
	}
	s.claimed += int64(len(r.elems))
	return nil
}

// verifyLife checks every lifecycle queue g used: an id in at most one set,
// in the set of its row's state; a row in state done in no set; and, of the
// valid space, every job admitted and not acknowledged still there.
func verifyLife(t *testing.T, c *conn, g *gen) {
	jobs := 0
	for _, space := range []string{"valid", "mutant"} {
		m := g.lifeOf(space)
		for queue := range m.queues {
			jobs += verifyQueue(t, c, queue)
		}
		if space != "valid" {
			continue
		}
		for _, j := range m.jobs {
			r, err := c.str("HGET", keys.Job(j.queue, j.id), "state")
			require.NoError(t, err)
			assert.Contains(t, lifeSets, r.text, "job %s, admitted and never acknowledged, is in a set", j.id)
		}
		t.Logf("worker %s: %d lifecycle jobs live, %d acknowledged, %d removed", g.name, len(m.jobs), m.acked, m.removed)
	}
	t.Logf("worker %s: the lifecycle queues' %d job rows and sets agree", g.name, jobs)
}

// verifyQueue checks the invariants of docs/commands.md on one queue and
// returns how many job rows it holds.
func verifyQueue(t *testing.T, c *conn, queue string) int {
	in := map[string]string{}
	for _, set := range lifeSets {
		r, err := c.str("ZRANGE", keys.Set(queue, set), "0", "-1")
		require.NoError(t, err)
		for _, e := range r.elems {
			assert.Empty(t, in[e.text], "job %s of %s is in %s and %s", e.text, queue, in[e.text], set)
			in[e.text] = set
		}
	}
	rows := map[string]string{}
	for cursor := "0"; ; {
		r, err := c.str("SCAN", cursor, "MATCH", keys.Job(queue, "*"), "COUNT", "1000")
		require.NoError(t, err)
		for _, k := range r.elems[1].elems {
			s, err := c.str("HGET", k.text, "state")
			require.NoError(t, err)
			rows[k.text[len(keys.Job(queue, "")):]] = s.text
		}
		if cursor = r.elems[0].text; cursor == "0" {
			break
		}
	}
	for id, set := range in {
		assert.Equal(t, set, rows[id], "job %s of %s: the row's state is its set", id, queue)
	}
	for id, st := range rows {
		switch st {
		case "done":
			assert.Empty(t, in[id], "job %s of %s is done, in no set", id, queue)
		default:
			assert.Equal(t, st, in[id], "job %s of %s: in the set of its state", id, queue)
		}
	}
	return len(rows)
}

// lifeCountsReplies holds INFO emq's lifecycle counters to what the
// replies said, and logs what the lifecycle calls met.
func lifeCountsReplies(t *testing.T, delta func(string) int64, total tally) {
	ok := func(verb string) int64 { return total.verb(verb).calls - total.verb(verb).refused }
	settle := total.verb("EMQ.SETTLE")
	assert.Equal(t, total.verb("EMQ.CLAIM").claimed+settle.claimed, delta("jobs_claimed"), "emq_jobs_claimed: the jobs the claims replied")
	assert.Equal(t, ok("EMQ.EXTEND"), delta("jobs_extended"))
	assert.Equal(t, ok("EMQ.ACK")+settle.acked, delta("jobs_acked"))
	assert.Equal(t, ok("EMQ.REVIVE"), delta("jobs_revived"))
	assert.Equal(t, settle.acked+settle.failed+settle.released, delta("settled"), "emq_settled: the settlements applied")
	assert.Equal(t, settle.released, delta("jobs_released"), "emq_jobs_released: the settlements released")
	assert.Equal(t, settle.settlesRefused, delta("settles_refused"))
	assert.Equal(t, total.verb("EMQ.REMOVE").removed, delta("jobs_removed"))
	assert.Equal(t, total.verb("EMQ.SCHEDULE").scheduled+total.verb("EMQ.ENQUEUEMANY").scheduled, delta("jobs_scheduled"))
	failDead := ok("EMQ.FAIL") + settle.failed - delta("jobs_retried") - delta("jobs_delayed") // FAILs accepted neither retrying nor delaying
	assert.True(t, failDead >= 0 && failDead <= delta("jobs_dead"), "every FAIL accepted retried, delayed or killed its job")
	var calls []string
	for _, v := range []string{"EMQ.CLAIM", "EMQ.EXTEND", "EMQ.ACK", "EMQ.FAIL", "EMQ.STALLED.CHECK", "EMQ.REVIVE", "EMQ.SETTLE",
		"EMQ.SCHEDULE", "EMQ.ENQUEUEMANY", "EMQ.REMOVE", "EMQ.PAUSE", "EMQ.RESUME", "EMQ.LIMIT", "EMQ.EVENTS",
		"EMQ.REPEAT", "EMQ.UNREPEAT", "EMQ.REPEATS"} {
		calls = append(calls, fmt.Sprintf("%s %d/%d", v, total.verb(v).calls, total.verb(v).refused))
	}
	if total.verb("EMQ.REPEAT").ticking >= 3 { // and one, not unset before a claim, would do
		assert.Positive(t, delta("repeats_ticked"), "the schedules set to tick within a second made jobs in the claims after them")
	}
	t.Logf("the lifecycle, calls/refused: %s; %d jobs claimed, %d promoted, %d stalls requeued, %d dead, %d revived, %d released, %d dangling dropped, %d ticks made",
		strings.Join(calls, ", "), delta("jobs_claimed"), delta("jobs_promoted"), delta("stalls_requeued"), delta("jobs_dead"),
		delta("jobs_revived"), delta("jobs_released"), delta("dangling_dropped"), delta("repeats_ticked"))
}
