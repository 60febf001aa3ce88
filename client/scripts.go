package client

import (
	_ "embed"
	"strings"
)

// The scripts of the job lifecycle and the park, one per verb: each
// does, in one server turn, what its verb does for arguments the verb's own
// checks accept — the same writes, the same reply, the same refusals for
// what only the stored data decides (WRONGTYPE, EMQNOJOB, EMQLEASE,
// EMQSTATE, EMQCOUNT, EMQORDER, NOGROUP), each decided before the first
// write. The shape, layout and id checks (EMQSHAPE, EMQLAYOUT, EMQKIND)
// are not in the scripts: run the module's checks on the verb's arguments
// before sending.
//
// A script takes the verb's arguments from numkeys on, so
//
//	EMQ.FAIL 5 <job> <pending> <active> <delayed> <dead> <attempt> <backoff_ms> <max_attempts> <error>
//
// is
//
//	EVALSHA <sha1 of FailScript> 5 <job> <pending> <active> <delayed> <dead> <attempt> <backoff_ms> <max_attempts> <error>
//
// ClaimScript alone takes one argument more, the last: the sweep batch,
// which the module reads from its config emq.sweep-batch
// ([DefaultSweepBatch] when left out).
//
// The time is the server's clock (TIME), and a script's writes replicate
// as their effects, wrapped in MULTI/EXEC, as the verbs' do. The package
// docs list where a script and its verb can still be told apart.
var (
	// ClaimScript is EMQ.CLAIM: KEYS pending, active, delayed, dead; ARGV
	// lease_ms, count, max_attempts, sweep batch. It replies an array of
	// [JOB id, attempt, payload], or nil when it claims nothing. The job
	// rows it touches are not among its KEYS: it derives them from the
	// pending key, in the queue's hash tag (see the package docs).
	ClaimScript = verbScript(claimLua)
	// ExtendScript is EMQ.EXTEND: KEYS job, active; ARGV attempt, lease_ms.
	// It replies the new lease deadline (Unix ms).
	ExtendScript = verbScript(extendLua)
	// AckScript is EMQ.ACK: KEYS job, active; ARGV attempt, keep_ms. It
	// replies 1.
	AckScript = verbScript(ackLua)
	// FailScript is EMQ.FAIL: KEYS job, pending, active, delayed, dead;
	// ARGV attempt, backoff_ms, max_attempts, error. It replies the job's
	// new state: pending, delayed or dead.
	FailScript = verbScript(failLua)
	// StalledCheckScript is EMQ.STALLED.CHECK: KEYS pending, active; ARGV
	// limit. It replies how many jobs it requeued.
	StalledCheckScript = verbScript(stalledCheckLua)
	// ReviveScript is EMQ.REVIVE: KEYS job, pending, dead. It replies 1.
	ReviveScript = verbScript(reviveLua)
	// ParkScript is EMQ.PARK: KEYS source stream, dead-letter stream,
	// failure key; ARGV group, consumer, entry stream ID, EVT id, reason.
	// It replies the dead-letter entry's stream ID, or nil when the entry
	// is not pending (a retried park).
	ParkScript = verbScript(parkLua)
)

// DefaultSweepBatch is the sweep batch of [ClaimScript] when its last
// argument is left out, the default of the module's emq.sweep-batch.
const DefaultSweepBatch = 100

var (
	//go:embed lua/lib.lua
	libLua string
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
)

// verbScript puts the shared library after the verb file's shebang line,
// which must stay first: it carries the script's flags.
func verbScript(file string) string {
	shebang, body, _ := strings.Cut(file, "\n")
	return shebang + "\n" + libLua + body
}
