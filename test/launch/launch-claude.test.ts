import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { CLAUDE_BIN, claudeInstalled, NOT_INSTALLED, runSwitchyard } from '../helpers/agent-clients.js';

/**
 * `switchyard claude` with the real Claude Code (pinned in test/clients) over the gateway's
 * Messages surface, against the simulated model scripted from the prompt (`#sim`).
 */
const MAX_MODEL_LEN = 65_536;

describe.skipIf(!claudeInstalled)(`switchyard claude (real Claude Code)${claudeInstalled ? '' : `: skipped, ${NOT_INSTALLED}`}`, { timeout: 120_000 }, () => {
  let sim: Simulator;
  let root: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    sim = await startSimulator({ port: 0, maxModelLen: MAX_MODEL_LEN });
    root = mkdtempSync(join(tmpdir(), 'switchyard-claude-test-'));
    mkdirSync(join(root, 'home'));
    // the user's own Claude settings and sessions are never read or written: a home of the test's own
    env = { PATH: process.env.PATH, HOME: join(root, 'home'), SWITCHYARD_CLAUDE_BIN: CLAUDE_BIN };
  });
  afterAll(async () => {
    await sim?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('completes a Bash turn: the command runs in the working folder and its output goes back to the model', async () => {
    const cwd = join(root, 'work');
    mkdirSync(cwd);
    const script = {
      rounds: [{ tool_calls: [{ name: 'Bash', arguments: { command: 'echo claude-$((6*7)) > bash-out.txt && cat bash-out.txt', description: 'Write and show a file' } }] }, { text: 'Bash said forty-two.' }],
    };
    const run = await runSwitchyard(['claude', '--upstream', sim.url, '--data-dir', join(root, 'data'), '--', '-p', `#sim ${JSON.stringify(script)}`, '--allowedTools', 'Bash'], { cwd, env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Bash said forty-two.');
    expect(readFileSync(join(cwd, 'bash-out.txt'), 'utf8')).toBe('claude-42\n');

    const requests = sim.requests.filter((r) => r.path === '/v1/chat/completions' && JSON.stringify(r.body.messages).includes('Bash said forty-two.'));
    expect(requests.length).toBeGreaterThanOrEqual(2);
    const first = requests[0].body;
    // every Claude role was mapped to the served model; Claude Code's tools reached it as functions
    expect(first.model).toBe('switchyard-sim');
    expect(first.tools.map((t: any) => t.function.name)).toContain('Bash');
    const last = requests.at(-1)!.body;
    const result = last.messages.find((m: any) => m.role === 'tool');
    expect(result.content).toContain('claude-42');
  });

  it('runs a 12-step agent loop: Claude Code resends the whole conversation (its cache mark moving on) and the model sees it grow by exactly each step', async () => {
    const cwd = join(root, 'loop');
    mkdirSync(cwd);
    const steps = 12;
    const rounds: unknown[] = Array.from({ length: steps }, (_, n) => ({ tool_calls: [{ name: 'Bash', arguments: { command: `echo step-${n}-$((${n}*${n}))`, description: `Step ${n}` } }] }));
    rounds.push({ text: 'All twelve steps ran.' });
    const before = sim.requests.length;
    const run = await runSwitchyard(['claude', '--upstream', sim.url, '--data-dir', join(root, 'data-loop'), '--', '-p', `#sim ${JSON.stringify({ rounds })}`, '--allowedTools', 'Bash'], { cwd, env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('All twelve steps ran.');

    // the agent's requests (Claude Code also asks the model for a title and the like: those carry no script's output)
    const loop = sim.requests.slice(before).filter((r) => r.path === '/v1/chat/completions' && JSON.stringify(r.body.messages).includes('step-0'));
    // one request per step, then the one answered with text
    expect(loop.length).toBe(steps + 1);
    const results = (body: any) => body.messages.filter((m: any) => m.role === 'tool').map((m: any) => String(m.content).trim());
    expect(results(loop.at(-1)!.body)).toEqual(Array.from({ length: steps }, (_, n) => `step-${n}-${n * n}`));
    // each request's messages are the last one's, byte for byte, and then the new step
    for (let i = 1; i < loop.length; i++) {
      const earlier = loop[i - 1].body.messages;
      expect(JSON.stringify(loop[i].body.messages.slice(0, earlier.length)), `request ${i}`).toBe(JSON.stringify(earlier));
      expect(results(loop[i].body)).toHaveLength(i);
    }
  });

  it('works with a gateway that checks keys: --api-key is the bearer token Claude Code sends', async () => {
    const withKeys = join(root, 'keys.json');
    writeFileSync(withKeys, JSON.stringify({ auth: { keys: [{ name: 'dev', key: 'sk-launcher-test-key-0002' }] } }));
    const cwd = join(root, 'auth');
    mkdirSync(cwd);
    const script = { rounds: [{ text: 'Authenticated Claude answer.' }] };
    const run = await runSwitchyard(['claude', '--upstream', sim.url, '--data-dir', join(root, 'data-auth'), '--config', withKeys, '--api-key', 'sk-launcher-test-key-0002', '--', '-p', `#sim ${JSON.stringify(script)}`], { cwd, env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Authenticated Claude answer.');
  });

  it("exits with Claude Code's own status when it fails", async () => {
    const cwd = join(root, 'bad-args');
    mkdirSync(cwd);
    const run = await runSwitchyard(['claude', '--upstream', sim.url, '--data-dir', join(root, 'data'), '--', '--no-such-claude-flag'], { cwd, env });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/no-such-claude-flag/);
  });
});
