// API keys: configured (auth.keys) and made with `switchyard keys create` (stored hashed); a
// missing or wrong key is a 401 in the OpenAI shape on every /v1 route and the WebSocket upgrade;
// /health, /ready and /metrics stay open; no keys + a non-loopback host = refusal to start.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { AuthenticationError } from 'openai';
import pino from 'pino';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { hashApiKey } from '../../src/auth/key-hash.js';
import { keysCommand } from '../../src/auth/keys-command.js';
import { loadConfig } from '../../src/config/config.js';
import { StartupError } from '../../src/config/startup-errors.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const ALICE = 'sk-alice-0123456789abcdef';
const BOB = 'sk-bob-0123456789abcdef01';

describe('configured keys', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      config: { auth: { keys: [{ name: 'alice', key: ALICE }, { name: 'bob', keyHash: `sha256:${hashApiKey(BOB)}` }] } },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('accepts each key (Bearer with the openai SDK)', async () => {
    for (const apiKey of [ALICE, BOB]) {
      const client = new OpenAI({ baseURL: gw.baseURL, apiKey, maxRetries: 0 });
      const response = await client.responses.create({ model: 'sim', input: 'hi' });
      expect(response.status).toBe('completed');
    }
  });

  it('a wrong key is a 401 invalid_api_key in the OpenAI shape', async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: 'sk-wrong-0123456789abcdef', maxRetries: 0 });
    const err = await client.responses.create({ model: 'sim', input: 'hi' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).code).toBe('invalid_api_key');
    // the key is never echoed whole
    expect((err as AuthenticationError).message).not.toContain('sk-wrong-0123456789abcdef');
  });

  it('no key is a 401 on every /v1 route, unknown URLs included; /health, /ready, /metrics are open', async () => {
    for (const [method, path] of [
      ['POST', '/v1/responses'],
      ['GET', '/v1/responses/resp_x'],
      ['GET', '/v1/models'],
      ['GET', '/v1/files'],
      ['POST', '/v1/conversations'],
      ['POST', '/v1/chat/completions'],
      ['GET', '/v1/nothing-here'],
    ]) {
      const res = await fetch(`${gw.gateway.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined });
      expect(res.status, `${method} ${path}`).toBe(401);
      const body = (await res.json()) as { error: { type: string; code: string; param: null; message: string } };
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key', param: null });
    }
    expect((await fetch(`${gw.gateway.url}/health`)).status).toBe(200);
    expect([200, 503]).toContain((await fetch(`${gw.gateway.url}/ready`)).status);
    expect((await fetch(`${gw.gateway.url}/metrics`)).status).toBe(200);
  });

  it('x-api-key works on the Messages surface (Anthropic SDK); a wrong one is a 401', async () => {
    const anthropic = new Anthropic({ baseURL: gw.gateway.url, apiKey: ALICE, maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'sim', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    expect(message.type).toBe('message');
    const wrong = new Anthropic({ baseURL: gw.gateway.url, apiKey: 'sk-nope-0123456789abcdef', maxRetries: 0 });
    const err = await wrong.messages.create({ model: 'sim', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    // in Anthropic's shape on this surface
    expect((err as { error?: unknown }).error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });

  it('the WebSocket mode upgrade needs a key', async () => {
    const url = `${gw.gateway.url.replace('http', 'ws')}/v1/responses`;
    const refused = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => reject(new Error('opened without a key')));
      ws.once('error', () => undefined);
    });
    expect(refused).toBe(401);
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${ALICE}` } });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.close();
  });
});

describe('keys made with `switchyard keys`', () => {
  let gw: TestGateway;
  const lines: string[] = [];
  const output = { out: (l: string) => lines.push(l), err: () => undefined };

  beforeAll(async () => {
    gw = await startTestGateway({ config: { auth: { refreshMs: 100 } } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('create prints a key that works (after the refresh), list shows it, revoke stops it; auth stays on', async () => {
    // no keys yet: auth is off on loopback
    const open = new OpenAI({ baseURL: gw.baseURL, apiKey: 'anything', maxRetries: 0 });
    expect((await open.responses.create({ model: 'sim', input: 'hi' })).status).toBe('completed');

    await keysCommand(['create', 'carol', '--data-dir', gw.dataDir, '--tenant', 'team-c', '--rpm', '100'], output);
    const key = lines.pop()!;
    expect(key).toMatch(/^sk-swyd-[A-Za-z0-9_-]{43}$/);
    await expect(keysCommand(['create', 'carol', '--data-dir', gw.dataDir], output)).rejects.toThrow(/exists already/);

    await new Promise((resolve) => setTimeout(resolve, 400));
    const carol = new OpenAI({ baseURL: gw.baseURL, apiKey: key, maxRetries: 0 });
    expect((await carol.responses.create({ model: 'sim', input: 'hi' })).status).toBe('completed');
    await expect(open.responses.create({ model: 'sim', input: 'hi' })).rejects.toBeInstanceOf(AuthenticationError);

    lines.length = 0;
    await keysCommand(['list', '--data-dir', gw.dataDir], output);
    expect(lines[0]).toMatch(/^NAME\s+TENANT\s+RPM/);
    expect(lines[1]).toMatch(/^carol\s+team-c\s+100\s+-\s+\d{4}-/);
    // only the hash is stored: the key itself appears nowhere in the listing
    expect(lines.join('\n')).not.toContain(key);

    await keysCommand(['revoke', 'carol', '--data-dir', gw.dataDir], output);
    await expect(keysCommand(['revoke', 'carol', '--data-dir', gw.dataDir], output)).rejects.toThrow(/no active key/);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await expect(carol.responses.create({ model: 'sim', input: 'hi' })).rejects.toBeInstanceOf(AuthenticationError);
    // the last key revoked: authentication stays on (nobody gets in)
    await expect(open.responses.create({ model: 'sim', input: 'hi' })).rejects.toBeInstanceOf(AuthenticationError);
  });
});

describe('binding without keys', () => {
  const silent = pino({ level: 'silent' });
  const dataDir = mkdtempSync(join(tmpdir(), 'switchyard-bind-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const config = (overrides: object) => loadConfig({ env: {}, overrides: { host: '0.0.0.0', port: 0, dataDir, logLevel: 'silent', ...overrides } });

  it('refuses a non-loopback address without keys, saying what to do', async () => {
    const err = await startGateway({ config: config({}), logger: silent }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toMatch(/refusing to serve 0\.0\.0\.0 without API keys.*--insecure-no-auth/);
  });

  it('serves it with --insecure-no-auth, or with keys', async () => {
    for (const auth of [{ insecureNoAuth: true }, { keys: [{ name: 'k', key: ALICE }] }]) {
      const gateway = await startGateway({ config: config({ auth }), logger: silent });
      expect((await fetch(`http://127.0.0.1:${gateway.port}/health`)).status).toBe(200);
      await gateway.close();
    }
  });

  it('validates configured keys: exactly one of key or keyHash', () => {
    expect(() => loadConfig({ env: {}, overrides: { auth: { keys: [{ name: 'x' }] } } as never })).toThrow(/auth\.keys\[0\].*exactly one of key or keyHash/);
    expect(() => loadConfig({ env: {}, overrides: { auth: { keys: [{ name: 'x', keyHash: 'abc' }] } } as never })).toThrow(/keyHash: expected sha256/);
  });
});
