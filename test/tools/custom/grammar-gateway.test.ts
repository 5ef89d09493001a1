import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/simulate/server.js';
import { grammarMismatches } from '../../../src/tools/custom/handler.js';
import { scripted, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { checkStreamInvariants } from '../../helpers/spec.js';

const request = JSON.parse(readFileSync(new URL('../../fixtures/codex/catalog-apply-patch/0001-request.json', import.meta.url), 'utf8'));
/** Codex's apply_patch declaration, exactly as Codex sends it. */
const APPLY_PATCH = (request.body ?? request).tools.find((t: any) => t.name === 'apply_patch');

const GOOD = '*** Begin Patch\n*** Update File: src/app.ts\n@@ function main() {\n-  run();\n+  run("é 🚀 \\"quoted\\"");\n*** End Patch\n';
/** An update line without its ' ', '+' or '-' prefix. */
const BAD = '*** Begin Patch\n*** Update File: src/app.ts\nrun();\n*** End Patch\n';
const BAD_TOO = '*** Begin Patch\n*** Frobnicate File: src/app.ts\n*** End Patch\n';

const call = (input: string) => ({ tool_calls: [{ name: 'apply_patch', arguments: { input } }], chunk_size: 7 });

type Policy = 'retry' | 'pass' | 'reject';

describe('grammar-checked custom tools through the gateway (openai SDK)', () => {
  let simulator: Simulator;
  const gateways = {} as Record<Policy, TestGateway>;
  const clients = {} as Record<Policy, OpenAI>;

  beforeAll(async () => {
    simulator = await startSimulator({ port: 0 });
    for (const policy of ['retry', 'pass', 'reject'] as const) {
      gateways[policy] = await startTestGateway({ simulator, config: { tools: { grammar: policy } } });
      clients[policy] = new OpenAI({ baseURL: gateways[policy].baseURL, apiKey: 'test', maxRetries: 0 });
    }
  }, 60_000);
  afterAll(async () => {
    for (const tg of Object.values(gateways)) await tg.close();
    await simulator.close();
  });

  /** Streams a turn with the SDK; returns every event and the final response. */
  async function stream(policy: Policy, rounds: unknown[]) {
    const before = simulator.requests.length;
    const events: any[] = [];
    const responseStream = await clients[policy].responses.create({ model: 'm', input: scripted({ rounds }), tools: [APPLY_PATCH], stream: true });
    for await (const event of responseStream) events.push(event);
    const terminal = events.filter((e) => ['response.completed', 'response.failed', 'response.incomplete'].includes(e.type));
    expect(terminal).toHaveLength(1);
    // held-back and repaired calls still make a well-ordered stream (sequence numbers, one
    // added/done per item, deltas adding up). Not validated against the Open Responses schema:
    // it has no custom tool types.
    expect(checkStreamInvariants(events)).toEqual([]);
    return { events, response: terminal[0].response, upstreamRequests: simulator.requests.slice(before) };
  }

  /** Everything the client saw of custom calls' input. */
  const seenInputs = (events: any[]) => events.filter((e) => e.type.startsWith('response.custom_tool_call_input') || e.type.startsWith('response.output_item')).map((e) => JSON.stringify(e));

  it('retry: a malformed input is repaired in the same response and the client never sees it', async () => {
    const before = { ...grammarMismatches };
    const { events, response, upstreamRequests } = await stream('retry', [call(BAD), call(GOOD)]);
    expect(response.status).toBe('completed');
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'custom_tool_call', name: 'apply_patch', input: GOOD, status: 'completed' });
    // the bad call never reached the client, in any event
    expect(seenInputs(events).some((text) => text.includes('app.ts\\nrun();'))).toBe(false);
    expect(events.filter((e) => e.type === 'response.output_item.added')).toHaveLength(1);
    // held back until complete: the input arrives as one delta, then done
    const deltas = events.filter((e) => e.type === 'response.custom_tool_call_input.delta');
    expect(deltas.map((d) => d.delta)).toEqual([GOOD]);
    expect(events.find((e) => e.type === 'response.custom_tool_call_input.done').input).toBe(GOOD);

    // the model got the parse error (position + expectation) as the bad call's result
    expect(upstreamRequests).toHaveLength(2);
    const messages = upstreamRequests[1].body.messages;
    const assistant = messages.find((m: any) => m.role === 'assistant');
    const tool = messages.find((m: any) => m.role === 'tool');
    expect(tool.tool_call_id).toBe(assistant.tool_calls[0].id);
    expect(tool.content).toContain("Error: the call to 'apply_patch' was not run: the input does not match the tool's lark grammar at line 3, column 1: expected one of");
    expect(tool.content).toContain('"@@"');
    expect(tool.content).toContain('found "run();"');
    expect(grammarMismatches.repair - before.repair).toBe(1);
    expect(grammarMismatches.returned - before.returned).toBe(0);

    // stored as returned: only the repaired call
    const stored = await clients.retry.responses.retrieve(response.id);
    expect(stored.output.map((item: any) => item.input)).toEqual([GOOD]);
  });

  it('retry: a second failure is returned to the client unchanged and counted', async () => {
    const before = { ...grammarMismatches };
    const { response, upstreamRequests } = await stream('retry', [call(BAD), call(BAD_TOO), call(GOOD)]);
    expect(upstreamRequests).toHaveLength(2);
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'custom_tool_call', input: BAD_TOO, status: 'completed' });
    expect(grammarMismatches.repair - before.repair).toBe(1);
    expect(grammarMismatches.returned - before.returned).toBe(1);
  });

  it('retry: a valid input is returned at once (one upstream round, no error counted)', async () => {
    const before = { ...grammarMismatches };
    const { response, upstreamRequests } = await stream('retry', [call(GOOD)]);
    expect(upstreamRequests).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'custom_tool_call', input: GOOD });
    expect(grammarMismatches).toEqual(before);
  });

  it('reject: every malformed input becomes an error result for the model; only a valid call is returned', async () => {
    const before = { ...grammarMismatches };
    const { events, response, upstreamRequests } = await stream('reject', [call(BAD), call(BAD_TOO), call(GOOD)]);
    expect(upstreamRequests).toHaveLength(3);
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'custom_tool_call', input: GOOD });
    expect(seenInputs(events).some((text) => text.includes('Frobnicate'))).toBe(false);
    const lastTools = upstreamRequests[2].body.messages.filter((m: any) => m.role === 'tool');
    expect(lastTools).toHaveLength(2);
    expect(lastTools[1].content).toMatch(/line 2, column 1: expected one of .*"\*\*\* Update File: "/);
    expect(grammarMismatches.reject - before.reject).toBe(2);
  });

  it('reject: a model that never fixes its input ends at the round cap, the bad call never returned', async () => {
    const { response, events } = await stream('reject', [{ ...call(BAD) }, call(BAD), call(BAD), call(BAD), call(BAD), call(BAD), call(BAD), call(BAD), call(BAD), call(BAD), call(BAD)]);
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_tool_rounds' });
    expect(response.output).toEqual([]);
    expect(events.some((e) => e.type === 'response.output_item.added')).toBe(false);
  });

  it('pass: a malformed input is returned unchanged (streamed live) and counted', async () => {
    const before = { ...grammarMismatches };
    const { events, response, upstreamRequests } = await stream('pass', [call(BAD), call(GOOD)]);
    expect(upstreamRequests).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'custom_tool_call', input: BAD, status: 'completed' });
    expect(events.filter((e) => e.type === 'response.custom_tool_call_input.delta').length).toBeGreaterThan(3);
    expect(seenInputs(events).some((text) => text.includes('app.ts\\nrun();'))).toBe(true);
    expect(grammarMismatches.returned - before.returned).toBe(1);
  });

  it('regex formats are checked with the same engine (full match)', async () => {
    const tool = { type: 'custom', name: 'set_date', description: 'Set a date', format: { type: 'grammar', syntax: 'regex', definition: '\\d{4}-\\d{2}-\\d{2}' } };
    const before = simulator.requests.length;
    const rounds = [{ tool_calls: [{ name: 'set_date', arguments: { input: '2026-12-1' } }] }, { tool_calls: [{ name: 'set_date', arguments: { input: '2026-12-01' } }] }];
    const response = await clients.retry.responses.create({ model: 'm', input: scripted({ rounds }), tools: [tool as any] });
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'custom_tool_call', name: 'set_date', input: '2026-12-01' });
    const tool0 = simulator.requests[before + 1].body.messages.find((m: any) => m.role === 'tool');
    expect(tool0.content).toContain('does not match the tool\'s regex grammar at line 1, column 10: the input ends before the pattern is complete');
  });

  it('namespace members with a grammar are checked under the configured policy too', async () => {
    const namespace = { type: 'namespace', name: 'crm', description: 'CRM tools', tools: [{ type: 'custom', name: 'code', format: { type: 'grammar', syntax: 'regex', definition: '[A-Z]{3}' } }] };
    const rounds = [{ tool_calls: [{ name: 'crm__code', arguments: { input: 'abc' } }] }, { tool_calls: [{ name: 'crm__code', arguments: { input: 'ABC' } }] }];
    const response = await clients.reject.responses.create({ model: 'm', input: scripted({ rounds }), tools: [namespace as any] });
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'custom_tool_call', namespace: 'crm', name: 'code', input: 'ABC' });
  });

  it('a grammar using LLGuidance extensions the recognizer lacks is served unchecked, not refused', async () => {
    const tool = { type: 'custom', name: 'emit_json', format: { type: 'grammar', syntax: 'lark', definition: 'start: %json {"type": "object"}' } };
    const rounds = [{ tool_calls: [{ name: 'emit_json', arguments: { input: 'not json at all' } }] }];
    const response = await clients.reject.responses.create({ model: 'm', input: scripted({ rounds }), tools: [tool as any] });
    expect(response.output[0]).toMatchObject({ type: 'custom_tool_call', name: 'emit_json', input: 'not json at all' });
  });

  it('an invalid grammar is a 400 naming tools[n].format.definition, with line and column', async () => {
    const bad = { type: 'custom', name: 'broken', format: { type: 'grammar', syntax: 'lark', definition: 'start: item+\nitem: "x" | missing' } };
    const error = await clients.retry.responses.create({ model: 'm', input: 'hi', tools: [APPLY_PATCH, bad as any] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const body = (error as InstanceType<typeof OpenAI.BadRequestError>).error as any;
    expect(body.param).toBe('tools[1].format.definition');
    expect(body.code).toBe('invalid_value');
    expect(body.message).toContain("line 2, column 13: undefined rule 'missing'");
    const regex = { type: 'custom', name: 'r', format: { type: 'grammar', syntax: 'regex', definition: '(a' } };
    const error2 = await clients.retry.responses.create({ model: 'm', input: 'hi', tools: [regex as any] }).catch((err: unknown) => err);
    expect(((error2 as any).error as any).param).toBe('tools[0].format.definition');
  });
});
