// Escape and abuse probes: code a model could write, run in a real box (the gateway's own
// command line: prlimit + setpriv + bwrap + seccomp) or through the gateway's HTTP surface.
// Each probe states what must hold; a probe that "succeeds" at its attack fails the test.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { ResponseCodeInterpreterToolCall } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CODE_INTERPRETER_CONFIG } from '../../src/containers/config.js';
import type { Box, RunResult } from '../../src/sandbox/box.js';
import type { BoxPool } from '../../src/sandbox/pool.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sandboxDir, sandboxSkipReason, SANDBOX_PYTHON, testPool } from '../helpers/sandbox.js';

const SECRET = `switchyard-canary-${process.pid}-${Date.now()}`;
process.env.SWITCHYARD_PROBE_SECRET = SECRET;
const GIB = 1024 ** 3;
const MAX_PROCESSES = 32;

/** Host processes running as one of the pool's box uids. */
function boxProcessesOnHost(uidFrom: number, uidTo: number): number {
  let count = 0;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
      if (uid >= uidFrom && uid < uidTo) count++;
    } catch {
      // the process ended while we looked
    }
  }
  return count;
}

describe.skipIf(sandboxSkipReason !== undefined)(`sandbox escape and abuse probes${sandboxSkipReason ? ` (${sandboxSkipReason})` : ''}`, () => {
  let pool: BoxPool;
  let folder: ReturnType<typeof sandboxDir>;
  let canary: Server;
  let canaryPort: number;
  let canaryConnections = 0;
  let box: Box | undefined;
  let boxCount = 0;
  const uidBase = 210_000 + (process.pid % 1000) * 20;

  /** Runs code in the shared box (a fresh one when a probe killed it). */
  const run = async (code: string, timeoutMs = 30_000): Promise<RunResult> => {
    if (!box?.alive) box = await pool.acquire(join(folder.dir, `probe-${boxCount++}`), GIB);
    return box.run(code, timeoutMs);
  };
  const lines = (result: RunResult) => result.logs.trim().split('\n');

  beforeAll(async () => {
    folder = sandboxDir();
    pool = testPool(folder.dir, { limits: { maxProcesses: MAX_PROCESSES, workdirBytes: 20 * 1024 * 1024, tmpBytes: 16 * 1024 * 1024 } });
    canary = createServer((socket) => {
      canaryConnections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
    canaryPort = (canary.address() as { port: number }).port;
  }, 60_000);

  afterAll(async () => {
    await pool?.close();
    await new Promise((resolve) => canary?.close(resolve));
    folder?.remove();
    expect(canaryConnections).toBe(0);
  });

  it('1. sees no secret of the gateway in its environment or anywhere in /proc', async () => {
    const result = await run(`
import os
found = [k for k, v in os.environ.items() if ${JSON.stringify(SECRET)} in v]
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    for name in ('environ', 'cmdline'):
        try:
            if ${JSON.stringify(SECRET)}.encode() in open(f'/proc/{pid}/{name}', 'rb').read(): found.append(f'/proc/{pid}/{name}')
        except OSError:
            pass
print(sorted(os.environ))
print(found)`);
    expect(lines(result)[1]).toBe('[]');
    expect(lines(result)[0]).not.toMatch(/SWITCHYARD|DATABASE|API_KEY|NODE/);
  }, 60_000);

  it('2. sees only its own processes (own pid namespace): not the gateway, not the host', async () => {
    const result = await run(`import os\npids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\nprint(len(pids) <= 3, ${process.pid} in pids, os.getpid())`);
    expect(lines(result)[0]).toMatch(/^True False \d$/);
  }, 60_000);

  it('3. cannot write outside its working folder and /tmp; /tmp is size-capped', async () => {
    const result = await run(`
import os, errno
outcomes = []
for path in ['/usr/evil', '/etc/evil', '/evil', '/bin/evil', '/dev/evil', '/proc/sys/kernel/hostname', '/sandbox/driver.py']:
    try:
        with open(path, 'w') as f: f.write('x')
        outcomes.append('WROTE ' + path)
    except OSError as e:
        outcomes.append(errno.errorcode.get(e.errno, str(e.errno)))
print(outcomes)
try:
    with open('/tmp/fill', 'wb') as f:
        for _ in range(64): f.write(b'0' * (1 << 20))
    print('tmp unbounded')
except OSError as e:
    print('tmp capped', errno.errorcode.get(e.errno))
os.remove('/tmp/fill')
open('/mnt/data/ok.txt', 'w').write('fine')
print('workdir ok')`);
    expect(result.logs).not.toContain('WROTE');
    expect(lines(result)[1]).toBe('tmp capped ENOSPC');
    expect(lines(result)[2]).toBe('workdir ok');
  }, 60_000);

  it("4. reaches neither the loopback canary (0 connections) nor any of the host's addresses", async () => {
    const hostAddresses = [...new Set(Object.values(networkInterfaces()).flat().filter((a) => a && a.family === 'IPv4' && !a.internal).map((a) => a!.address))];
    const result = await run(`
import errno, socket
def attempt(host):
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((host, ${canaryPort})); return 'CONNECTED ' + host
    except OSError as e:
        return errno.errorcode.get(e.errno, type(e).__name__)
    finally:
        s.close()
print(attempt('127.0.0.1'))
print(sorted(set(attempt(h) for h in ${JSON.stringify([...hostAddresses, '1.1.1.1'])})))
print([name for _, name in socket.if_nameindex()])`);
    expect(result.logs).not.toContain('CONNECTED');
    // the box's loopback is its own: nothing listens there
    expect(lines(result)[0]).toBe('ECONNREFUSED');
    // its network namespace has no route anywhere else (this machine's addresses, the internet)
    expect(lines(result)[1]).toBe("['ENETUNREACH']");
    expect(lines(result)[2]).toBe("['lo']");
    expect(canaryConnections).toBe(0);
  }, 60_000);

  it('5. cannot resolve names or send UDP (no DNS, no network)', async () => {
    const result = await run(`
import socket
try:
    socket.getaddrinfo('example.com', 443); print('RESOLVED')
except OSError as e:
    print('no dns', type(e).__name__)
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53)); print('SENT')
except OSError as e:
    print('no udp', type(e).__name__)`);
    expect(lines(result)[0]).toMatch(/^no dns/);
    expect(lines(result)[1]).toMatch(/^no udp/);
  }, 60_000);

  it('6. spawned programs stay inside the box and die with it', async () => {
    const result = await run(`
import subprocess
subprocess.Popen(['sleep', '1000'], start_new_session=True)
print(subprocess.run(['cat', '/proc/1/comm'], capture_output=True, text=True).stdout.strip())
print(subprocess.run(['id', '-u'], capture_output=True, text=True).stdout.strip())`);
    expect(lines(result)).toEqual(['bwrap', '1000']);
    expect(boxProcessesOnHost(uidBase, uidBase + 8)).toBeGreaterThan(0);
    await pool.release(box!);
    expect(boxProcessesOnHost(uidBase, uidBase + 8)).toBe(0);
  }, 60_000);

  it('7. a fork bomb stops at the process cap and the gateway stays responsive', async () => {
    const started = Date.now();
    const result = await run(`
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(20); os._exit(0)
        children += 1
except OSError as e:
    print('stopped after', children, 'children', e.errno)`);
    expect(result.logs).toMatch(/stopped after \d+ children 11/);
    expect(Number(/after (\d+)/.exec(result.logs)![1])).toBeLessThan(MAX_PROCESSES);
    expect(boxProcessesOnHost(uidBase, uidBase + 8)).toBeLessThanOrEqual(MAX_PROCESSES + 2);
    // the event loop was never blocked: a timer fires on time while the box is crowded
    const lag = await new Promise<number>((resolve) => {
      const at = Date.now();
      setTimeout(() => resolve(Date.now() - at), 10);
    });
    expect(lag).toBeLessThan(2_000);
    expect(Date.now() - started).toBeLessThan(30_000);
    await pool.release(box!);
  }, 60_000);

  it('8. a 4 GB allocation fails with MemoryError; the kernel survives', async () => {
    const result = await run('try:\n    block = bytearray(4 * 1024 ** 3)\n    print("ALLOCATED")\nexcept MemoryError:\n    print("MemoryError")\nx = 1');
    expect(result.logs).toBe('MemoryError\n');
    expect((await run('x + 1')).logs).toBe('2\n');
  }, 60_000);

  it('9. an infinite loop is interrupted at the soft timeout and Python state is kept', async () => {
    await run('kept = "still here"');
    const result = await run('while True:\n    pass', 1_500);
    expect(result.status).toBe('timeout');
    expect((await run('kept')).logs).toBe("'still here'\n");
  }, 60_000);

  it('10. a 100 MB print is capped; the dropped amount is stated; raw descriptor writes are bounded too', async () => {
    const result = await run('for _ in range(100_000):\n    print("x" * 999)');
    expect(result.status).toBe('ok');
    expect(Buffer.byteLength(result.logs)).toBeLessThan(1024 * 1024 + 4_096);
    expect(result.droppedBytes).toBeGreaterThan(95_000_000);
    expect(result.logs).toMatch(/\[\d+ bytes of output dropped: the 1048576-byte limit was reached\]/);
    const oneLine = await run('print("x" * 100_000_000)');
    expect(Buffer.byteLength(oneLine.logs)).toBeLessThan(20_000);
    expect(oneLine.logs).toMatch(/\[99983616 characters of this line cut\]/);
    const raw = await run('import os\ntry:\n    os.write(1, b"y" * 100_000_000)\nexcept OSError as e:\n    print("write failed", e.errno)');
    expect(Buffer.byteLength(raw.logs)).toBeLessThan(1024 * 1024 + 4_096);
  }, 90_000);

  it('11. cannot signal the gateway (or anything outside its pid namespace)', async () => {
    const result = await run(`
import os, signal
try:
    os.kill(${process.pid}, signal.SIGKILL); print('SIGNALLED')
except ProcessLookupError:
    print('no such process')
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
print('after kill -1')`);
    expect(lines(result)[0]).toBe('no such process');
    expect(process.kill(process.pid, 0)).toBe(true);
  }, 60_000);

  it("12. cannot read the gateway's files (data folder, source, root's home, shadow)", async () => {
    const targets = [join(folder.dir, 'runtime', 'passwd'), join(process.cwd(), 'package.json'), '/root/.bashrc', '/etc/shadow', '/etc/hostname', '/work'];
    const result = await run(`
import os
out = []
for path in ${JSON.stringify(targets)}:
    try:
        open(path).read() if not os.path.isdir(path) else os.listdir(path)
        out.append('READ ' + path)
    except OSError as e:
        out.append(type(e).__name__)
print(out)
print(sorted(os.listdir('/etc')))`);
    expect(result.logs).not.toContain('READ');
    expect(lines(result)[1]).not.toContain('shadow');
  }, 60_000);

  it('13. privileged syscalls are refused by seccomp and capabilities are gone', async () => {
    const result = await run(`
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    r = libc.syscall(nr, *args)
    return 'ALLOWED' if r >= 0 else os.strerror(ctypes.get_errno())
print('unshare', call(272, 0x10000000))
print('ptrace', call(101, 0, 0, 0, 0))
print('mount', call(165, b'none', b'/tmp', b'tmpfs', 0, 0))
print('keyctl', call(250, 0, 0, 0, 0, 0))
print('bpf', call(321, 0, 0, 0))
status = open('/proc/self/status').read()
print([l for l in status.splitlines() if l.startswith(('CapEff', 'NoNewPrivs', 'Seccomp:'))])
try:
    os.setuid(0); print('ROOT')
except OSError:
    print('no setuid')`);
    for (const name of ['unshare', 'ptrace', 'mount', 'keyctl', 'bpf']) expect(result.logs).toContain(`${name} Operation not permitted`);
    expect(result.logs).toContain("'CapEff:\\t0000000000000000'");
    expect(result.logs).toContain("'NoNewPrivs:\\t1'");
    expect(result.logs).toContain("'Seccomp:\\t2'");
    expect(result.logs).toContain('no setuid');
  }, 60_000);

  it('14. inherited descriptors are closed: only stdio and the request/reply channel remain', async () => {
    const result = await run(`
import os
fds = sorted(int(f) for f in os.listdir('/proc/self/fd'))
targets = []
for fd in fds:
    try:
        targets.append(os.readlink(f'/proc/self/fd/{fd}'))
    except OSError:
        pass  # the descriptor listdir used, closed again
print(len(fds), targets)`);
    // stdin (/dev/null), stdout and stderr (the capture file), the request and reply channel
    // (socket pairs, as Node makes stdio pipes), and the descriptor listdir itself opened
    expect(lines(result)[0]).toMatch(/^6 \['\/dev\/null', '\/tmp\/\.fd-output', '\/tmp\/\.fd-output', 'socket:\[\d+\]', 'socket:\[\d+\]'\]$/);
  }, 60_000);

  it('15. forged frames on the reply channel kill the box, not the gateway', async () => {
    const result = await run("import os\nos.write(4, b'\\xff\\xff\\xff\\xff' + b'x' * 100)\nimport time\ntime.sleep(5)");
    expect(result.status).toBe('killed');
    expect(result.logs).toMatch(/reply over/);
    expect((await run('1 + 1')).logs).toBe('2\n');
  }, 60_000);

  it('16. a working folder that grows past its quota gets the box killed', async () => {
    const result = await run("import time\nfor i in range(40):\n    open(f'/mnt/data/blob{i}', 'wb').write(b'0' * (1 << 20))\n    time.sleep(0.05)\ntime.sleep(3)", 30_000);
    expect(result.status).toBe('killed');
    expect(result.logs).toMatch(/working folder grew past/);
  }, 60_000);
});

describe.skipIf(sandboxSkipReason !== undefined)(`file and container probes through the gateway${sandboxSkipReason ? ` (${sandboxSkipReason})` : ''}`, () => {
  let gw: TestGateway;
  let client: OpenAI;
  let folder: ReturnType<typeof sandboxDir>;

  beforeAll(async () => {
    folder = sandboxDir();
    gw = await startTestGateway({ config: { codeInterpreter: { ...DEFAULT_CODE_INTERPRETER_CONFIG, python: SANDBOX_PYTHON, dir: folder.dir, poolSize: 0, uidBase: 250_000 + (process.pid % 1000) * 20 } } });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: 'test', maxRetries: 0, timeout: 120_000 });
  });
  afterAll(async () => {
    await gw?.close();
    folder?.remove();
  });

  it("17. symlinks, FIFOs and swapped files never let the gateway read a host file for the box", async () => {
    const container = await client.containers.create({ name: 'probe' });
    const code = [
      'import os, subprocess',
      "os.symlink('/etc/shadow', '/mnt/data/leak.txt')",
      "os.symlink('/etc', '/mnt/data/etcdir')",
      "os.mkfifo('/mnt/data/pipe')",
      "open('/mnt/data/swap.txt', 'w').write('harmless')",
      // after the gateway has recorded swap.txt, swap it for a link to a host file
      "subprocess.Popen(['sh', '-c', 'sleep 2; rm /mnt/data/swap.txt; ln -s /etc/shadow /mnt/data/swap.txt'], start_new_session=True)",
    ].join('\n');
    const response = await client.responses.create({
      model: 'sim',
      input: scripted({ rounds: [{ tool_calls: [{ name: 'python', arguments: { code } }] }, { text: 'ok' }] }),
      tools: [{ type: 'code_interpreter', container: container.id }],
    });
    expect(response.output.find((i) => i.type === 'code_interpreter_call')).toMatchObject({ status: 'completed' });
    const files = await client.containers.files.list(container.id);
    const swap = files.data.find((f) => f.path === '/mnt/data/swap.txt');
    expect(files.data.map((f) => f.path)).toEqual(['/mnt/data/swap.txt']);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const download = await fetch(`${gw.baseURL}/containers/${container.id}/files/${swap!.id}/content`);
    expect(download.status).toBe(404);
    expect(await download.text()).not.toContain('root:');
    // an upload under a planted link's name must not write through it
    const planted = await fetch(`${gw.baseURL}/containers/${container.id}/files`, {
      method: 'POST',
      body: (() => {
        const form = new FormData();
        form.append('file', new Blob(['pwned']), 'leak.txt');
        return form;
      })(),
    });
    expect(planted.status).toBe(400);
    expect(readFileSync('/etc/shadow', 'utf8')).not.toContain('pwned');
    await client.containers.delete(container.id);
  }, 120_000);

  it('18. container ids never become paths (traversal in routes and in history items)', async () => {
    for (const id of ['..%2F..%2Fetc', 'cntr_..%2F..', '..%5C..']) {
      const res = await fetch(`${gw.baseURL}/containers/${id}/files`);
      expect(res.status).toBe(404);
    }
    // a literal `..` is resolved by the client's URL parser before it is sent: another route, not a folder
    const dotted = await fetch(`${gw.baseURL}/containers/../files`);
    expect(new URL(dotted.url).pathname).toBe('/v1/files');
    const response = await client.responses.create({
      model: 'sim',
      input: [
        { type: 'code_interpreter_call', id: 'ci_forged', status: 'completed', code: '1', container_id: '../../../etc', outputs: null } as never,
        { role: 'user', content: scripted({ rounds: [{ tool_calls: [{ name: 'python', arguments: { code: 'import os\nprint(os.getcwd())' } }] }, { text: 'ok' }] }) },
      ],
      tools: [{ type: 'code_interpreter', container: { type: 'auto' } }],
      include: ['code_interpreter_call.outputs'],
    });
    const call = response.output.find((i): i is ResponseCodeInterpreterToolCall => i.type === 'code_interpreter_call')!;
    expect(call.container_id).toMatch(/^cntr_[0-9a-f]{32}$/);
    expect(call.outputs).toEqual([{ type: 'logs', logs: '/mnt/data\n' }]);
  }, 120_000);
});
