import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormatChecker } from '../../../src/grammar/format-checker.js';
import { encodeChatRequest } from '../../../src/protocol/chat.js';
import { startSimulator, type Simulator } from '../../../src/simulate/server.js';
import { grammarMismatches } from '../../../src/tools/custom/handler.js';
import { scripted, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { checkStreamInvariants } from '../../helpers/spec.js';

// issue 13: a forced custom tool with a grammar is generated under it where the upstream can (vLLM structured_outputs).

const request = JSON.parse(readFileSync(new URL('../../fixtures/codex/catalog-apply-patch/0001-request.json', import.meta.url), 'utf8'));
const APPLY_PATCH = (request.body ?? request).tools.find((t: any) => t.name === 'apply_patch');
const checker = FormatChecker.compile('lark', APPLY_PATCH.format.definition);
const GOOD = '*** Begin Patch\n*** Update File: src/app.ts\n@@ function main() {\n-  run();\n+  run("é");\n*** End Patch\n';
const BAD = '*** Begin Patch\n*** Update File: src/app.ts\nrun();\n*** End Patch\n';
const FORCE = { type: 'custom', name: 'apply_patch' };

/** An OpenAI-compatible server in front of the simulator that drops the grammar fields, as a server without grammar support ignores them. */
async function startIgnoringProxy(target: Simulator): Promise<{ url: string; bodies: any[]; close(): Promise<void> }> {
  const bodies: any[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    if (body) bodies.push(structuredClone(body));
    if (body) for (const key of ['structured_outputs', 'guided_grammar', 'guided_regex']) delete body[key];
    const upstream = await fetch(`${target.url}${req.url!.replace(/^\/v1/, '')}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
    res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
    res.end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    bodies,
    close: () => new Promise<void>((ok) => (server.closeAllConnections(), server.close(() => ok()))),
  };
}

describe('constrained generation for forced custom tools (openai SDK)', () => {
  let simulator: Simulator;
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    simulator = await startSimulator({ port: 0 });
    tg = await startTestGateway({ simulator });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await tg?.close();
    await simulator?.close();
  });

  async function stream(body: Record<string, unknown>) {
    const events: any[] = [];
    for await (const event of (await client.responses.create({ model: 'm', stream: true, ...body } as any)) as any) events.push(event);
    expect(checkStreamInvariants(events)).toEqual([]);
    return events.at(-1).response;
  }

  it('the upstream is probed once; the forced tool input is decoded under its grammar (structured_outputs), no tools sent that round', async () => {
    const before = simulator.requests.length;
    const response = await stream({ tools: [APPLY_PATCH], tool_choice: FORCE, input: scripted({ rounds: [{ text: GOOD }] }) });
    expect(response.output).toEqual([expect.objectContaining({ type: 'custom_tool_call', name: 'apply_patch', input: GOOD, status: 'completed' })]);
    const sent = simulator.requests.slice(before).map((r) => r.body);
    // the probe: a short non-streamed request under a grammar only a constrained decoder answers
    expect(sent[0]).toMatchObject({ stream: false, structured_outputs: { grammar: expect.stringContaining('start: "zq"') } });
    const round = sent[1];
    expect(round.structured_outputs).toEqual({ grammar: APPLY_PATCH.format.definition });
    expect(round.tools).toBeUndefined();
    expect(round.tool_choice).toBeUndefined();
    expect(round.messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining("Now call the tool 'apply_patch'") });

    // a second request: no new probe
    const again = simulator.requests.length;
    await stream({ tools: [APPLY_PATCH], tool_choice: FORCE, input: scripted({ rounds: [{ text: GOOD }] }) });
    expect(simulator.requests.slice(again).map((r) => r.body.stream)).toEqual([true]);
  });

  it('a model that would have written a malformed patch cannot: the input decoded under the grammar matches it, no repair round needed', async () => {
    const mismatches = { ...grammarMismatches };
    const before = simulator.requests.length;
    const response = await stream({ tools: [APPLY_PATCH], tool_choice: FORCE, input: scripted({ rounds: [{ text: BAD }] }) });
    const call = response.output[0];
    expect(call.type).toBe('custom_tool_call');
    expect(call.input).not.toBe(BAD);
    expect(checker.check(call.input)).toBeUndefined();
    expect(grammarMismatches).toEqual(mismatches);
    expect(simulator.requests.length - before).toBe(1);
  });

  it('later rounds are unconstrained: the forced call answered, the model continues with its tools', async () => {
    const first = await stream({ tools: [APPLY_PATCH], tool_choice: FORCE, input: scripted({ rounds: [{ text: GOOD }, { text: 'patched' }] }) });
    const before = simulator.requests.length;
    const next = await stream({ previous_response_id: first.id, tools: [APPLY_PATCH], input: [{ type: 'custom_tool_call_output', call_id: first.output[0].call_id, output: 'ok' }] });
    expect(next.output_text ?? next.output.at(-1).content[0].text).toBe('patched');
    const round = simulator.requests[before].body;
    expect(round.structured_outputs).toBeUndefined();
    expect(round.tools.map((t: any) => t.function.name)).toEqual(['apply_patch']);
    // the constrained call is part of the conversation as an ordinary call of the tool
    expect(round.messages.find((m: any) => m.role === 'assistant').tool_calls[0].function).toEqual({ name: 'apply_patch', arguments: JSON.stringify({ input: GOOD }) });
  });

  it('a grammar the upstream refuses (4xx) falls back to the usual forced call, checked as ever', async () => {
    const before = simulator.requests.length;
    const response = await stream({ tools: [APPLY_PATCH], tool_choice: FORCE, input: scripted({ rounds: [{ status: 400, error: 'grammar not supported by xgrammar', fail_times: 1, tool_calls: [{ name: 'apply_patch', arguments: { input: GOOD } }] }] }) });
    expect(response.status).toBe('completed');
    expect(response.output).toEqual([expect.objectContaining({ type: 'custom_tool_call', input: GOOD })]);
    const [refused, plain] = simulator.requests.slice(before).map((r) => r.body);
    expect(refused.structured_outputs).toBeDefined();
    expect(plain.structured_outputs).toBeUndefined();
    expect(plain.tool_choice).toEqual({ type: 'function', function: { name: 'apply_patch' } });
  });

  it('a regex format is sent as structured_outputs.regex', async () => {
    const tool = { type: 'custom', name: 'ticket', description: 'A ticket id', format: { type: 'grammar', syntax: 'regex', definition: '[A-Z]{3}-[0-9]{2,4}' } };
    const before = simulator.requests.length;
    const response = await stream({ tools: [tool], tool_choice: { type: 'custom', name: 'ticket' }, input: scripted({ rounds: [{ text: 'ABC-123' }] }) });
    expect(response.output[0]).toMatchObject({ type: 'custom_tool_call', name: 'ticket', input: 'ABC-123' });
    expect(simulator.requests[before].body.structured_outputs).toEqual({ regex: '[A-Z]{3}-[0-9]{2,4}' });
  });
});

describe('constrained generation: an upstream that ignores grammars', () => {
  let simulator: Simulator;
  let proxy: Awaited<ReturnType<typeof startIgnoringProxy>>;
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    simulator = await startSimulator({ port: 0 });
    proxy = await startIgnoringProxy(simulator);
    tg = await startTestGateway({ simulator, config: { upstream: { url: proxy.url } } });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await tg?.close();
    await proxy?.close();
    await simulator?.close();
  });

  it('the probe finds no support: the tool is forced the usual way, the grammar never sent, the input still checked', async () => {
    const response = await client.responses.create({ model: 'm', tools: [APPLY_PATCH], tool_choice: FORCE, input: scripted({ rounds: [{ tool_calls: [{ name: 'apply_patch', arguments: { input: BAD } }] }, { tool_calls: [{ name: 'apply_patch', arguments: { input: GOOD } }] }] }) } as any);
    expect(response.output).toEqual([expect.objectContaining({ type: 'custom_tool_call', input: GOOD })]);
    const [probe1, probe2, ...rounds] = proxy.bodies;
    expect(probe1.structured_outputs).toBeDefined();
    expect(probe2.guided_grammar).toBeDefined();
    expect(rounds).toHaveLength(2);
    for (const round of rounds) expect(Object.keys(round)).not.toContain('structured_outputs');
    expect(rounds[0].tool_choice).toEqual({ type: 'function', function: { name: 'apply_patch' } });
  });
});

describe('grammar fields in the chat encoder', () => {
  const base = { model: 'm', items: [], tools: [], grammar: { syntax: 'lark' as const, definition: 'start: "a"' } };
  it('structured_outputs (vLLM ≥ 0.12), guided_grammar / guided_regex (older vLLM), or nothing', () => {
    expect(encodeChatRequest(base, 'none', 'structured_outputs').structured_outputs).toEqual({ grammar: 'start: "a"' });
    expect(encodeChatRequest(base, 'none', 'guided').guided_grammar).toBe('start: "a"');
    expect(encodeChatRequest({ ...base, grammar: { syntax: 'regex', definition: 'a+' } }, 'none', 'guided').guided_regex).toBe('a+');
    const plain = encodeChatRequest(base, 'none') as unknown as Record<string, unknown>;
    expect(['structured_outputs', 'guided_grammar', 'guided_regex'].some((k) => k in plain)).toBe(false);
  });
});
