import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { CODEX_BIN, codexInstalled, NOT_INSTALLED, runSwitchyard } from '../helpers/agent-clients.js';

/**
 * `switchyard codex` with the real Codex CLI (pinned in test/clients) against the simulated model:
 * each test scripts the model (`#sim` in the prompt), runs `codex exec` through the launcher and
 * checks what reached the model, what Codex did with the answers, and Codex's exit status.
 */
const MAX_MODEL_LEN = 65_536;
const IMAGE_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64');

describe.skipIf(!codexInstalled)(`switchyard codex (real Codex CLI)${codexInstalled ? '' : `: skipped, ${NOT_INSTALLED}`}`, { timeout: 120_000 }, () => {
  let sim: Simulator;
  let root: string;
  let env: NodeJS.ProcessEnv;
  let configFile: string;
  let runs = 0;

  beforeAll(async () => {
    sim = await startSimulator({ port: 0, maxModelLen: MAX_MODEL_LEN });
    root = mkdtempSync(join(tmpdir(), 'switchyard-codex-test-'));
    mkdirSync(join(root, 'home'));
    mkdirSync(join(root, 'codex-home'));
    configFile = join(root, 'gateway.json');
    writeFileSync(configFile, JSON.stringify({ clients: { models: { 'switchyard-sim': { inputModalities: ['text', 'image'] } } } }));
    // the user's own Codex config and sessions are never read or written: a home of the test's own
    env = { PATH: process.env.PATH, HOME: join(root, 'home'), CODEX_HOME: join(root, 'codex-home'), SWITCHYARD_CODEX_BIN: CODEX_BIN, SWITCHYARD_LOG_LEVEL: 'info' };
  });
  afterAll(async () => {
    await sim?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** A fresh working folder and `switchyard codex --upstream SIM -- exec … PROMPT`. */
  async function codexExec(prompt: string, options: { extra?: string[]; files?: Record<string, Buffer | string>; config?: boolean } = {}) {
    const cwd = join(root, `work-${++runs}`);
    mkdirSync(cwd);
    for (const [name, data] of Object.entries(options.files ?? {})) writeFileSync(join(cwd, name), data);
    const gatewayFlags = ['--upstream', sim.url, '--data-dir', join(root, 'data')];
    if (options.config !== false) gatewayFlags.push('--config', configFile);
    const result = await runSwitchyard(['codex', ...gatewayFlags, '--', 'exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', prompt, ...(options.extra ?? [])], { cwd, env });
    return { ...result, cwd };
  }

  /** The chat requests of one scripted conversation (its `#sim` line is unique per test). */
  function requestsWith(marker: string) {
    return sim.requests.filter((r) => r.path === '/v1/chat/completions' && JSON.stringify(r.body.messages).includes(marker));
  }

  it('completes a shell turn: exec_command runs in the working folder and its output goes back to the model', async () => {
    const script = { rounds: [{ tool_calls: [{ name: 'exec_command', arguments: { cmd: 'echo shell-$((6*7)) > shell-out.txt && cat shell-out.txt' } }] }, { text: 'The shell said forty-two.' }] };
    const run = await codexExec(`#sim ${JSON.stringify(script)}`);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('The shell said forty-two.');
    expect(readFileSync(join(run.cwd, 'shell-out.txt'), 'utf8')).toBe('shell-42\n');

    const requests = requestsWith('The shell said forty-two.');
    expect(requests).toHaveLength(2);
    const [first, second] = requests.map((r) => r.body);
    // Codex's own prompt (from its bundled catalog) as the system message, its tools as functions
    expect(first.model).toBe('switchyard-sim');
    expect(first.messages[0].role).toBe('system');
    expect(first.messages[0].content).toMatch(/Codex/);
    expect(first.tools.map((t: any) => t.function.name)).toContain('exec_command');
    const result = second.messages.find((m: any) => m.role === 'tool');
    expect(result.content).toContain('shell-42');
  });

  it('completes an apply_patch turn: the model sees the freeform custom tool and the patch changes a file', async () => {
    const patch = '*** Begin Patch\n*** Update File: greeting.txt\n@@\n-hello world\n+hello switchyard\n*** End Patch\n';
    const script = { rounds: [{ tool_calls: [{ name: 'apply_patch', arguments: { input: patch } }] }, { text: 'Patched the greeting.' }] };
    const run = await codexExec(`#sim ${JSON.stringify(script)}`, { files: { 'greeting.txt': 'hello world\n' } });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Patched the greeting.');
    expect(readFileSync(join(run.cwd, 'greeting.txt'), 'utf8')).toBe('hello switchyard\n');

    const [first, second] = requestsWith('Patched the greeting.').map((r) => r.body);
    // a custom (freeform) tool reaches the model as one string parameter `input` with its grammar
    // described; a JSON-function apply_patch (Codex's generic fallback) would have other parameters
    const applyPatch = first.tools.find((t: any) => t.function.name === 'apply_patch').function;
    expect(applyPatch.parameters.required).toEqual(['input']);
    expect(Object.keys(applyPatch.parameters.properties)).toEqual(['input']);
    expect(applyPatch.description).toMatch(/lark grammar/);
    const result = second.messages.find((m: any) => m.role === 'tool');
    expect(result.content).toMatch(/Success\. Updated the following files/);
    expect(result.content).toContain('greeting.txt');
  });

  it('completes a turn with two calls in one round, each result going back to the model', async () => {
    const script = {
      rounds: [
        {
          tool_calls: [
            { name: 'exec_command', arguments: { cmd: 'echo first-call-output' } },
            { name: 'exec_command', arguments: { cmd: 'echo second-call-output' } },
          ],
        },
        { text: 'Both calls are done.' },
      ],
    };
    const run = await codexExec(`#sim ${JSON.stringify(script)}`);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Both calls are done.');
    const requests = requestsWith('Both calls are done.');
    expect(requests).toHaveLength(2);
    const second = requests[1].body;
    const assistant = second.messages.filter((m: any) => m.role === 'assistant');
    expect(assistant.at(-1).tool_calls).toHaveLength(2);
    const results = second.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);
    expect(results).toHaveLength(2);
    expect(results.join('\n')).toContain('first-call-output');
    expect(results.join('\n')).toContain('second-call-output');
  });

  it('sends an attached image to a model the config lists with the image modality', async () => {
    const script = { rounds: [{ text: 'I see one pixel.' }] };
    const run = await codexExec(`#sim ${JSON.stringify(script)}`, { files: { 'dot.png': IMAGE_PNG }, extra: ['-i', 'dot.png'] });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('I see one pixel.');
    const [request] = requestsWith('I see one pixel.').map((r) => r.body);
    const parts = request.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : []));
    const image = parts.find((p: any) => p.type === 'image_url');
    expect(image.image_url.url).toBe(`data:image/png;base64,${IMAGE_PNG.toString('base64')}`);
  });

  it('does not send images to a text-only model (the default): the catalog says so and Codex leaves them out', async () => {
    const script = { rounds: [{ text: 'No image came.' }] };
    const run = await codexExec(`#sim ${JSON.stringify(script)}`, { files: { 'dot.png': IMAGE_PNG }, extra: ['-i', 'dot.png'], config: false });
    expect(run.status, run.stderr).toBe(0);
    const [request] = requestsWith('No image came.').map((r) => r.body);
    expect(JSON.stringify(request.messages)).not.toContain('image_url');
    expect(JSON.stringify(request.messages)).toContain('do not support image input');
  });

  it('the generated catalog is what `codex debug models` prints: the served slug, freeform apply_patch, the context window', async () => {
    const cwd = join(root, 'debug-models');
    mkdirSync(cwd);
    const run = await runSwitchyard(['codex', '--upstream', sim.url, '--data-dir', join(root, 'data'), '--config', configFile, '--', 'debug', 'models'], { cwd, env });
    expect(run.status, run.stderr).toBe(0);
    const printed = JSON.parse(run.stdout) as { models: Array<Record<string, any>> };
    // the catalog replaces Codex's own: only the served model is listed
    expect(printed.models.map((m) => m.slug)).toEqual(['switchyard-sim']);
    const entry = printed.models[0];
    expect(entry.apply_patch_tool_type).toBe('freeform');
    expect(entry.context_window).toBe(MAX_MODEL_LEN);
    expect(entry.input_modalities).toEqual(['text', 'image']);
    expect(entry.shell_type).toBe('unified_exec');
    expect(entry.supported_reasoning_levels.map((l: any) => l.effort)).toEqual(['low', 'medium', 'high']);
    expect(entry.base_instructions).toMatch(/Codex/);
  });

  /**
   * A turn whose tool output outgrows the context: the scripted model runs `seq`, Codex compacts
   * (a request ending in its compaction prompt, answered with a summary) and continues from the
   * summary hand-off. `when` gives the model's answers to those two prompts of Codex's own.
   */
  const isCompaction = (body: any) => String(body.messages.at(-1).content).startsWith('You are performing a CONTEXT CHECKPOINT COMPACTION');
  const compactionScript = (final: string) => ({
    rounds: [{ tool_calls: [{ name: 'exec_command', arguments: { cmd: 'seq 100000 103000' } }] }, { text: 'Finished without compaction.' }],
    when: [
      { user_contains: 'Another language model started', rounds: [{ text: final }] },
      { user_contains: 'CONTEXT CHECKPOINT COMPACTION', rounds: [{ text: 'SUMMARY: listed numbers with seq.' }] },
    ],
  });

  it('compacts a long session at the context window the catalog gives (auto-compaction with a custom provider)', async () => {
    const small = join(root, 'small-window.json');
    writeFileSync(small, JSON.stringify({ clients: { models: { 'switchyard-sim': { contextWindow: 8_000 } } } }));
    const cwd = join(root, 'compact-auto');
    mkdirSync(cwd);
    const script = compactionScript('Finished after auto-compaction.');
    const run = await runSwitchyard(['codex', '--upstream', sim.url, '--data-dir', join(root, 'data'), '--config', small, '--', 'exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', `#sim ${JSON.stringify(script)}`], { cwd, env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Finished after auto-compaction.');
    const requests = requestsWith('Finished after auto-compaction.').map((r) => r.body);
    // Codex's compaction is a plain request with its prompt last (no tools), served like any other
    const compaction = requests.find(isCompaction);
    expect(compaction).toBeDefined();
    expect(compaction.tools).toBeUndefined();
    expect(compaction.messages.some((m: any) => m.role === 'tool' && String(m.content).includes('100000'))).toBe(true);
    const last = requests.at(-1)!;
    expect(String(last.messages.at(-1).content)).toContain('SUMMARY: listed numbers with seq.');
    // after compaction the long tool output is gone from what the model sees
    expect(last.messages.some((m: any) => m.role === 'tool')).toBe(false);
  });

  it('compacts when the upstream refuses the context: context_length_exceeded makes Codex trim and retry instead of failing', async () => {
    // the model holds 9,000 tokens; the history with the tool output and Codex's prompt does not fit
    const tight = await startSimulator({ port: 0, maxModelLen: 9_000 });
    try {
      const cwd = join(root, 'compact-overflow');
      mkdirSync(cwd);
      const script = compactionScript('Finished after trimmed compaction.');
      const run = await runSwitchyard(['codex', '--upstream', tight.url, '--data-dir', join(root, 'data'), '--', 'exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', `#sim ${JSON.stringify(script)}`], { cwd, env });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain('Finished after trimmed compaction.');
      // Codex recognised the gateway's context_length_exceeded (its own words), trimmed, and compacted
      expect(run.stderr).toMatch(/Context window exceeded while compacting/);
      const compactions = tight.requests.filter((r) => r.path === '/v1/chat/completions' && isCompaction(r.body));
      expect(compactions.length).toBeGreaterThan(1); // refused, then smaller
      expect(compactions.at(-1)!.body.messages.length).toBeLessThan(compactions[0].body.messages.length);
    } finally {
      await tight.close();
    }
  });

  it('serves Codex remote compaction (an OpenAI-named provider with remote_compaction_v2): compaction_trigger answered with a compaction item', async () => {
    const small = join(root, 'small-window-remote.json');
    writeFileSync(small, JSON.stringify({ clients: { models: { 'switchyard-sim': { contextWindow: 8_000 } } } }));
    const cwd = join(root, 'compact-remote');
    mkdirSync(cwd);
    const script = {
      rounds: [{ tool_calls: [{ name: 'exec_command', arguments: { cmd: 'seq 100000 103000' } }] }, { text: 'Finished without compaction.' }],
      when: [
        // the gateway's own summarization prompt, then the conversation carrying its summary
        { user_contains: 'Context compaction:', rounds: [{ text: 'SUMMARY: listed numbers with seq.' }] },
        { any_contains: 'SUMMARY: listed numbers with seq.', rounds: [{ text: 'Finished after remote compaction.' }] },
      ],
    };
    // Codex compacts remotely only with a provider it takes for OpenAI's: the name, as the user's own config would say
    const codexArgs = ['-c', 'model_providers.switchyard.name="OpenAI"', '-c', 'features.remote_compaction_v2=true', 'exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', `#sim ${JSON.stringify(script)}`];
    const run = await runSwitchyard(['codex', '--upstream', sim.url, '--data-dir', join(root, 'data'), '--config', small, '--', ...codexArgs], { cwd, env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toContain('context compacted');
    expect(run.stdout).toContain('Finished after remote compaction.');
    const requests = requestsWith('Finished after remote compaction.').map((r) => r.body);
    // the summary request covered the tool output; the last request has the summary and the user's prompt, no tool output
    expect(requests.some((b) => String(b.messages.at(-1).content).startsWith('Context compaction:') && b.messages.some((m: any) => m.role === 'tool'))).toBe(true);
    const last = requests.at(-1)!;
    expect(JSON.stringify(last.messages)).toContain('Summary of the earlier conversation: SUMMARY: listed numbers with seq.');
    expect(last.messages.some((m: any) => m.role === 'tool')).toBe(false);
  });

  it('works with a gateway that checks keys: --api-key reaches Codex through env_key; without it, a clear refusal', async () => {
    const withKeys = join(root, 'keys.json');
    writeFileSync(withKeys, JSON.stringify({ auth: { keys: [{ name: 'dev', key: 'sk-launcher-test-key-0001' }] } }));
    const cwd = join(root, 'auth');
    mkdirSync(cwd);
    const script = { rounds: [{ text: 'Authenticated answer.' }] };
    const flags = ['--upstream', sim.url, '--data-dir', join(root, 'data-auth'), '--config', withKeys];
    const exec = ['exec', '--skip-git-repo-check', `#sim ${JSON.stringify(script)}`];
    const run = await runSwitchyard(['codex', ...flags, '--api-key', 'sk-launcher-test-key-0001', '--', ...exec], { cwd, env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Authenticated answer.');

    const refused = await runSwitchyard(['codex', ...flags, '--', ...exec], { cwd, env });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/answered GET \/v1\/models\?client=codex with 401/);
  });

  it("exits with Codex's own status when Codex fails", async () => {
    const cwd = join(root, 'bad-args');
    mkdirSync(cwd);
    const run = await runSwitchyard(['codex', '--upstream', sim.url, '--data-dir', join(root, 'data'), '--', 'exec', '--no-such-codex-flag'], { cwd, env });
    expect(run.status).toBe(2); // clap's usage error
    expect(run.stderr).toMatch(/no-such-codex-flag/);
  });
});
