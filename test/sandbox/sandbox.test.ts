import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BoxPool } from '../../src/sandbox/pool.js';
import { compileSeccompDenyList, DENIED_SYSCALLS_X86_64 } from '../../src/sandbox/seccomp.js';
import { sandboxDir, sandboxSkipReason, testPool } from '../helpers/sandbox.js';

describe('seccomp program', () => {
  it('is a whole number of sock_filter records that ends every path in a return', () => {
    const program = compileSeccompDenyList('x64')!;
    expect(program.length % 8).toBe(0);
    const count = program.length / 8;
    // arch check (3) + load nr + x32 + denied + clone3 + clone + allow + clone check (3) + 2 denials
    expect(count).toBe(4 + 1 + Object.keys(DENIED_SYSCALLS_X86_64).length + 2 + 1 + 3 + 2);
    expect(program.readUInt16LE((count - 1) * 8)).toBe(0x06);
    expect(compileSeccompDenyList('arm64')).toBeUndefined();
  });
});

describe.skipIf(sandboxSkipReason !== undefined)(`sandbox box${sandboxSkipReason ? ` (${sandboxSkipReason})` : ''}`, () => {
  let pool: BoxPool;
  let folder: ReturnType<typeof sandboxDir>;
  beforeAll(() => {
    folder = sandboxDir();
    pool = testPool(folder.dir, { limits: { maxLogBytes: 64 * 1024 } });
  });
  afterAll(async () => {
    await pool?.close();
    folder?.remove();
  });

  it('keeps Python state across runs, shows the last expression, writes into its working folder', async () => {
    const workdir = join(folder.dir, 'c1');
    const box = await pool.acquire(workdir, 1024 * 1024 * 1024);
    const first = await box.run('import pandas as pd\ndf = pd.DataFrame({"a": [1, 2, 3]})\nprint(df["a"].sum())\ndf.to_csv("table.csv", index=False)', 30_000);
    expect(first).toMatchObject({ status: 'ok', logs: '6\n' });
    expect(readFileSync(join(workdir, 'table.csv'), 'utf8')).toBe('a\n1\n2\n3\n');
    const second = await box.run('df["a"].max() * 10', 30_000);
    expect(second).toMatchObject({ status: 'ok', logs: '30\n' });
    await pool.release(box);
  }, 90_000);

  it('returns matplotlib figures as PNG and errors as tracebacks', async () => {
    const box = await pool.acquire(join(folder.dir, 'c2'), 1024 * 1024 * 1024);
    const plot = await box.run('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.title("t")', 30_000);
    expect(plot.status).toBe('ok');
    expect(plot.images).toHaveLength(1);
    expect(Buffer.from(plot.images[0], 'base64').subarray(1, 4).toString('latin1')).toBe('PNG');
    const failed = await box.run('1 / 0', 30_000);
    expect(failed.status).toBe('error');
    expect(failed.logs).toContain('ZeroDivisionError');
    const sub = await box.run('import subprocess\nsubprocess.run(["echo", "from a child"])', 30_000);
    expect(sub.logs).toContain('from a child');
    await pool.release(box);
  }, 90_000);

  it('soft timeout interrupts and keeps state; a cell that ignores it is hard-killed', async () => {
    const box = await pool.acquire(join(folder.dir, 'c3'), 1024 * 1024 * 1024);
    await box.run('x = 41', 30_000);
    const slow = await box.run('import time\ntime.sleep(60)', 1_000);
    expect(slow.status).toBe('timeout');
    expect(slow.logs).toContain('TimeoutError');
    expect((await box.run('x + 1', 30_000)).logs).toBe('42\n');
    const stubborn = await box.run('import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True: pass', 1_000);
    expect(stubborn.status).toBe('killed');
    expect(stubborn.logs).toMatch(/did not stop/);
    expect(box.alive).toBe(false);
    await pool.release(box);
  }, 90_000);

  it('caps logs per run and per line, stating what was dropped', async () => {
    const box = await pool.acquire(join(folder.dir, 'c4'), 1024 * 1024 * 1024);
    const big = await box.run('for i in range(20000): print("line", i)', 30_000);
    expect(Buffer.byteLength(big.logs)).toBeLessThan(64 * 1024 + 200);
    expect(big.droppedBytes).toBeGreaterThan(100_000);
    expect(big.logs).toMatch(/\[\d+ bytes of output dropped/);
    const long = await box.run('print("y" * 50000)', 30_000);
    expect(long.logs).toMatch(/characters of this line cut/);
    await pool.release(box);
  }, 90_000);

  it('hands out pre-started boxes and counts hits', async () => {
    const local = sandboxDir();
    const warm = testPool(local.dir, { size: 1 });
    try {
      await warm.fill();
      expect(warm.snapshot().ready).toBe(1);
      const workdir = join(local.dir, 'from-pool');
      const box = await warm.acquire(workdir, 1024 * 1024 * 1024);
      expect(warm.snapshot().hits).toBe(1);
      await box.run('open("here.txt", "w").write("ok")', 30_000);
      expect(existsSync(join(workdir, 'here.txt'))).toBe(true);
      const other = await warm.acquire(join(local.dir, 'big'), 2 * 1024 * 1024 * 1024);
      expect(warm.snapshot().misses).toBe(1);
      await warm.release(box);
      await warm.release(other);
    } finally {
      await warm.close();
      local.remove();
    }
  }, 120_000);
});
