package client

import (
	_ "embed"
	"strings"
)

// The scripts of the verbs, one per verb but BCLAIM (a script cannot
// block) and the schedules' (a script cannot read a cron expression): each
// does, in one server turn, what its verb does for arguments the verb's own
// checks accept — the same writes, the same reply, the same lifecycle
// events, the same refusals for what only the stored data decides
// (WRONGTYPE, EMQNOJOB, EMQLEASE, EMQSTATE, EMQCOUNT, EMQORDER, NOGROUP),
// each decided before the first write. The shape, layout and id checks
// (EMQSHAPE, EMQLAYOUT, EMQKIND) are not in the scripts: run the module's
// checks on the verb's arguments before sending.
//
// A script takes the verb's arguments from numkeys on, so
//
//	EMQ.FAIL 5 <job> <pending> <active> <delayed> <dead> <attempt> <backoff_ms> <max_attempts> <error>
//
// is
//
//	EVALSHA <sha1 of FailScript> 5 <job> <pending> <active> <delayed> <dead> <attempt> <backoff_ms> <max_attempts> <error>
//
// ClaimScript and SettleScript take one argument more, the last: the sweep
// batch, which the module reads from its config emq.sweep-batch
// ([DefaultSweepBatch] when left out).
//
// The time is the server's clock (TIME), and a script's writes replicate
// as their effects, wrapped in MULTI/EXEC, as the verbs' do. The package
// docs list where a script and its verb can still be told apart.
var (
	// ClaimScript is EMQ.CLAIM: KEYS pending, active, delayed, dead; ARGV
	// lease_ms, count, max_attempts, sweep batch. It replies an array of
	// [JOB id, attempt, payload], or nil when it claims nothing. The keys
	// it touches besides its KEYS — the job rows, the queue's config,
	// limiter and events — it derives from the pending key, in the queue's
	// hash tag (see the package docs).
	ClaimScript = verbScript(claimLua, turnLua)
	// ExtendScript is EMQ.EXTEND: KEYS job, active; ARGV attempt, lease_ms.
	// It replies the new lease deadline (Unix ms).
	ExtendScript = verbScript(extendLua)
	// AckScript is EMQ.ACK: KEYS job, active; ARGV attempt, keep_ms and an
	// optional result. It replies 1.
	AckScript = verbScript(ackLua)
	// FailScript is EMQ.FAIL: KEYS job, pending, active, delayed, dead;
	// ARGV attempt, backoff_ms, max_attempts, error. It replies the job's
	// new state: pending, delayed or dead.
	FailScript = verbScript(failLua)
	// StalledCheckScript is EMQ.STALLED.CHECK: KEYS pending, active; ARGV
	// limit. It replies how many jobs it requeued.
	StalledCheckScript = verbScript(stalledCheckLua, turnLua)
	// ReviveScript is EMQ.REVIVE: KEYS job, pending, dead. It replies 1.
	ReviveScript = verbScript(reviveLua)
	// ParkScript is EMQ.PARK: KEYS source stream, dead-letter stream,
	// failure key; ARGV group, consumer, entry stream ID, EVT id, reason.
	// It replies the dead-letter entry's stream ID, or nil when the entry
	// is not pending (a retried park).
	ParkScript = verbScript(parkLua)
	// ScheduleScript is EMQ.SCHEDULE: KEYS job, pending, delayed; ARGV JOB
	// id, payload, priority, at_ms. It replies 1, or 0 when the job exists.
	ScheduleScript = verbScript(scheduleLua)
	// EnqueueManyScript is EMQ.ENQUEUEMANY: KEYS pending, delayed; ARGV
	// priority, at_ms, then JOB id and payload pairs — each pair
	// EMQ.SCHEDULE of that job, its row derived from the pending key. It
	// replies an array, one element per pair: 1; 0 when the job exists or
	// the call admitted its id earlier; a WRONGTYPE error element for a
	// row of another type, that job alone refused.
	EnqueueManyScript = verbScript(enqueueManyLua)
	// PauseScript is EMQ.PAUSE: KEYS config, pending. It replies 1, or 0
	// when the queue was paused already.
	PauseScript = verbScript(pauseLua)
	// ResumeScript is EMQ.RESUME: KEYS config, pending. It replies 1, or 0
	// when the queue was not paused.
	ResumeScript = verbScript(resumeLua)
	// LimitScript is EMQ.LIMIT: KEYS config, pending; ARGV max, window_ms.
	// It replies 1.
	LimitScript = verbScript(limitLua)
	// EventsScript is EMQ.EVENTS: KEYS config, events; ARGV cap. It
	// replies 1, or 0 when the cap is unchanged.
	EventsScript = verbScript(eventsLua)
	// RemoveScript is EMQ.REMOVE: KEYS job, pending, active, delayed,
	// dead. It replies 1, or 0 when there is no such job.
	RemoveScript = verbScript(removeLua)
	// SettleScript is EMQ.SETTLE: KEYS pending, active, delayed, dead;
	// ARGV lease_ms, count, max_attempts, n, the n settlements, sweep
	// batch. It replies [[one reply per settlement], the claim's reply].
	SettleScript = verbScript(settleLua, turnLua)
)

// DefaultSweepBatch is the sweep batch of [ClaimScript] and [SettleScript]
// when their last argument is left out, the default of the module's
// emq.sweep-batch.
const DefaultSweepBatch = 100

var (
	//go:embed lua/lib.lua
	libLua string
	//go:embed lua/turn.lua
	turnLua string
	//go:embed lua/claim.lua
	claimLua string
	//go:embed lua/extend.lua
	extendLua string
	//go:embed lua/ack.lua
	ackLua string
	//go:embed lua/fail.lua
	failLua string
	//go:embed lua/stalled_check.lua
	stalledCheckLua string
	//go:embed lua/revive.lua
	reviveLua string
	//go:embed lua/park.lua
	parkLua string
	//go:embed lua/enqueue.lua
	enqueueLua string
	//go:embed lua/schedule.lua
	scheduleLua string
	//go:embed lua/enqueue_many.lua
	enqueueManyLua string
	//go:embed lua/pause.lua
	pauseLua string
	//go:embed lua/resume.lua
	resumeLua string
	//go:embed lua/limit.lua
	limitLua string
	//go:embed lua/events.lua
	eventsLua string
	//go:embed lua/remove.lua
	removeLua string
	//go:embed lua/settle.lua
	settleLua string
)

// verbScript puts the shared library, then libs, after the verb file's
// shebang line, which must stay first: it carries the script's flags.
func verbScript(file string, libs ...string) string {
	shebang, body, _ := strings.Cut(file, "\n")
	return shebang + "\n" + libLua + strings.Join(libs, "") + body
}
