// Child-process plumbing for the benchmarks: free ports, spawning with readiness checks,
// guaranteed cleanup (normal end, error, signal), and /proc readers for CPU time and RSS.
import { execFileSync, fork, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every child we started, so one cleanup kills them all (by pid, one by one). */
const children = new Set();

/** A free TCP port on 127.0.0.1 (the OS picks it; tiny race before the child binds it). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function track(child, name) {
  const entry = { child, name, tail: '' };
  const keep = (buf) => {
    entry.tail = (entry.tail + buf.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  children.add(entry);
  child.once('exit', () => children.delete(entry));
  return entry;
}

/** The simulator child (bench/lib/sim-child.mjs) with an IPC channel; resolves once it listens. */
export async function startSimulatorChild() {
  const child = fork(new URL('./sim-child.mjs', import.meta.url), [], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...process.env },
  });
  const entry = track(child, 'simulator');
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`simulator did not start within 10 s\n${entry.tail}`)), 10_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`simulator exited early (code ${code})\n${entry.tail}`));
    });
    child.on('message', function onMsg(msg) {
      if (msg?.ready) {
        clearTimeout(timer);
        child.off('message', onMsg);
        resolve(msg);
      }
    });
  });
  let nextId = 0;
  return {
    child,
    pid: child.pid,
    url: ready.url,
    port: ready.port,
    /** {aborted, active} as the simulator counts them. */
    stats() {
      const id = ++nextId;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('simulator stats timed out')), 5000);
        child.on('message', function onMsg(msg) {
          if (msg?.id === id) {
            clearTimeout(timer);
            child.off('message', onMsg);
            resolve({ aborted: msg.aborted, active: msg.active });
          }
        });
        child.send({ cmd: 'stats', id });
      });
    },
    /** The bodies of the last `n` requests the simulator received (its log is emptied). */
    lastRequests(n) {
      const id = ++nextId;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('simulator requests timed out')), 30_000);
        child.on('message', function onMsg(msg) {
          if (msg?.id === id) {
            clearTimeout(timer);
            child.off('message', onMsg);
            resolve(msg.bodies);
          }
        });
        child.send({ cmd: 'requests', id, n });
      });
    },
  };
}

/**
 * The replaying upstream child (bench/lib/replay-upstream.mjs): `answerAs(simulatorUrl, question)`
 * makes every request answered with the bytes of the simulator's streamed answer to `question`
 * (a user message), `lastBody()` is the last body it read.
 */
export async function startReplayUpstreamChild() {
  const child = fork(new URL('./replay-upstream.mjs', import.meta.url), [], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  const entry = track(child, 'replay upstream');
  const { port } = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`replay upstream did not start within 10 s\n${entry.tail}`)), 10_000);
    child.once('exit', (code) => reject(new Error(`replay upstream exited early (code ${code})\n${entry.tail}`)));
    child.once('message', (msg) => {
      clearTimeout(timer);
      resolve(msg);
    });
  });
  let nextId = 0;
  const ask = (msg) =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      const timer = setTimeout(() => reject(new Error(`replay upstream: no answer to ${msg.cmd}`)), 30_000);
      child.on('message', function onMsg(reply) {
        if (reply?.id !== id) return;
        clearTimeout(timer);
        child.off('message', onMsg);
        resolve(reply);
      });
      child.send({ ...msg, id });
    });
  return {
    url: `http://127.0.0.1:${port}/v1`,
    origin: `http://127.0.0.1:${port}`,
    async answerAs(simulatorUrl, question) {
      const res = await fetch(`${simulatorUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'switchyard-sim', messages: [{ role: 'user', content: question }], stream: true, stream_options: { include_usage: true } }),
      });
      if (res.status !== 200) throw new Error(`the simulator answered ${res.status}`);
      await ask({ cmd: 'answer', contentType: res.headers.get('content-type'), body: await res.text() });
    },
    lastBody: async () => (await ask({ cmd: 'last' })).body,
  };
}

/**
 * `node [nodeArgs] dist/cli.js serve …` as a child (in `root`: this checkout, or another build's
 * folder for bench/ab.mjs); resolves once GET /health answers 200.
 * `nodeArgs` defaults to BENCH_GATEWAY_NODE_ARGS (space-separated), e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`.
 * `stdout`: a file descriptor for the child's stdout (its log) instead of a pipe to this process.
 */
export async function startGatewayChild({ port, upstream, dataDir, configFile, env = {}, nodeArgs = (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean), root = ROOT, stdout = 'pipe' }) {
  const args = [...nodeArgs, 'dist/cli.js', 'serve', '--port', String(port), '--host', '127.0.0.1', '--upstream', upstream, '--data-dir', dataDir];
  if (configFile) args.push('--config', configFile);
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: ['ignore', stdout, 'pipe'],
    env: { ...process.env, SWITCHYARD_LOG_LEVEL: 'warn', ...env },
  });
  const entry = track(child, 'gateway');
  let exited = null;
  child.once('exit', (code, signal) => {
    exited = { code, signal };
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (exited) throw new Error(`gateway exited early (${JSON.stringify(exited)})\n${entry.tail}`);
    try {
      const res = await fetch(`${url}/health`);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`gateway did not become healthy within 15 s\n${entry.tail}`);
    await sleep(50);
  }
  return { child, pid: child.pid, url, logTail: () => entry.tail };
}

/**
 * The bare pass-through proxy (bench/lib/bare-proxy.mjs) in front of `upstreamOrigin`: the floor
 * the gateway's figures are read against. Resolves once it listens.
 */
export async function startBareProxyChild(upstreamOrigin, env = {}) {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./bare-proxy.mjs', import.meta.url)), upstreamOrigin], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const entry = track(child, 'bare proxy');
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bare proxy did not start within 10 s\n${entry.tail}`)), 10_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`bare proxy exited early (code ${code})\n${entry.tail}`));
    });
    child.stdout.on('data', function onData() {
      const match = /"port":(\d+)/.exec(entry.tail);
      if (match) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        resolve(Number(match[1]));
      }
    });
  });
  return { child, pid: child.pid, url: `http://127.0.0.1:${port}` };
}

/** SIGTERM every child we started, wait up to 3 s each, then SIGKILL the stragglers. */
export async function stopAll() {
  const waits = [];
  for (const entry of [...children]) {
    const { child } = entry;
    if (child.exitCode !== null || child.signalCode !== null) continue;
    waits.push(
      new Promise((resolve) => {
        const timer = setTimeout(() => {
          try {
            child.kill('SIGKILL');
          } catch {
            // already gone
          }
          resolve();
        }, 3000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        try {
          child.kill('SIGTERM');
        } catch {
          clearTimeout(timer);
          resolve();
        }
      }),
    );
  }
  await Promise.all(waits);
}

/** Last resort (synchronous): used from process 'exit' when the async cleanup did not run. */
function killAllSync() {
  for (const { child } of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

let hooksInstalled = false;
/** Installs exit / signal / crash hooks that always take the children down with us. */
export function installCleanupHooks(onCleanup = async () => {}) {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killAllSync);
  const bail = (code) => async (err) => {
    if (err instanceof Error) console.error(err.stack ?? err.message);
    try {
      await onCleanup();
      await stopAll();
    } finally {
      process.exit(code);
    }
  };
  process.once('SIGINT', bail(130));
  process.once('SIGTERM', bail(143));
  process.once('uncaughtException', bail(1));
  process.once('unhandledRejection', bail(1));
}

// ---------- /proc readers (Linux) ----------

let clkTck = null;
export function clockTicksPerSecond() {
  if (clkTck !== null) return clkTck;
  try {
    clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    clkTck = 100;
  }
  return clkTck;
}

/** utime + stime of a process, in microseconds (resolution: one clock tick, 10 ms at 100 Hz). */
export function cpuMicros(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the command name (field 2) may contain spaces: fields after the last ')' are space-separated
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]); // field 14 overall
  const stime = Number(fields[12]); // field 15 overall
  return ((utime + stime) * 1e6) / clockTicksPerSecond();
}

/** VmRSS of a process in KiB. */
export function rssKiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]);
}

// ---------- event-loop delay inside a gateway child (bench/lib/eld-probe.mjs) ----------

/** Env for startGatewayChild that preloads the event-loop-delay probe, writing to `file`. */
export function eldProbeEnv(file) {
  const probe = fileURLToPath(new URL('./eld-probe.mjs', import.meta.url));
  const inherited = process.env.NODE_OPTIONS ? `${process.env.NODE_OPTIONS} ` : '';
  return { NODE_OPTIONS: `${inherited}--import=${probe}`, BENCH_ELD_FILE: file };
}

/** Asks the probe in `pid` for the event-loop delay since the last call (and resets it): {maxMs, p99Ms, meanMs, count}. */
export async function readEventLoopDelay(pid, file) {
  let before = null;
  try {
    before = readFileSync(file, 'utf8');
  } catch {
    // first reading
  }
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 5000;
  for (;;) {
    await sleep(20);
    let now = null;
    try {
      now = readFileSync(file, 'utf8');
    } catch {
      // not written yet
    }
    if (now !== null && now !== before) {
      // a reading caught mid-write (an older probe writes in place) is read again
      try {
        return JSON.parse(now);
      } catch {
        // not complete yet
      }
    }
    if (Date.now() > deadline) throw new Error('event-loop probe did not answer (is bench/lib/eld-probe.mjs preloaded?)');
  }
}
