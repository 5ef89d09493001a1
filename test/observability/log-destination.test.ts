import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

// The stdout log destination (src/observability/log-destination.ts) in a child process of its
// own, as the gateway runs it: stdout a pipe, lines logged through pino.

const DESTINATION = new URL('../../dist/observability/log-destination.js', import.meta.url).href;

/** Runs `body` (an ES module's text, with `log` a pino logger on the batched destination) and collects its output. */
function runChild(body: string, options: { onLine?: (line: string, stdin: NodeJS.WritableStream) => void; pauseFirstMs?: number } = {}): Promise<{ lines: string[]; stderr: string; code: number | null }> {
  const source = `import pino from 'pino';\nimport { batchedStdout } from ${JSON.stringify(DESTINATION)};\nconst log = pino({ base: null }, batchedStdout());\n${body}`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], { cwd: new URL('../..', import.meta.url).pathname, stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      options.onLine?.(line, child.stdin);
    }
  });
  child.stderr.on('data', (chunk) => (stderr += chunk));
  if (options.pauseFirstMs) {
    child.stdout.pause();
    setTimeout(() => child.stdout.resume(), options.pauseFirstMs);
  }
  return new Promise((resolve) => child.once('close', (code) => resolve({ lines, stderr, code })));
}

describe('the batched stdout log', () => {
  it('writes a quiet process’s lines without waiting for more (the child only exits once it has seen them)', async () => {
    // the child logs three lines, then waits for its stdin to close: had the lines waited for a
    // full batch or for exit, the parent would never close it and the test would time out
    const out = await runChild(`for (const n of [1, 2, 3]) log.info({ n }, 'quiet');\nprocess.stdin.resume();\nprocess.stdin.on('end', () => process.exit(0));`, {
      onLine: (line, stdin) => {
        if (JSON.parse(line).n === 3) stdin.end();
      },
    });
    expect(out.code).toBe(0);
    expect(out.lines.map((l) => JSON.parse(l).n)).toEqual([1, 2, 3]);
  }, 10_000);

  it('loses nothing and keeps the order when the process exits right after logging', async () => {
    // lines in batches already handed to the writer, lines still collecting, then process.exit
    const out = await runChild(`for (let n = 0; n < 5000; n++) log.info({ n }, 'burst');\nawait new Promise((r) => setTimeout(r, 5));\nfor (let n = 5000; n < 5010; n++) log.info({ n }, 'tail');\nprocess.exit(0);`);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.lines.map((l) => JSON.parse(l).n)).toEqual(Array.from({ length: 5010 }, (_, n) => n));
  }, 20_000);

  it('holds what a full pipe does not take and writes it, in order, once the reader catches up', async () => {
    // touching process.stdout makes fd 1 non-blocking (libuv): a full pipe then answers EAGAIN
    // instead of blocking; the parent reads nothing for 300 ms while the child logs ≈ 1 MB
    const out = await runChild(
      `void process.stdout.writableLength;\nfor (let n = 0; n < 10000; n++) { log.info({ n, pad: 'x'.repeat(60) }, 'flood'); if (n % 500 === 0) await new Promise((r) => setTimeout(r, 5)); }\nawait new Promise((r) => setTimeout(r, 200));\nprocess.exit(0);`,
      { pauseFirstMs: 300 },
    );
    expect(out.stderr).toBe('');
    expect(out.lines.map((l) => JSON.parse(l).n)).toEqual(Array.from({ length: 10000 }, (_, n) => n));
  }, 20_000);

  it('writes lines logged one per event-loop turn (one per request) in batches', async () => {
    // counts the writes to fd 1 (either kind: pino's own destination writes on the thread pool);
    // unbatched, each turn's line is a write of its own
    const out = await runChild(
      `import fs from 'node:fs';\nimport { syncBuiltinESMExports } from 'node:module';\nlet writes = 0;\n` +
        `for (const name of ['write', 'writeSync']) { const original = fs[name]; fs[name] = function (fd, ...rest) { if (fd === 1) writes++; return original.call(this, fd, ...rest); }; }\nsyncBuiltinESMExports();\n` +
        `for (let n = 0; n < 2000; n++) { log.info({ n, route: '/v1/responses', status: 200, durationMs: 1.5 }, 'request'); await new Promise((r) => setImmediate(r)); if (n % 100 === 0) await new Promise((r) => setTimeout(r, 1)); }\n` +
        `await new Promise((r) => setTimeout(r, 100));\nprocess.stderr.write(String(writes));\nprocess.exit(0);`,
    );
    expect(out.lines).toHaveLength(2000);
    const writes = Number(out.stderr);
    // 2,000 lines of ≈ 110 bytes: ≈ 27 full batches, plus a few flushed by the timer
    expect(writes).toBeGreaterThan(0);
    expect(writes).toBeLessThan(100);
  }, 20_000);
});
