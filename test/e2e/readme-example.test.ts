// The README's SDK example, run as written (only the port differs) against the quick-start gateway:
// `switchyard serve` with no upstream (the built-in simulated model) and a fresh data folder.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, ROOT } from '../helpers/mcp-servers.js';

let gateway: ChildProcess;
let port: number;
let dataDir: string;
let log = '';

/** The code block that follows "With the official SDK" in the README. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('With the official SDK'));
  const match = /```js\n([\s\S]*?)```/.exec(section);
  if (!match) throw new Error('README: no ```js block after "With the official SDK"');
  return match[1];
}

beforeAll(async () => {
  port = await freePort();
  dataDir = mkdtempSync(join(tmpdir(), 'switchyard-readme-'));
  gateway = spawn(process.execPath, [join(ROOT, 'dist', 'cli.js'), 'serve', '--port', String(port), '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '' } });
  gateway.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  gateway.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const up = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
    if (up) break;
    if (Date.now() > deadline || gateway.exitCode !== null) throw new Error(`the quick-start gateway did not come up:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}, 30_000);

afterAll(async () => {
  if (gateway && gateway.exitCode === null) {
    const exited = new Promise((ok) => gateway.once('exit', ok));
    gateway.kill('SIGTERM');
    await exited;
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('README', () => {
  it('the quick start says it runs the built-in simulated model', () => {
    expect(log).toMatch(/simulat/i);
  });

  it('the SDK example runs as written and prints what its comments say', async () => {
    const code = readmeExample();
    expect(code).toContain("baseURL: 'http://127.0.0.1:8080/v1'");
    // inside the repo, so `import 'openai'` resolves to the installed SDK
    const dir = join(ROOT, 'test', '.tmp');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `readme-example-${process.pid}.mjs`);
    writeFileSync(file, code.replace('http://127.0.0.1:8080/v1', `http://127.0.0.1:${port}/v1`));
    try {
      const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((ok) => child.once('exit', ok));
      expect(stderr).toBe('');
      expect(code).toBe(0);
      // each comment in the example states what that line prints
      const expected = [...readmeExample().matchAll(/\/\/ (.+)$/gm)].map((m) => m[1]);
      expect(expected).toEqual(['get_weather {"city": "Oslo"}', 'The tool returned: {"temp_c": 4}', 'You said: Tell me a story', 'completed']);
      expect(stdout).toBe(`get_weather {"city": "Oslo"}\nThe tool returned: {"temp_c": 4}\nYou said: Tell me a story\ncompleted\n`);
    } finally {
      rmSync(file, { force: true });
    }
  }, 30_000);
});
