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
// The valkey-go client is the caller's, and so is how it reaches the
// server: TLS (ClientOption.TLSConfig), Sentinel (ClientOption.Sentinel), a
// database other than 0 (ClientOption.SelectDB; every call stays in it,
// Work's blocking claim and the fallback scripts too, and a queue of one
// name in two databases is two queues). Its ACL user needs the grants
// docs/commands.md lists ("ACL, per server").
//
// # Queues and workers
//
// A [Queue] is a handle on one job queue with its [Policy] — the lease,
// the attempts before a job is dead, the backoff after a failure
// ([Exponential] gives one with jitter) and how long finished jobs, and
// their results, are kept. [Queue.Enqueue] mints the job's id;
// [Queue.EnqueueMany] admits a batch in one pipeline, one EMQ.ENQUEUEMANY
// per 256 jobs; [Queue.Claim] and [Queue.BClaim] hand out jobs ([Job]),
// each under a lease whose token is its attempt; [Job.Extend], [Job.Ack],
// [Job.AckResult], [Job.Fail], [Job.FailAfter] and [Job.Release] (back
// unstarted, the attempt not spent) present it, and a stale one is refused
// with EMQLEASE (errors.Is(err, emqerrors.Lease));
// [Queue.Settle] settles a batch of
// finished jobs and claims the next in one round trip; [Queue.Revive]
// brings a dead job back, [Queue.Remove] deletes one in any state and
// [Queue.StalledCheck] requeues expired leases. [Queue.Job] reads a job:
// its state, attempts, priority, payload, last error, result and the time
// its set records; [Queue.JobUpTo] leaves a payload, result or error
// above a limit unread — named by its size, none of it read — for a view
// that shows the others.
//
//	q, err := c.Queue("emails", minter, client.Policy{Lease: 30 * time.Second, MaxAttempts: 5})
//	id, err := q.Enqueue(ctx, payload)
//	err = q.Work(ctx, func(ctx context.Context, j *client.Job) error {
//		return send(ctx, j.Payload) // nil acks; an error or a panic fails with backoff
//	}, client.WorkOptions{Concurrency: 16})
//
// # Scheduling, priorities and the queue's settings
//
// Enqueue and EnqueueMany take options (a nil one is ignored): [At] and
// [After] make a job claimable at a time, [Priority] sets its priority —
// claims take the lowest first, and jobs of one priority in the order of
// their ids, the order they were minted; a job keeps its priority through
// every retry, promotion, requeue and revival. With any option Enqueue's
// admission is EMQ.SCHEDULE, without EMQ.ENQUEUE; EnqueueMany's is
// EMQ.ENQUEUEMANY either way, all its jobs at the options' priority and
// time.
//
//	id, err := q.Enqueue(ctx, payload, client.After(time.Minute), client.Priority(1))
//
// [Queue.Pause] stops a queue's claims (they still promote due jobs and
// requeue expired leases) until [Queue.Resume]; [Queue.Limit] caps the
// jobs its claims deliver per window; [Queue.SetEvents] turns on its
// lifecycle events stream, emq:{<queue>}:events, to which every transition
// of its jobs appends an entry in the same server turn (docs/commands.md
// lists the events and their fields). A job's result, given to
// [Job.AckResult], is kept on its row for the policy's Keep; with Keep 0
// the row is deleted on ack, so a result is refused with EMQSHAPE.
//
// [Queue.Work] is the worker runner; it refuses a nil handler, and
// options out of range — a [WorkOptions].Renew outside (0, 0.8), a Poll
// under 1 ms, a Concurrency past [MaxConcurrency] — before it claims
// anything. One call
// at a time settles the jobs that finished since the last — ack on
// success, fail with the policy's backoff on an error (to dead at once when
// it wraps [ErrNoRetry]: a failure no retry could mend) or a panic (the
// job's error "handler panic: <value>", the stack logged) or a
// runtime.Goexit (a new goroutine takes over its slot) — and claims as
// many as there are free handler slots and room in a small prefetch buffer
// ([WorkOptions].Prefetch), so a slot that frees starts its next job
// without waiting on a round trip; when a claim finds the queue empty, one
// blocking claim waits on a dedicated connection of valkey-go's blocking
// pool, whose size bounds how many idle queues of a node one client
// serves at once ([Queue.Work] says how). One scheduler extends
// the leases of the jobs the worker holds, those due together in one
// pipeline; a handler's context ends with [ErrLeaseLost] when the server
// refuses, or when no extension was confirmed before the last confirmed
// deadline less a tenth of the lease — a worker cut off from the server
// stops before another may take its job. A lease counts from the send of
// the call that confirmed it, so a job whose claim came back after its
// renewal was due (a blocking claim that waited, a server that stalled) is
// extended before its handler starts. On ctx's end a graceful stop: no
// more claims, the waiting claim ended at once (its connection closed), the
// buffered jobs released, the running handlers given [WorkOptions].Grace
// to finish, the rest failed with backoff 0 (context cause [ErrShutdown])
// for another worker to claim at once — spending the attempt, as any
// failure does: a handler ran it, so one on its last attempt is dead
// (a Grace above the longest handler spares it). A released job is pending again at
// its priority with its attempt not spent: no handler ran it, so even one
// claimed for its last attempt gets that attempt from the next worker
// (its attempts still count up — they are the lease tokens — and its
// budget counts the released ones out). A claim whose reply is lost —
// the connection ended after the server ran it — spends the attempt it
// handed out although no handler ran it: the worker never learns of the
// job, whose lease passes and whose next claim is its next attempt (one
// claimed for its last attempt goes dead, "lease expired"). A job whose
// lease passed before its claim's reply came back — a [Policy].Lease
// shorter than the round trip — is released at once, its attempt not
// spent, and claimed again, its handler never run, each turn logged
// (WARN): the lease must outlast the network. It logs through log/slog
// ([WorkOptions].Logger). Work, as [Client.Consume], ends when ctx ends,
// not when its valkey client is closed (a closed client's calls fail,
// and it logs them and tries again): cancel ctx and let it return before
// closing the client.
//
// [Client.Consume] is the bus consumer of a topic's stream: XREADGROUP,
// one XACK per batch, EMQ.FAILURES.INCR per failure, [Client.Park] once a
// message's failures reach the limit, and XAUTOCLAIM of entries left
// unacknowledged past a bound (a dead consumer's, or a failed one's).
//
// # Lifecycle events
//
// A queue whose events are on ([Queue.SetEvents]) appends one entry per
// transition to its stream emq:{<queue>}:events, in the turn that makes
// it, trimmed to about its cap. [Queue.Events] yields them as typed
// [Event] values (XREAD), from a stream ID — "$" for new ones, "0" for
// all, or the last one handled, so a listener that restarts misses
// nothing the stream still holds. [Queue.EventGroup] shares them among the
// consumers of a group (XREADGROUP): each event goes to one, is
// acknowledged once the loop body is done with it, and comes back — to
// the same consumer name, or to another past [GroupOptions].Reclaim —
// when it was not. Both block at most [DefaultPoll] per read and stop at
// once when ctx ends, yielding nothing after it — a group's events not
// yielded stay pending. They use only built-ins, so every node serves them.
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
// and the worker makes the ticks while it works (natively it only looks,
// every Poll, whether the node still serves EMQ.REPEAT). It looks when
// the next tick it knows of comes — at least 50 ms and at most Poll
// apart, every Poll while the queue has no tick to come — and at once
// when a Repeat through the same Client sets one of the queue's
// schedules: due.lua reads the due schedules (as a claim turn, only when
// the queue's config holds repeat_seq), the next one's time and the
// server's clock, the client computes each tick's job id and next tick
// with the module's own code (package emq), and tick.lua writes what the
// claim turn would — the job row, its pending entry, its added event, the
// schedule's made, last and next — unless the schedule's score moved
// since the read (another client made the tick, or the schedule was
// replaced or removed). Over maxmemory the server refuses tick.lua (it is
// not allow-oom), as the module holds its ticks back: the worker logs one
// warning and makes the missed ticks' one job once there is room. What
// that cannot promise:
//
//   - Ticks are made only while some client runs them: with no worker on
//     the queue, none are; the next run makes one job for the first tick
//     missed, however many were (as the server does after a restart).
//   - A tick is made when a client's run comes, not at its time: late by
//     up to the run's interval (50 ms at the shortest), and in a call of
//     its own, so a claim takes the job on its next turn rather than in
//     the turn that made it. A schedule another client sets, or replaces
//     to tick sooner, is seen at the worker's next look: within Poll.
//   - The next tick is computed from the server's clock read one round
//     trip before the write; a tick that comes due in between waits for
//     the next run. The client's copy of the rule (package emq, robfig/cron)
//     decides it: keep the client at the module's version.
//   - Clients that run ticks at once make each tick once, but race for
//     it: the losers' reads are wasted. INFO emq counts none of it.
//   - The scripts touch the schedule and job rows, which are not among
//     their keys (as CLAIM's script does).
//
// # One queue over a cluster
//
// A queue lives in one hash slot, so on one node. [Client.Sharded] makes
// one logical queue of N shards, shard i the ordinary queue "<name>#i"
// ([ShardName]) with its own hash tag, so that a cluster spreads it over
// the nodes serving the shards' slots. [Sharded.Enqueue] and
// [Sharded.EnqueueMany] take the shards in turn; [Sharded.Shard] is a
// key's shard, which keeps that key's jobs in order: everything within a
// shard is atomic and first in, first out, nothing spans two.
// [Sharded.Work] works every shard with one set of handler slots: each
// shard has its own settle calls and lease renewals, a dry shard waits in
// a blocking claim of its own on its node, and no shard takes more than
// an even share of the room while others have jobs. [Sharded.Pause] and
// [Sharded.Resume] pause and resume every shard, one call per shard sent
// at once (the shards stop one by one, not in one turn); a limit, the
// events and the schedules are each shard's own ([Sharded.Shards]).
//
//	s, err := c.Sharded("orders", 12, minter, client.Policy{Durability: client.Durability{Replicas: 1}})
//	id, err := s.Enqueue(ctx, payload)             // the next shard in turn
//	id, err = s.Shard(customer).Enqueue(ctx, payload) // a customer's jobs in order
//	err = s.Work(ctx, handle, client.WorkOptions{Concurrency: 32})
//
// [Policy].Durability makes a queue's writes that admit, claim or settle
// jobs wait until replicas hold them (WAIT) or their AOF has them (WAITAOF), in
// the same round trip, and return [ErrNotDurable] when they do not in
// time; [Queue.Admit] retries an enqueue under its id. docs/CLUSTER.md
// says what each level survives, and what a failover did to a running
// sharded queue.
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
//   - Enqueue: one; EnqueueMany: one EMQ.ENQUEUEMANY per 256 jobs, all in
//     one round trip.
//
// Measured (TestWorkDeliversEachJobOnce: 10,000 quick jobs, 16 workers of
// 8 slots, counting what the client sends): 0.06 commands in 0.06 round
// trips per job from claim to ack, natively and on the scripts alike,
// where the runner of version 0.2 sent 1.4 commands in 1.4 round trips.
// BenchmarkWork (make bench-work) reports the jobs/s, allocations and
// round trips per job at concurrency 1, 8 and 64. On a node without the
// module the settle step is one EVALSHA of [SettleScript] (plus one EVAL
// the first time the node has not cached it), and the wait polls, one
// claim per 10 ms doubling to 250 ms while the queue is empty.
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
// # Contexts
//
// A call ends when its context does, as valkey-go's do. valkey-go hands
// the outcome of a connection's dial to every call to that node that
// joined it while it was out, so a context cancelled mid-dial fails those
// calls too, whatever their own contexts ("context canceled"). The calls
// the client makes of itself — a node's EMQ.CAPS, the slot map, a
// worker's schedule ticks and late extensions — run on past their
// caller's cancellation, to a second past its deadline or 10 s, and fail
// none: a worker's stop or a request's end cuts short no other call's
// dial.
//
// # Native or fallback, per node
//
// Before a verb's first call on a node the client asks that node EMQ.CAPS
// and uses the verb natively when its token is listed. A node without the
// module answers "unknown command"; there the client runs the composition
// the verb replaces. So it does on a node whose module lists fewer verbs
// than the client calls — an older module, 0.2's beside this 0.3 client,
// whose claims would ignore the pauses, limits and priorities the client's
// scripts set — for every verb, so that all its calls there keep one
// version's rules (docs/UPGRADING.md):
//
//   - Enqueue: EVALSHA of [AdmitScript]; with options, of [ScheduleScript].
//   - Append and Publish: one XADD per entry,
//     XADD <key> <stream ID> id <EVT id> <field> <value> …
//   - FailuresIncr: EVALSHA of [FailuresIncrScript], INCR then EXPIRE of the
//     TTL rounded up to whole seconds.
//   - The job lifecycle (Claim, Extend, Ack, Fail, StalledCheck, Revive,
//     Remove, Settle), the queue's settings (Pause, Resume, Limit,
//     SetEvents) and Park: EVALSHA of the verb's script (below), atomic as
//     the verb.
//   - BClaim: a claim, then polling with a capped backoff (a script
//     cannot block).
//   - Settle, and Work's settle step: EVALSHA of [SettleScript], one
//     command, atomic as the verb.
//   - EnqueueMany: one pipeline of EVALSHA of [EnqueueManyScript], one per
//     256 jobs.
//   - Job: no verb; the same MULTI/EXEC of reads on every node.
//   - Repeat, Unrepeat and Schedules: EVALSHA of their scripts (Repeat's
//     after one that reads the server's clock); the ticks: see "Repeat
//     schedules".
//
// For valid input the results are the same: the same keys, values, stream
// IDs, replies and refusal codes. The answer is remembered per node — one
// entry for a standalone or sentinel client, one per node address for a
// cluster client, which reads CLUSTER SLOTS (the map valkey-go routes by;
// asked of three nodes at once, the first answer taken, so a stalled node
// holds nothing up) to learn which node serves a call's slot and asks that
// node through valkey-go's own connection to it. An answer is trusted for [DefaultRecheck]
// ([WithRecheck] changes it). When a node believed to serve a verb answers
// it with "unknown command" — a failover to a node without the module, a
// slot moved to one — or with a verb's arity refusal — a node restarted
// with an older module, whose verb takes fewer arguments — the verb did not
// run, so the client runs the fallback for that call and asks again on the
// next. [Client.Native] reports the
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
//   - An EMQORDER refusal of an entry not above the stream's top does not
//     name the top.
//   - Replicas and the AOF receive each of Append's XADDs on its own, not
//     wrapped as one unit (a script's effects are wrapped).
//
// # The verbs as scripts
//
// The package holds a Lua script per verb that does what the verb does on a
// server without the module: [AdmitScript], [ScheduleScript],
// [EnqueueManyScript], [ClaimScript], [ExtendScript], [AckScript],
// [FailScript], [StalledCheckScript], [ReviveScript], [RemoveScript],
// [SettleScript], [PauseScript], [ResumeScript], [LimitScript],
// [EventsScript] and [ParkScript]. EVALSHA of a script with the verb's
// numkeys, keys and arguments (CLAIM's and SETTLE's with the sweep batch
// appended) makes the verb's writes in one server turn, appends the verb's
// lifecycle events to the queue's events stream when they are on (XADD …
// MAXLEN ~ <cap> *, the same fields in the same order; the entries' IDs are
// each server's own), and gives its reply; the refusals the stored data
// decides (WRONGTYPE, EMQNOJOB, EMQLEASE, EMQSTATE, EMQCOUNT, EMQORDER,
// NOGROUP) have the verb's text, its precedence, and write nothing. A
// script reads the queue's settings as the verb does: the config hash only
// when it exists, the events stream only when events are on, the limiter
// only when the queue has a limit, the schedules only when it has any. Each
// script's shebang line carries its verb's flags: allow-oom unless the verb
// is deny-oom (ENQUEUE, SCHEDULE, ENQUEUEMANY, REVIVE, PARK, REPEAT; and
// tick.lua, whose ticks the module holds back there), so over maxmemory
// the server refuses the same calls; a read-only replica refuses them all.
// BCLAIM has no script: a script cannot block.
//
// Besides its declared keys, a script touches keys it derives from them,
// as the verb does: job rows (emq:{<queue>}:job:<JOB id>) and the queue's
// config, limiter and events stream. The server does not require a script
// to declare every key it touches, and in a cluster those keys share the
// queue's hash tag, so they are in the call's slot on the node that runs
// it.
//
// Where a script and its verb can be told apart:
//
//   - The scripts do not check the arguments (EMQSHAPE, EMQLAYOUT,
//     EMQKIND; AdmitScript alone checks the id's namespace): check them
//     first, as the client does for every verb, or a script may fail with
//     a Lua error or write under a malformed key.
//   - Nil inside a reply: CLAIM's nil (nothing claimed), and the claim part
//     of SETTLE's reply, is a null bulk string in RESP2 ($-1) where the
//     verb sends a null array (*-1); in RESP3 both are _.
//   - A derived key the caller's ACL user may not touch fails the script
//     at the first command on it, with the server's "ERR ACL failure in
//     script: No permissions to access a key" (a NOPERM [*Refusal] to the
//     caller, as a built-in the user may not run), after the call's earlier
//     writes have landed (a claim's removals from pending come at its end,
//     so a job it took may then sit in both pending and active); the verb
//     refuses with NOPERM before writing, and SETTLE and ENQUEUEMANY
//     refuse a settlement or a job alone.
//   - The scripts count nothing in INFO emq (dropped ids, refusals, calls);
//     the server counts them as EVALSHA calls and, by code, in errorstats.
//   - "Now" is the server's TIME, read by the script (once per call, when
//     it needs the time); the verb reads the clock once, when the command
//     starts. Both are the server's clock.
//   - A claim turn on the script makes no job of a due schedule tick (a
//     script cannot read a cron expression): the module's claim turn and
//     timer make them, and, on a server without the module, Work — a
//     program that claims with Queue.Claim or BClaim there gets none.
//   - ENQUEUEMANY's script adds each job to its set with a ZADD of its
//     own (a zadd event and a replicated ZADD a job); the verb adds the
//     batch's jobs with one. So do the scripts of the claim turn (each
//     moved or claimed job a ZREM and a ZADD) and of SETTLE (each ack a
//     ZREM), where the verbs join a call's moves into one ZREM from each
//     set and one ZADD per set and score, after the rows' HSETs: the same
//     data, the keyspace events in another order.
//   - PARK builds the dead-letter entry as one Lua call: a source entry
//     of more than about 4,000 field/value pairs exceeds Lua's argument
//     limit ("too many results to unpack") and the script fails, writing
//     nothing.
package client
