import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const fixture = (path: string) => JSON.parse(readFileSync(new URL(`../fixtures/codex/${path}`, import.meta.url), 'utf8'));

/** Puts a simulator script into the last user message of a Codex request body. */
function withScript(body: any, script: unknown): any {
  const copy = structuredClone(body);
  const lastUser = [...copy.input].reverse().find((i: any) => i.type === 'message' && i.role === 'user');
  lastUser.content.push({ type: 'input_text', text: `#sim ${JSON.stringify(script)}` });
  return copy;
}

async function post(tg: TestGateway, body: unknown): Promise<Array<Record<string, any>>> {
  const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
  return readSse(res);
}

const PATCH = '*** Begin Patch\n*** Add File: notes/"quoted".txt\n+line with \\backslash\\ and "quotes"\n+tab\there é 🚀\n*** End Patch\n';

describe('Codex CLI requests (test/fixtures/codex)', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    // `pass`: grammar-checked inputs stream live as the model writes them. Under the default
    // (`retry`) a checked call is held back until complete (test/tools/custom/grammar-gateway.test.ts).
    tg = await startTestGateway({ config: { tools: { grammar: 'pass' } } });
  });
  afterAll(() => tg.close());

  it('apply_patch arrives as custom_tool_call with the exact patch text, streamed in small chunks', async () => {
    const body = withScript(fixture('catalog-apply-patch/0001-request.json'), { rounds: [{ tool_calls: [{ name: 'apply_patch', arguments: { input: PATCH } }], chunk_size: 3 }] });
    const events = await post(tg, body);

    // the model saw apply_patch as a function with one string parameter, and tool_search as a function
    const sent = tg.simulator.requests.at(-1)!.body;
    const applyPatch = sent.tools.find((t: any) => t.function.name === 'apply_patch').function;
    expect(applyPatch.parameters.required).toEqual(['input']);
    expect(applyPatch.description).toMatch(/lark grammar/);
    expect(sent.tools.some((t: any) => t.function.name === 'tool_search')).toBe(true);
    expect(sent.messages[0].role).toBe('system');

    const added = events.find((e) => e.type === 'response.output_item.added')!;
    expect(added.item).toMatchObject({ type: 'custom_tool_call', name: 'apply_patch', input: '', status: 'in_progress' });
    const deltas = events.filter((e) => e.type === 'response.custom_tool_call_input.delta');
    expect(deltas.length).toBeGreaterThan(10);
    expect(deltas.map((d) => d.delta).join('')).toBe(PATCH);
    expect(events.find((e) => e.type === 'response.custom_tool_call_input.done')!.input).toBe(PATCH);
    const done = events.find((e) => e.type === 'response.output_item.done')!;
    expect(done.item).toMatchObject({ type: 'custom_tool_call', name: 'apply_patch', input: PATCH, status: 'completed' });
    expect(done.item.call_id).toMatch(/^chatcmpl-tool-/);
    const completed = events.at(-1)!;
    expect(completed.type).toBe('response.completed');
    expect(completed.response.id).toMatch(/^resp_/);
    expect(events.some((e) => e.type.startsWith('response.function_call'))).toBe(false);
  });

  it('a custom_tool_call_output continues the turn with the call re-flattened for the model', async () => {
    // the call and its output follow the last user message: the simulator is at round 1
    const body = withScript(fixture('catalog-apply-patch/0002-request.json'), { rounds: [{ text: 'unused' }, { text: 'Added the file.' }] });
    const events = await post(tg, body);
    expect(events.at(-1)!.type).toBe('response.completed');
    expect(events.at(-1)!.response.output[0].content[0].text).toBe('Added the file.');
    const messages = tg.simulator.requests.at(-1)!.body.messages;
    const assistant = messages.find((m: any) => m.role === 'assistant');
    expect(assistant.tool_calls[0]).toEqual({
      id: 'call_mx290l0z2',
      type: 'function',
      function: { name: 'apply_patch', arguments: JSON.stringify({ input: '*** Begin Patch\n*** Add File: patched_by_capture.txt\n+hello from apply_patch\n*** End Patch' }) },
    });
    const tool = messages.find((m: any) => m.role === 'tool');
    expect(tool.tool_call_id).toBe('call_mx290l0z2');
    expect(tool.content).toMatch(/Success. Updated the following files/);
  });

  it('a namespaced call comes back with a separate namespace field', async () => {
    const body = withScript(fixture('fallback-tool/0001-request.json'), {
      rounds: [{ tool_calls: [{ name: 'multi_agent_v1__spawn_agent', arguments: { message: 'hi' } }, { name: 'exec_command', arguments: { cmd: 'ls' } }] }],
    });
    const events = await post(tg, body);
    const sentNames = tg.simulator.requests.at(-1)!.body.tools.map((t: any) => t.function.name);
    expect(sentNames).toContain('multi_agent_v1__spawn_agent');
    expect(sentNames).toContain('exec_command');
    const items = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
    expect(items).toHaveLength(2);
    expect(items[0]).toMatchObject({ type: 'function_call', namespace: 'multi_agent_v1', name: 'spawn_agent', arguments: '{"message":"hi"}', status: 'completed' });
    expect(items[1]).toMatchObject({ type: 'function_call', name: 'exec_command' });
    expect(items[1].namespace).toBeUndefined();
    const added = events.filter((e) => e.type === 'response.output_item.added').map((e) => e.item);
    expect(added[0]).toMatchObject({ namespace: 'multi_agent_v1', name: 'spawn_agent' });
  });

  it('a function_call_output from the echoed history continues the turn', async () => {
    // the script is in the last user message; the call and its output come after it: round 1
    const events = await post(tg, withScript(fixture('fallback-tool/0002-request.json'), { rounds: [{ text: 'unused' }, { text: 'The file says hello-from-capture.' }] }));
    expect(events.at(-1)!.response.output[0].content[0].text).toBe('The file says hello-from-capture.');
    const messages = tg.simulator.requests.at(-1)!.body.messages;
    expect(messages.filter((m: any) => m.role === 'system')).toHaveLength(1);
    const tool = messages.find((m: any) => m.role === 'tool');
    expect(tool.tool_call_id).toBe('call_mx290bhz2');
  });

  it('a namespaced call in the echoed input is re-flattened to the model-visible name', async () => {
    const body = withScript(fixture('fallback-tool/0001-request.json'), { rounds: [{ text: 'x' }, { text: 'agent spawned' }] });
    body.input.push(
      { type: 'function_call', call_id: 'call_ns1', namespace: 'multi_agent_v1', name: 'spawn_agent', arguments: '{"message":"hi"}' },
      { type: 'function_call_output', call_id: 'call_ns1', output: 'agent 7 started' },
    );
    const events = await post(tg, body);
    expect(events.at(-1)!.response.output[0].content[0].text).toBe('agent spawned');
    const assistant = tg.simulator.requests.at(-1)!.body.messages.find((m: any) => m.role === 'assistant');
    expect(assistant.tool_calls[0].function.name).toBe('multi_agent_v1__spawn_agent');
  });

  it('several calls in one response all come back; the SDK accumulator parses the stream', async () => {
    const client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
    const body = withScript(fixture('catalog-apply-patch/0001-request.json'), {
      rounds: [{ tool_calls: [{ name: 'exec_command', arguments: { cmd: 'ls' } }, { name: 'apply_patch', arguments: { input: PATCH } }, { name: 'tool_search', arguments: { query: 'calendar' } }], tool_call_style: 'interleaved' }],
    });
    const { stream: _stream, ...params } = body;
    const final = await client.responses.stream(params).finalResponse();
    expect(final.output.map((i: any) => i.type)).toEqual(['function_call', 'custom_tool_call', 'tool_search_call']);
    expect((final.output[1] as any).input).toBe(PATCH);
    expect((final.output[2] as any)).toMatchObject({ execution: 'client', arguments: { query: 'calendar' }, status: 'completed' });
  });

  it('tools loaded by a tool_search_output become visible to the model', async () => {
    const body = withScript(fixture('catalog-apply-patch/0001-request.json'), { rounds: [{ text: 'x' }, { text: 'loaded' }] });
    body.tools.push({ type: 'function', name: 'calendar_create', description: 'Create an event', defer_loading: true, parameters: { type: 'object', properties: {} } });
    await post(tg, body);
    expect(tg.simulator.requests.at(-1)!.body.tools.map((t: any) => t.function.name)).not.toContain('calendar_create');

    body.input.push(
      { type: 'tool_search_call', call_id: 'call_ts1', execution: 'client', status: 'completed', arguments: { query: 'calendar' } },
      { type: 'tool_search_output', call_id: 'call_ts1', execution: 'client', status: 'completed', tools: [{ type: 'function', name: 'calendar_create', description: 'Create an event', defer_loading: true, parameters: { type: 'object', properties: {} } }] },
    );
    const events = await post(tg, body);
    expect(events.at(-1)!.type).toBe('response.completed');
    const sent = tg.simulator.requests.at(-1)!.body;
    expect(sent.tools.map((t: any) => t.function.name)).toContain('calendar_create');
    const tool = sent.messages.find((m: any) => m.role === 'tool');
    expect(tool).toMatchObject({ tool_call_id: 'call_ts1', content: 'Loaded tools: calendar_create' });
  });
});
