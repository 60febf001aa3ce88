// The BullMQ side of `emq-bench -queue`: BullMQ as its users run it — its
// own Queue and Worker, each making its own connections from host and port —
// driven one step at a time so that the Go tool can read the server's
// counters between steps.
//
//   node run.js --host 127.0.0.1 --port 6379 --jobs 5000 --concurrency 8 --mode normal
//
// It prints {"step":"ready",…versions} once connected, then reads step names
// from stdin, one a line, runs each and prints one JSON line for it:
//
//   enqueue  adds the jobs with Queue.addBulk, --batch at a time, no worker running
//            → {"step":"enqueue","wall_ms":…}
//   drain    starts a Worker of --concurrency and waits for the jobs' completed
//            events, then closes it →
//            {"step":"drain","wall_ms":…,"cpu_ns":…,"wait_ns":…,"all_ns":…,"failed":…}:
//            wall_ms to the last 'completed' event (emitted once the server replied
//            to the job's move to completed: its acknowledgement); cpu_ns and
//            wait_ns the server main thread's CPU time and time runnable without a
//            core over the same span, read from --cpu-file (its
//            /proc/<pid>/task/<pid>/schedstat; -1 without one), all_ns the CPU
//            time of all the server's threads (every schedstat in that task
//            directory)
//   latency  starts a Worker, lets it settle, adds --latency-jobs jobs one by one
//            at --latency-rate a second → {"step":"latency","latencies_us":[…]},
//            each the time from when a job was due to the start of the
//            handler run that completed it
//
// A failed step prints {"step":…,"error":"…"} and the process exits 1.
// Standalone: printf 'enqueue\ndrain\nlatency\n' | node run.js --port 6379
//
// Every job's options are BullMQ's defaults except: removeOnComplete and
// removeOnFail true; attempts 2 in mode retry (no backoff, so the failed
// attempt is retried at once); delay --delay-ms in mode delayed. Handlers do
// nothing, except fail a job's first attempt in mode retry.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const { Queue, Worker } = require('bullmq');

const defaults = {
  host: '127.0.0.1', port: 6379, queue: 'bench', jobs: 5000, concurrency: 8, mode: 'normal',
  payload: 100, 'delay-ms': 100, batch: 1000, 'latency-jobs': 200, 'latency-rate': 200, 'cpu-file': '',
};
const modes = ['normal', 'retry', 'delayed'];

function parseArgs(argv) {
  const a = { ...defaults };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, '');
    if (!(name in defaults) || i + 1 >= argv.length) throw new Error(`unknown or valueless flag ${argv[i]}`);
    const v = argv[i + 1];
    a[name] = typeof defaults[name] === 'number' ? Number(v) : v;
    if (Number.isNaN(a[name])) throw new Error(`${argv[i]} needs a number, not ${v}`);
  }
  if (!modes.includes(a.mode)) throw new Error(`--mode must be one of ${modes.join(', ')}`);
  return a;
}

const args = parseArgs(process.argv.slice(2));
const connection = { host: args.host, port: args.port };
const jobOpts = { removeOnComplete: true, removeOnFail: true };
if (args.mode === 'retry') jobOpts.attempts = 2;
const delayMs = args.mode === 'delayed' ? args['delay-ms'] : 0;
if (delayMs > 0) jobOpts.delay = delayMs;

// now is milliseconds since the epoch, to the microsecond.
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// readSched is one thread's schedstat: its run time (CPU) and wait time
// (runnable without a core), in ns.
function readSched(file) {
  const [run, wait] = fs.readFileSync(file, 'utf8').split(' ').map(Number);
  return { run, wait };
}

// serverSched is the server's accounting in ns: its main thread's run and
// wait times, and all its threads' run time (the module's Go runtime
// threads too); -1 for each without --cpu-file.
function serverSched() {
  if (args['cpu-file'] === '') return { run: -1, wait: -1, all: -1 };
  const { run, wait } = readSched(args['cpu-file']);
  const dir = path.dirname(path.dirname(args['cpu-file']));
  let all = 0;
  for (const tid of fs.readdirSync(dir)) {
    try {
      all += readSched(path.join(dir, tid, 'schedstat')).run;
    } catch (err) {
      if (err.code !== 'ENOENT' && err.code !== 'ESRCH') throw err; // a thread that just exited
    }
  }
  return { run, wait, all };
}

// data is a job's data: when it is due, padded so its JSON is --payload bytes.
function data(due) {
  const d = { t: due, p: '' };
  d.p = 'x'.repeat(Math.max(0, args.payload - JSON.stringify(d).length));
  return d;
}

// worker starts a Worker whose handler calls onRun for every run it does
// not fail.
function worker(onRun) {
  return new Worker(args.queue, async (job) => {
    if (args.mode === 'retry' && job.attemptsMade === 0) throw new Error('fails once');
    onRun(job);
  }, { connection, concurrency: args.concurrency });
}

async function enqueue(queue) {
  const start = now();
  for (let done = 0; done < args.jobs;) {
    const n = Math.min(args.batch, args.jobs - done);
    const due = now() + delayMs;
    const jobs = [];
    for (let i = 0; i < n; i++) jobs.push({ name: 'job', data: data(due), opts: jobOpts });
    await queue.addBulk(jobs);
    done += n;
  }
  return { wall_ms: now() - start };
}

async function drain() {
  const from = serverSched();
  const start = now();
  let completed = 0;
  let failed = 0;
  let w;
  const end = await new Promise((resolve, reject) => {
    w = worker(() => {});
    w.on('completed', () => { if (++completed === args.jobs) resolve({ at: now(), sched: serverSched() }); });
    w.on('failed', () => { failed++; });
    w.on('error', reject);
  });
  await w.close();
  const wantFailed = args.mode === 'retry' ? args.jobs : 0;
  if (failed !== wantFailed) throw new Error(`${failed} failed attempts, want ${wantFailed}`);
  const known = from.run >= 0;
  return {
    wall_ms: end.at - start, failed,
    cpu_ns: known ? end.sched.run - from.run : -1, wait_ns: known ? end.sched.wait - from.wait : -1,
    all_ns: known ? end.sched.all - from.all : -1,
  };
}

async function latency(queue) {
  const lat = [];
  let finished;
  const all = new Promise((resolve) => { finished = resolve; });
  const w = worker((job) => {
    lat.push((now() - job.data.t) * 1000);
    if (lat.length === args['latency-jobs']) finished();
  });
  w.on('error', (err) => { throw err; });
  await w.waitUntilReady();
  await sleep(200); // the worker is waiting for jobs
  const gap = 1000 / args['latency-rate'];
  const t0 = now();
  for (let i = 0; i < args['latency-jobs']; i++) {
    const wait = t0 + i * gap - now();
    if (wait > 0) await sleep(wait);
    await queue.add('job', data(now() + delayMs), jobOpts);
  }
  await all;
  await w.close();
  return { latencies_us: lat };
}

function print(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }

async function main() {
  const queue = new Queue(args.queue, { connection });
  await queue.waitUntilReady();
  print({
    step: 'ready', node: process.version,
    bullmq: require('bullmq/package.json').version, ioredis: require('ioredis/package.json').version,
  });
  const steps = { enqueue: () => enqueue(queue), drain, latency: () => latency(queue) };
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const step = line.trim();
    if (step === '') continue;
    try {
      if (!(step in steps)) throw new Error(`unknown step ${JSON.stringify(step)}`);
      print({ step, ...(await steps[step]()) });
    } catch (err) {
      print({ step, error: String(err && err.stack || err) });
      process.exit(1);
    }
  }
  await queue.close();
}

main().catch((err) => {
  print({ step: 'ready', error: String(err && err.stack || err) });
  process.exit(1);
});
