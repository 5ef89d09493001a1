// Records the Messages request bodies the real Claude Code sends (test/fixtures/claude-code/):
// a gateway child in front of the built-in simulator, a recording proxy in front of the gateway,
// and Claude Code (pinned in test/clients) pointed at the proxy, running a scripted agent loop of
// CAPTURE_STEPS (6) `Bash` calls in a throwaway home and working folder. Each POST body is written
// to <folder>/NNN-<path>.json byte for byte as sent.
//
//   node bench/capture-claude-code.mjs <folder>    (after `npm run build` and `npm run clients:install`)
import http from 'node:http';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, installCleanupHooks, startGatewayChild, startSimulatorChild, stopAll } from './lib/procs.mjs';

const out = resolve(process.argv[2] ?? 'claude-code-capture');
const steps = Number(process.env.CAPTURE_STEPS ?? 6);
const claude = new URL('../test/clients/node_modules/.bin/claude', import.meta.url).pathname;
if (!existsSync(claude)) {
  console.error('Claude Code is not installed: run `npm run clients:install` first');
  process.exit(1);
}

const root = mkdtempSync(join(tmpdir(), 'switchyard-capture-'));
installCleanupHooks(async () => rmSync(root, { recursive: true, force: true }));
mkdirSync(out, { recursive: true });
const sim = await startSimulatorChild();
const port = await freePort();
await startGatewayChild({ port, upstream: sim.url, dataDir: join(root, 'data') });

let recorded = 0;
const proxy = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (req.method === 'POST') writeFileSync(join(out, `${String(++recorded).padStart(3, '0')}${req.url.replace(/[^a-z]/gi, '-')}.json`), body);
    const upstream = http.request({ host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    upstream.end(body);
  });
});
const proxyPort = await freePort();
await new Promise((done) => proxy.listen(proxyPort, '127.0.0.1', done));

const rounds = [];
for (let i = 0; i < steps; i++) rounds.push({ tool_calls: [{ name: 'Bash', arguments: { command: `echo step-${i} && seq 1 ${5 + i}`, description: `Step ${i}` } }] });
rounds.push({ text: 'All steps done.' });
const cwd = join(root, 'work');
mkdirSync(cwd);
mkdirSync(join(root, 'home'));
// as `switchyard claude` sets it up (src/launch/claude.ts), with the proxy as the base URL
const model = 'switchyard-sim';
const env = {
  PATH: process.env.PATH,
  HOME: join(root, 'home'),
  ANTHROPIC_BASE_URL: `http://127.0.0.1:${proxyPort}`,
  ANTHROPIC_AUTH_TOKEN: 'sk-switchyard-placeholder',
  ANTHROPIC_MODEL: model,
  ANTHROPIC_DEFAULT_OPUS_MODEL: model,
  ANTHROPIC_DEFAULT_SONNET_MODEL: model,
  ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
  ANTHROPIC_SMALL_FAST_MODEL: model,
  DISABLE_TELEMETRY: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
};
const child = spawn(claude, ['-p', `#sim ${JSON.stringify({ rounds })}`, '--allowedTools', 'Bash'], { cwd, env, stdio: ['ignore', 'pipe', 'inherit'] });
let stdout = '';
child.stdout.on('data', (chunk) => (stdout += chunk));
const status = await new Promise((done) => child.once('close', done));
console.log(`claude exited ${status}: ${stdout.trim().slice(0, 200)}`);
console.log(`${recorded} request bodies in ${out}`);
proxy.close();
await stopAll();
rmSync(root, { recursive: true, force: true });
process.exit(status === 0 ? 0 : 1);
