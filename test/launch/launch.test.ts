import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAUNCHER_OPTIONS, splitArguments } from '../../src/launch/arguments.js';
import { serveOptions } from '../../src/config/cli-flags.js';
import { ConfigError } from '../../src/config/config.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { CLI, runSwitchyard } from '../helpers/agent-clients.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * The launchers' own mechanics, with stand-in agents (shell scripts given as SWITCHYARD_CODEX_BIN /
 * SWITCHYARD_CLAUDE_BIN) that record what they were started with: arguments, environment, the
 * catalog file, signals and exit status. The real CLIs are in launch-codex / launch-claude tests.
 */
describe('launcher arguments', () => {
  const options = { ...serveOptions(), ...LAUNCHER_OPTIONS };
  it('reads gateway flags up to `--`, the rest is the agent’s', () => {
    expect(splitArguments(['--upstream', 'http://u/v1', '--model=m', '--', 'exec', '--model', 'x'], options)).toEqual({ values: { upstream: 'http://u/v1', model: 'm' }, rest: ['exec', '--model', 'x'] });
  });
  it('without `--`, the agent’s arguments start at the first token that is not a gateway flag', () => {
    expect(splitArguments(['--gateway', 'http://g', 'exec', '--upstream', 'x'], options)).toEqual({ values: { gateway: 'http://g' }, rest: ['exec', '--upstream', 'x'] });
    expect(splitArguments([], options)).toEqual({ values: {}, rest: [] });
  });
  it('a flag without its value is a config error', () => {
    expect(() => splitArguments(['--upstream'], options)).toThrow(ConfigError);
    expect(() => splitArguments(['--upstream', '--'], options)).toThrow(/--upstream needs a value/);
  });
});

describe('switchyard codex / claude with stand-in agents', { timeout: 30_000 }, () => {
  let root: string;
  let sim: Simulator;
  let tg: TestGateway;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'switchyard-launch-test-'));
    sim = await startSimulator({ port: 0, maxModelLen: 40_000 });
    tg = await startTestGateway();
  });
  afterAll(async () => {
    await sim?.close();
    await tg?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /**
   * A stand-in agent: records its arguments (one a line), environment and any catalog file it was
   * given in `out/`, then runs `body`. `codex debug models --bundled` fails, as an old Codex would.
   */
  function fakeAgent(name: string, body: string): { path: string; out: string } {
    const out = join(root, `${name}-out`);
    mkdirSync(out, { recursive: true });
    const path = join(root, `${name}.sh`);
    writeFileSync(
      path,
      `#!/bin/sh
if [ "$1" = debug ]; then exit 1; fi
printf '%s\\n' "$@" > '${out}/args'
env > '${out}/env'
for a in "$@"; do case "$a" in model_catalog_json=*) f=\${a#model_catalog_json=}; f=\${f#\\"}; f=\${f%\\"}; cp "$f" '${out}/catalog.json'; echo "$f" > '${out}/catalog-path';; esac; done
echo $$ > '${out}/pid'
${body}
`,
    );
    chmodSync(path, 0o755);
    return { path, out };
  }

  const baseEnv = () => ({ PATH: process.env.PATH, HOME: join(root, 'home') });
  const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);
  const envOf = (file: string) => Object.fromEntries(lines(file).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

  it('codex: a gateway for the session, the provider and catalog as -c overrides, the agent’s exit status, nothing left behind', async () => {
    const agent = fakeAgent('codex-exit', 'exit 7');
    const run = await runSwitchyard(['codex', '--upstream', sim.url, '--data-dir', join(root, 'data'), '--', 'exec', 'hi'], { cwd: root, env: { ...baseEnv(), SWITCHYARD_CODEX_BIN: agent.path } });
    expect(run.status, run.stderr).toBe(7);
    const args = lines(join(agent.out, 'args'));
    // the overrides come first, the user's arguments after them unchanged
    expect(args.slice(-2)).toEqual(['exec', 'hi']);
    const overrides = args.filter((_, i) => args[i - 1] === '-c');
    const provider = overrides.find((o) => o.startsWith('model_providers.switchyard='))!;
    const baseUrl = /base_url="([^"]+)"/.exec(provider)![1];
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(provider).toContain('wire_api="responses"');
    expect(provider).not.toContain('env_key'); // no key given: none asked for
    expect(overrides).toContain('model_provider="switchyard"');
    expect(overrides).toContain('model="switchyard-sim"');
    const catalog = JSON.parse(readFileSync(join(agent.out, 'catalog.json'), 'utf8'));
    expect(catalog.models).toHaveLength(1);
    expect(catalog.models[0]).toMatchObject({ slug: 'switchyard-sim', apply_patch_tool_type: 'freeform', context_window: 40_000, input_modalities: ['text'] });
    // the gateway started for the session answered there, and is gone once the agent exited
    await expect(fetch(`${baseUrl}/models`)).rejects.toThrow();
    expect(existsSync(readFileSync(join(agent.out, 'catalog-path'), 'utf8').trim())).toBe(false);
    expect(run.stderr).toContain('launcher.log');
  });

  it('codex --gateway URL --api-key: the running gateway, the key through env_key', async () => {
    const agent = fakeAgent('codex-gateway', 'exit 0');
    const run = await runSwitchyard(['codex', '--gateway', tg.baseURL, '--api-key', 'sk-switchyard-test', '--model', 'my-alias', 'exec', 'hi'], { cwd: root, env: { ...baseEnv(), SWITCHYARD_CODEX_BIN: agent.path } });
    expect(run.status, run.stderr).toBe(0);
    const overrides = lines(join(agent.out, 'args')).filter((_, i, all) => all[i - 1] === '-c');
    expect(overrides).toContain(`model_providers.switchyard={name="Switchyard", base_url="${tg.baseURL}", wire_api="responses", env_key="SWITCHYARD_API_KEY"}`);
    expect(overrides).toContain('model="my-alias"');
    expect(envOf(join(agent.out, 'env')).SWITCHYARD_API_KEY).toBe('sk-switchyard-test');
    // a model the gateway does not list still gets a catalog entry (the configured defaults)
    const catalog = JSON.parse(readFileSync(join(agent.out, 'catalog.json'), 'utf8'));
    expect(catalog.models.map((m: any) => m.slug)).toEqual(['switchyard-sim', 'my-alias']);
  });

  it('claude: base URL, bearer key and every model role through the environment; the user’s Anthropic key is not passed on', async () => {
    const agent = fakeAgent('claude-env', 'exit 0');
    const run = await runSwitchyard(['claude', '--upstream', sim.url, '--data-dir', join(root, 'data'), '--api-key', 'sk-switchyard-test', '--', '-p', 'hi'], {
      cwd: root,
      env: { ...baseEnv(), SWITCHYARD_CLAUDE_BIN: agent.path, ANTHROPIC_API_KEY: 'sk-ant-users-own' },
    });
    expect(run.status, run.stderr).toBe(0);
    expect(lines(join(agent.out, 'args'))).toEqual(['-p', 'hi']);
    const env = envOf(join(agent.out, 'env'));
    expect(env.ANTHROPIC_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(env.ANTHROPIC_AUTH_TOKEN).toBe('sk-switchyard-test');
    expect(env.ANTHROPIC_API_KEY).toBeUndefined();
    for (const name of ['ANTHROPIC_MODEL', 'ANTHROPIC_DEFAULT_OPUS_MODEL', 'ANTHROPIC_DEFAULT_SONNET_MODEL', 'ANTHROPIC_DEFAULT_HAIKU_MODEL', 'ANTHROPIC_SMALL_FAST_MODEL']) expect(env[name]).toBe('switchyard-sim');
    expect(env.CLAUDE_CODE_MAX_CONTEXT_TOKENS).toBe('40000');
    expect(env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe('1');
  });

  it('SIGTERM to the launcher reaches the agent; the launcher exits as the agent did and leaves no process behind', async () => {
    const agent = fakeAgent('codex-sleep', 'exec sleep 60');
    const child = spawn(process.execPath, [CLI, 'codex', '--upstream', sim.url, '--data-dir', join(root, 'data'), '--', 'exec'], {
      cwd: root,
      env: { ...baseEnv(), SWITCHYARD_CODEX_BIN: agent.path },
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const pidFile = join(agent.out, 'pid');
    for (let i = 0; i < 200 && !existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 50));
    const agentPid = Number(readFileSync(pidFile, 'utf8'));
    await new Promise((r) => setTimeout(r, 100)); // the shell has exec'd sleep
    child.kill('SIGTERM');
    expect(await exited).toBe(143); // 128 + SIGTERM: the agent's end, as a shell reports it
    expect(() => process.kill(agentPid, 0)).toThrow(/ESRCH/);
  });

  it('a missing agent is a clear message and status 127', async () => {
    const run = await runSwitchyard(['codex', '--', 'exec'], { cwd: root, env: { PATH: join(root, 'empty-path'), HOME: join(root, 'home') } });
    expect(run.status).toBe(127);
    expect(run.stderr).toContain("'codex' was not found on PATH");
    expect(run.stderr).toContain('npm install -g @openai/codex');
  });

  it('an override that points nowhere is named, not PATH', async () => {
    const missing = join(root, 'no-such-codex');
    const run = await runSwitchyard(['codex', '--', 'exec'], { cwd: root, env: { PATH: join(root, 'empty-path'), HOME: join(root, 'home'), SWITCHYARD_CODEX_BIN: missing } });
    expect(run.status).toBe(127);
    expect(run.stderr).toContain(`SWITCHYARD_CODEX_BIN=${missing} is not an executable file`);
  });
});

describe('GET /v1/models?client=codex', () => {
  let sim: Simulator;
  let tg: TestGateway;
  beforeAll(async () => {
    sim = await startSimulator({ port: 0, maxModelLen: 8_192 });
    tg = await startTestGateway({ simulator: sim, config: { clients: { models: { 'switchyard-sim': { inputModalities: ['text', 'image'], reasoning: false } } } } });
  });
  afterAll(async () => {
    await tg?.close();
    await sim?.close();
  });

  it('answers with a Codex catalog: the served slug, its context window from max_model_len, the configured modalities', async () => {
    const res = await fetch(`${tg.baseURL}/models?client=codex`);
    expect(res.status).toBe(200);
    const body: any = await res.json();
    expect(body.models).toHaveLength(1);
    expect(body.models[0]).toMatchObject({
      slug: 'switchyard-sim',
      context_window: 8_192,
      input_modalities: ['text', 'image'],
      apply_patch_tool_type: 'freeform',
      shell_type: 'unified_exec',
      supported_reasoning_levels: [],
      visibility: 'list',
      supported_in_api: true,
    });
    expect(body.models[0].default_reasoning_level).toBeUndefined();
    expect(body.models[0].base_instructions.length).toBeGreaterThan(50);
    // Codex's own model-list fetch sends client_version: the same answer
    expect(((await (await fetch(`${tg.baseURL}/models?client_version=0.171.0`)).json()) as any).models[0].slug).toBe('switchyard-sim');
    // without it: the upstream's list as before
    expect(((await (await fetch(`${tg.baseURL}/models`)).json()) as any).data[0]).toMatchObject({ id: 'switchyard-sim', max_model_len: 8_192 });
  });
});

describe('an upstream context overflow is context_length_exceeded', () => {
  let sim: Simulator;
  let tg: TestGateway;
  beforeAll(async () => {
    sim = await startSimulator({ port: 0, maxModelLen: 100 });
    tg = await startTestGateway({ simulator: sim });
  });
  afterAll(async () => {
    await tg?.close();
    await sim?.close();
  });

  it('a blocking request: 400 with code context_length_exceeded and the upstream’s words', async () => {
    const client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'unused', maxRetries: 0 });
    const error = await client.responses.create({ model: 'switchyard-sim', input: 'word '.repeat(500) }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('context_length_exceeded');
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toMatch(/maximum context length is 100 tokens/);
  });

  it('a streamed request: the failure carries context_length_exceeded (what Codex compacts on)', async () => {
    const client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'unused', maxRetries: 0 });
    let code: unknown;
    try {
      const stream = await client.responses.create({ model: 'switchyard-sim', input: 'word '.repeat(500), stream: true });
      for await (const event of stream) if (event.type === 'response.failed') code = event.response.error?.code;
    } catch (err) {
      code = (err as { code?: unknown }).code;
    }
    expect(code).toBe('context_length_exceeded');
  });

  it('a short request still goes through', async () => {
    const client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'unused', maxRetries: 0 });
    const response = await client.responses.create({ model: 'switchyard-sim', input: 'hi' });
    expect(response.output_text).toBe('You said: hi');
  });
});
