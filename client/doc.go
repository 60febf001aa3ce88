// Package client calls the EMQ verbs from Go, over a valkey-go client, and
// falls back to the compositions of built-in commands the verbs replace on
// nodes that do not have the emq module loaded.
//
// # Usage
//
//	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	...
//	c := client.New(vk)
//	minter, _ := ids.NewMinter(node)
//
//	admitted, err := c.Enqueue(ctx, "orders", minter.Mint(ids.Job), payload)
//	sids, err := c.Append(ctx, "audit", "events", []client.Entry{
//		{ID: minter.Mint(ids.Evt), Fields: []client.Field{{Name: "kind", Value: "created"}}},
//	})
//	sid, err := c.Publish(ctx, "orders", client.Envelope{
//		ID: minter.Mint(ids.Evt), Msg: minter.Mint(ids.Msg), Payload: payload,
//	})
//	failures, err := c.FailuresIncr(ctx, "orders", sub, msg, time.Minute)
//
// # Queues and workers
//
// A [Queue] is a handle on one job queue with its [Policy] — the lease,
// the attempts before a job is dead, the backoff after a failure
// ([Exponential] gives one with jitter) and how long finished jobs are
// kept. [Queue.Enqueue] mints the job's id; [Queue.EnqueueMany] admits a
// batch in one pipeline; [Queue.Claim] and [Queue.BClaim] hand out jobs
// ([Job]), each under a lease whose token is its attempt; [Job.Extend], [Job.Ack],
// [Job.Fail] and [Job.FailAfter] present it, and a stale one is refused
// with EMQLEASE (errors.Is(err, emqerrors.Lease)); [Queue.Revive] brings
// a dead job back and [Queue.StalledCheck] requeues expired leases.
//
//	q, err := c.Queue("emails", minter, client.Policy{Lease: 30 * time.Second, MaxAttempts: 5})
//	id, err := q.Enqueue(ctx, payload)
//	err = q.Work(ctx, func(ctx context.Context, j *client.Job) error {
//		return send(ctx, j.Payload) // nil acks; an error or a panic fails with backoff
//	}, client.WorkOptions{Concurrency: 16})
//
// [Queue.Work] is the worker runner. One call at a time settles the jobs
// that finished since the last — ack on success, fail with the policy's
// backoff on an error or a panic — and claims as many as there are free
// handler slots and room in a small prefetch buffer
// ([WorkOptions].Prefetch), so a slot that frees starts its next job
// without waiting on a round trip; when a claim finds the queue empty, one
// blocking claim waits on a dedicated connection. One scheduler extends
// the leases of the jobs the worker holds, those due together in one
// pipeline; a handler's context ends with [ErrLeaseLost] when the server
// refuses, or when no extension was confirmed before the last confirmed
// deadline less a tenth of the lease — a worker cut off from the server
// stops before another may take its job. On ctx's end a graceful stop: no
// more claims, the waiting claim ended at once (CLIENT UNBLOCK), the
// buffered jobs handed back, the running handlers given
// [WorkOptions].Grace to finish, the rest failed with backoff 0 (context
// cause [ErrShutdown]) for another worker to claim at once. It logs
// through log/slog ([WorkOptions].Logger).
//
// [Client.Consume] is the bus consumer of a topic's stream: XREADGROUP,
// one XACK per batch, EMQ.FAILURES.INCR per failure, [Client.Park] once a
// message's failures reach the limit, and XAUTOCLAIM of entries left
// unacknowledged past a bound (a dead consumer's, or a failed one's).
//
// # Lifecycle events
//
// A queue whose events are on (EMQ.EVENTS) appends one entry per
// transition to its stream emq:{<queue>}:events, in the turn that makes
// it, trimmed to about its cap. [Queue.Events] yields them as typed
// [Event] values (XREAD), from a stream ID — "$" for new ones, "0" for
// all, or the last one handled, so a listener that restarts misses
// nothing the stream still holds. [Queue.EventGroup] shares them among the
// consumers of a group (XREADGROUP): each event goes to one, is
// acknowledged once the loop body is done with it, and comes back — to
// the same consumer name, or to another past [GroupOptions].Reclaim —
// when it was not. Both block at most [DefaultPoll] per read and stop at
// once when ctx ends. They use only built-ins, so every node serves them.
//
// # Repeat schedules
//
// [Queue.Repeat] sets a named schedule — cron, a descriptor or "@every
// d" — whose every tick makes one job; [Queue.Schedules] lists them and
// [Queue.Unrepeat] removes one. A tick's job id is decided by the tick and
// the schedule's number ([emq.TickID]), so a tick made twice is one job.
// With the module the server makes the jobs, in every claim turn of the
// queue and by its timer while workers wait. On a node without it the
// client sets, lists and removes schedules with scripts that write the
// verbs' rows (REPEAT first reads the server's clock: two round trips),
// and the worker makes the ticks: due.lua reads the due schedules and the
// server's clock, the client computes each tick's job id and next tick
// with the module's own code (package emq), and tick.lua writes what the
// claim turn would — the job row, its pending entry, its added event, the
// schedule's made, last and next — unless the schedule's score moved
// since the read (another client made the tick, or the schedule was
// replaced or removed). What that cannot promise:
//
//   - Ticks are made only while some client runs them: with no worker on
//     the queue, none are; the next run makes one job for the first tick
//     missed, however many were (as the server does after a restart).
//   - A tick is made when a client's run comes, not at its time: late by
//     up to the run's interval, and in a call of its own, so a claim takes
//     the job on its next turn rather than in the turn that made it.
//   - The next tick is computed from the server's clock read one round
//     trip before the write; a tick that comes due in between waits for
//     the next run. The client's copy of the rule (package emq, robfig/cron)
//     decides it: keep the client at the module's version.
//   - Clients that run ticks at once make each tick once, but race for
//     it: the losers' reads are wasted. INFO emq counts none of it.
//   - The scripts touch the schedule and job rows, which are not among
//     their keys (as CLAIM's script does).
//
// # Round trips per job
//
// A round trip costs the server more than the verb it carries, so the
// runner spends few:
//
//   - Settle and claim: one EMQ.SETTLE per batch. The acks and fails of
//     the jobs that finished while the last call was out go with the
//     claim of the next jobs; the claim asks for the free slots and as
//     many more as the slots finish in a round trip, up to
//     [WorkOptions].Prefetch.
//   - Wait: one EMQ.BCLAIM, only while the queue is empty, on a dedicated
//     connection of valkey-go's pool, costing nothing while it waits; the
//     outcomes of jobs that finish meanwhile go in settle calls that
//     claim nothing.
//   - Extend: one pipeline for the held jobs whose renewal is due, every
//     [WorkOptions].Renew of the lease (a third by default); none for a
//     job shorter than that.
//   - Enqueue: one, or 1/k with EnqueueMany of k (one pipeline).
//
// Measured (TestWorkDeliversEachJobOnce: 10,000 quick jobs, 16 workers of
// 8 slots, counting what the client sends): 0.06 commands in 0.06 round
// trips per job from claim to ack natively, where the runner of version
// 0.2 sent 1.4 commands in 1.4 round trips; on the scripts 1.06 commands
// in 0.06 round trips. BenchmarkWork (make bench-work) reports the jobs/s,
// allocations and round trips per job at concurrency 1, 8 and 64. On a
// node without the module the round trips are the same, the settle step
// one pipeline of an EVALSHA per ack or fail and one of the claim's (plus
// one EVAL the first time the node has not cached a script), except the
// wait: it polls, one claim per 10 ms doubling to 250 ms while the queue
// is empty.
//
// The consumer spends one XREADGROUP and one XACK per batch, one
// EMQ.FAILURES.INCR per failure and one park per parked message. Every
// node is asked EMQ.CAPS (a cluster, CLUSTER SLOTS) once per
// [DefaultRecheck].
//
// Keys follow the layouts of package [keys] and are declared as keys to
// valkey-go, so a cluster client routes each call to the node serving its
// queue or topic name.
//
// # Refusals
//
// A refusal is a [*errors.Refusal] (package github.com/echomq/emq/errors)
// carrying a code of docs/commands.md's refusals, so callers match with the
// standard library:
//
//	if errors.Is(err, emqerrors.Kind) { … }
//
// The job lifecycle's refusals come the same way: EMQNOJOB, EMQLEASE and
// EMQSTATE ([emqerrors.NoJob], [emqerrors.Lease], [emqerrors.State]),
// and the server's own NOGROUP and NOPERM ([emqerrors.NoGroup],
// [emqerrors.NoPerm]).
//
// Before sending, the client runs the module's own argument checks on the
// command ([emq.Verb.CheckCall]: shape, key layouts, id namespaces,
// agreement, envelope) and the order within a batch, so those refusals are
// the same on every node, fallback or not, and nothing is written.
// Refusals only the server can decide (WRONGTYPE, a stream's top, a stored
// count) come back from the server, parsed by their first word.
// [Queue.Work] runs the checks on its policy's numbers once, when it
// starts, and refuses a policy out of the verbs' range there; the rest of
// its calls is made of the ids and attempts of jobs it claimed.
//
// # Native or fallback, per node
//
// Before a verb's first call on a node the client asks that node EMQ.CAPS
// and uses the verb natively when its token is listed. A node without the
// module answers "unknown command"; there the client runs the composition
// the verb replaces:
//
//   - Enqueue: EVALSHA of [AdmitScript].
//   - Append and Publish: one XADD per entry,
//     XADD <key> <stream ID> id <EVT id> <field> <value> …
//   - FailuresIncr: EVALSHA of [FailuresIncrScript], INCR then EXPIRE of the
//     TTL rounded up to whole seconds.
//   - The job lifecycle (Claim, Extend, Ack, Fail, StalledCheck, Revive)
//     and Park: EVALSHA of the verb's script (below), atomic as the verb.
//   - BClaim: a claim, then polling with a capped backoff (a script
//     cannot block).
//   - Work's EMQ.SETTLE: one pipeline of the settlements' scripts and the
//     claim's; a script the node has not cached runs again after the
//     rest, so on a node's first calls a job failed back at once may miss
//     the same call's claim.
//   - EnqueueMany: one pipeline of EVALSHA of [AdmitScript].
//   - Repeat, Unrepeat and Schedules: EVALSHA of their scripts (Repeat's
//     after one that reads the server's clock); the ticks: see "Repeat
//     schedules".
//
// For valid input the results are the same: the same keys, values, stream
// IDs, replies and refusal codes. The answer is remembered per node — one
// entry for a standalone or sentinel client, one per node address for a
// cluster client, which reads CLUSTER SLOTS (the map valkey-go routes by)
// to learn which node serves a call's slot and asks that node through
// valkey-go's own connection to it. An answer is trusted for [DefaultRecheck]
// ([WithRecheck] changes it). When a node believed to serve a verb answers
// it with "unknown command" — a failover to a node without the module, a
// slot moved to one — the verb did not run, so the client runs the fallback
// for that call and asks again on the next. [Client.Native] reports the
// decision for a name.
//
// # What the fallback does not give
//
// The verbs validate everything, then write everything in one server turn;
// the compositions do not:
//
//   - Append's batch is not atomic: its entries are separate XADDs, stopped
//     at the first that fails. Another client's entries may land between
//     them, and a failure after the first (a lost connection, a concurrent
//     writer passing a later entry's ID) leaves the entries before it
//     appended; Append returns their IDs with the error. The module's limit
//     emq.append-max-entries is not applied.
//   - Enqueue's script asks EXISTS, not the key's type: a job key holding
//     another type is reported as a duplicate (false) rather than WRONGTYPE,
//     and a pending key holding another type is refused with WRONGTYPE only
//     after the job row is written.
//   - An EMQORDER refusal of an entry not above the stream's top does not
//     name the top.
//   - Replicas and the AOF receive each of Append's XADDs on its own, not
//     wrapped as one unit (a script's effects are wrapped).
//
// # The job lifecycle and the park as scripts
//
// For the verbs of version 0.2 the package holds the Lua scripts that do
// what each verb does on a server without the module: [ClaimScript],
// [ExtendScript], [AckScript], [FailScript], [StalledCheckScript],
// [ReviveScript] and [ParkScript]. EVALSHA of a script with the verb's
// numkeys, keys and arguments (CLAIM's with the sweep batch appended) makes
// the verb's writes in one server turn and gives its reply; the refusals
// the stored data decides (WRONGTYPE, EMQNOJOB, EMQLEASE, EMQSTATE,
// EMQCOUNT, EMQORDER, NOGROUP) have the verb's text and write nothing. Each
// script's shebang line carries its verb's flags: allow-oom for CLAIM,
// EXTEND, ACK, FAIL and STALLED.CHECK, deny-oom (no flag) for REVIVE and
// PARK; a read-only replica refuses them all. BCLAIM has no script: a
// script cannot block.
//
// CLAIM and STALLED.CHECK write job rows that are not among their keys:
// emq:{<queue>}:job:<JOB id>, built from the pending key. The server does
// not require a script to declare every key it touches, and in a cluster
// those rows share the queue's hash tag, so they are in the call's slot on
// the node that runs it.
//
// Where a script and its verb can be told apart:
//
//   - The scripts do not check the arguments (EMQSHAPE, EMQLAYOUT, EMQKIND):
//     check them first, as the client does for every verb, or a script
//     may fail with a Lua error or write under a malformed key.
//   - CLAIM's nil (nothing claimed) is a null bulk string in RESP2 ($-1)
//     where the verb sends a null array (*-1); in RESP3 both are _.
//   - A derived job row the caller's ACL user may not touch fails the
//     script at the first command on it, with the server's "ERR ACL failure
//     in script: No permissions to access a key", after the call's earlier
//     writes have landed; the verb refuses with NOPERM before writing.
//   - The scripts count nothing in INFO emq (dropped ids, refusals, calls);
//     the server counts them as EVALSHA calls and, by code, in errorstats.
//   - "Now" is TIME read when the script needs it; the verb reads its
//     clock once per command.
//   - A job row's attempts field is read with Lua's tonumber, which also
//     takes forms the verbs never write (hex, spaces, fractions); a row
//     without attempts counts 0 and one without payload is claimed with a
//     nil payload.
//   - PARK builds the dead-letter entry as one Lua call: a source entry
//     of more than about 4,000 field/value pairs exceeds Lua's argument
//     limit ("too many results to unpack") and the script fails, writing
//     nothing.
package client
