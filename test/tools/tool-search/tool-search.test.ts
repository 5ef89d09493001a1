import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MCP_CONFIG } from '../../../src/mcp/service.js';
import { scripted, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { startFaultServer, type FaultServer } from '../../helpers/mcp-servers.js';
import { Bm25Index, terms } from '../../../src/tools/tool-search/bm25.js';
import { checkStreamInvariants, validateStreamEvent } from '../../helpers/spec.js';

// issue 13: hosted tool_search (execution "server") for self-hosted models.

const NAMESPACES = {
  calendar: { description: 'Calendar events and invitations', verbs: ['create', 'delete', 'move', 'list', 'invite', 'decline', 'share', 'export'], nouns: ['event', 'reminder', 'room', 'attendee', 'series'] },
  crm: { description: 'Customer relationship records', verbs: ['create', 'merge', 'archive', 'find', 'tag', 'score', 'assign', 'note'], nouns: ['contact', 'lead', 'account', 'deal', 'pipeline'] },
  billing: { description: 'Invoices and payments', verbs: ['issue', 'refund', 'void', 'charge', 'list', 'remind', 'split', 'audit'], nouns: ['invoice', 'payment', 'coupon', 'subscription', 'receipt'] },
  storage: { description: 'Files and folders in cloud storage', verbs: ['upload', 'download', 'rename', 'copy', 'lock', 'unlock', 'scan', 'purge'], nouns: ['file', 'folder', 'bucket', 'snapshot', 'quota'] },
  devops: { description: 'Deployments and infrastructure', verbs: ['deploy', 'rollback', 'restart', 'scale', 'drain', 'tail', 'pin', 'probe'], nouns: ['service', 'cluster', 'node', 'release', 'secret'] },
} as const;

/** 200 deferred functions across 5 namespaces (8 verbs × 5 nouns each), with distinct parameters. */
function deferredNamespaces(): any[] {
  return Object.entries(NAMESPACES).map(([ns, { description, verbs, nouns }]) => ({
    type: 'namespace',
    name: ns,
    description,
    tools: verbs.flatMap((verb) =>
      nouns.map((noun) => ({
        type: 'function',
        name: `${verb}_${noun}`,
        description: `${verb[0].toUpperCase()}${verb.slice(1)} a ${noun} in ${ns}.`,
        defer_loading: true,
        parameters: { type: 'object', properties: { [`${noun}_id`]: { type: 'string' }, [`${verb}_note`]: { type: 'string' } }, required: [`${noun}_id`], additionalProperties: false },
      })),
    ),
  }));
}

const TRANSLATE = { type: 'function', name: 'translate_text', description: 'Translate text into another language', defer_loading: true, parameters: { type: 'object', properties: { text: { type: 'string' }, target_language: { type: 'string' } } } };
const TOOLS = [{ type: 'tool_search' }, { type: 'function', name: 'get_time', description: 'Current time', parameters: { type: 'object', properties: {} } }, TRANSLATE, ...deferredNamespaces()];

/** Every stream event valid per the Open Responses spec, except tool-search items, which it does not define. */
function checkEvents(events: any[]): void {
  expect(checkStreamInvariants(events)).toEqual([]);
  for (const event of events) {
    const itemType = event.item?.type;
    if (itemType === 'tool_search_call' || itemType === 'tool_search_output') continue;
    // the Response echoes namespace / tool_search declarations the spec's Tool union (functions only)
    // lacks, and holds the tool-search items: validated without those
    const checked = event.response
      ? { ...event, response: { ...event.response, tools: [], output: event.response.output.filter((i: any) => !i.type.startsWith('tool_search')) } }
      : event;
    expect(validateStreamEvent(checked)).toEqual([]);
  }
  // only output_item.added/done for tool-search items: no event type of their own (the SDK would choke on one)
  const searchIds = new Set(events.filter((e) => e.item?.type?.startsWith('tool_search')).map((e) => e.item.id));
  for (const event of events) {
    if (searchIds.has(event.item_id) || searchIds.has(event.item?.id)) expect(['response.output_item.added', 'response.output_item.done']).toContain(event.type);
    expect(event.type).not.toMatch(/tool_search/);
  }
}

/** The shape of the OpenAI SDK's ResponseToolSearchCall / ResponseToolSearchOutputItem. */
function checkSearchItems(output: any[]): void {
  for (const item of output) {
    if (item.type === 'tool_search_call') {
      expect(Object.keys(item).sort()).toEqual(['arguments', 'call_id', 'execution', 'id', 'status', 'type']);
      expect(item).toMatchObject({ execution: 'server', status: 'completed', id: expect.stringMatching(/^tsc_/), call_id: expect.any(String) });
      expect(typeof item.arguments).toBe('object');
    }
    if (item.type === 'tool_search_output') {
      expect(Object.keys(item).sort()).toEqual(['call_id', 'execution', 'id', 'status', 'tools', 'type']);
      expect(item).toMatchObject({ execution: 'server', status: 'completed', id: expect.stringMatching(/^tso_/) });
      expect(Array.isArray(item.tools)).toBe(true);
    }
  }
}

describe('hosted tool_search: 200 deferred functions in 5 namespaces (openai SDK)', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway();
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => tg?.close());

  async function streamed(body: Record<string, unknown>) {
    const before = tg.simulator.requests.length;
    const events: any[] = [];
    const stream = await client.responses.create({ model: 'm', tools: TOOLS, ...body, stream: true } as any);
    for await (const event of stream as any) events.push(event);
    checkEvents(events);
    const response = events.at(-1).response;
    checkSearchItems(response.output);
    return { events, response, upstream: tg.simulator.requests.slice(before).map((r) => r.body) };
  }

  it('compact index → search loads the right members → the next round calls one → the next chained turn calls it again without searching', async () => {
    const first = await streamed({
      input: scripted({
        rounds: [
          { tool_calls: [{ name: 'tool_search', arguments: { query: 'create a calendar event', limit: 3 } }] },
          { tool_calls: [{ name: 'calendar__create_event', arguments: { event_id: 'e1', create_note: 'standup' } }] },
        ],
      }),
    });
    // the model saw the index, not 200 schemas: tool_search and the undeferred function only
    const round0 = first.upstream[0];
    expect(round0.tools.map((t: any) => t.function.name)).toEqual(['tool_search', 'get_time']);
    const index: string = round0.tools[0].function.description;
    for (const ns of Object.keys(NAMESPACES)) expect(index).toContain(`Namespace ${ns} — ${NAMESPACES[ns as keyof typeof NAMESPACES].description}:`);
    expect(index).toContain('  - calendar.create_event: Create a event in calendar.');
    expect(index).toContain('  - devops.probe_secret: Probe a secret in devops.');
    expect(index).toContain('\n- translate_text: Translate text into another language\n');
    expect(index.split('\n').filter((l) => l.startsWith('  - '))).toHaveLength(200);
    expect(index).not.toContain('"properties"');
    expect(JSON.stringify(round0.tools).length).toBeLessThan(16_000);
    expect(round0.tools[0].function.parameters.properties).toHaveProperty('paths');
    expect(round0.tools[0].function.parameters.properties).toHaveProperty('query');
    expect(round0.tools[0].function.parameters.properties.limit).toMatchObject({ type: 'integer', maximum: 20 });

    // inference continued in the same response: search, then the loaded tool called, returned to the client
    expect(first.response.status).toBe('completed');
    expect(first.response.output.map((i: any) => i.type)).toEqual(['tool_search_call', 'tool_search_output', 'function_call']);
    const [call, output, fn] = first.response.output;
    expect(call.arguments).toEqual({ query: 'create a calendar event', limit: 3 });
    expect(output.call_id).toBe(call.call_id);
    // the right members: calendar.create_event first, within the limit, grouped under their namespace
    expect(output.tools).toHaveLength(1);
    expect(output.tools[0]).toMatchObject({ type: 'namespace', name: 'calendar', description: NAMESPACES.calendar.description });
    const loaded = output.tools[0].tools.map((t: any) => t.name);
    expect(loaded[0]).toBe('create_event');
    expect(loaded.length).toBeLessThanOrEqual(3);
    expect(output.tools[0].tools[0]).toMatchObject({ type: 'function', name: 'create_event', defer_loading: true, parameters: { required: ['event_id'] } });
    expect(fn).toMatchObject({ type: 'function_call', name: 'create_event', namespace: 'calendar', arguments: JSON.stringify({ event_id: 'e1', create_note: 'standup' }) });

    // mode `result` (default): the loaded schema reached the model in the tool result, the upstream `tools` block is unchanged
    expect(first.upstream).toHaveLength(2);
    expect(first.upstream[1].tools).toEqual(round0.tools);
    const searchResult = first.upstream[1].messages.find((m: any) => m.role === 'tool');
    expect(searchResult.content).toContain('## calendar__create_event');
    expect(searchResult.content).toContain('"required":["event_id"]');

    // next turn, chained: the model calls it straight away; it is still loaded
    const second = await streamed({
      previous_response_id: first.response.id,
      input: [
        { type: 'function_call_output', call_id: fn.call_id, output: 'created' },
        { role: 'user', content: scripted({ rounds: [{ tool_calls: [{ name: 'calendar__create_event', arguments: { event_id: 'e2' } }] }] }, 'again') },
      ],
    });
    expect(second.response.output.map((i: any) => i.type)).toEqual(['function_call']);
    expect(second.response.output[0]).toMatchObject({ name: 'create_event', namespace: 'calendar', arguments: '{"event_id":"e2"}' });
    // what the model saw: the same tools block, and the earlier search replayed exactly as it read it then
    const seen = second.upstream[0];
    expect(seen.tools).toEqual(round0.tools);
    const replayed = seen.messages.filter((m: any) => m.role === 'tool');
    expect(replayed[0]).toEqual({ ...searchResult });
    expect(replayed[1]).toMatchObject({ tool_call_id: fn.call_id, content: 'created' });
    const assistantCalls = seen.messages.filter((m: any) => m.role === 'assistant').flatMap((m: any) => m.tool_calls ?? []);
    expect(assistantCalls.map((c: any) => c.function.name)).toEqual(['tool_search', 'calendar__create_event']);
    expect(JSON.parse(assistantCalls[0].function.arguments)).toEqual({ query: 'create a calendar event', limit: 3 });
  });

  it('in a conversation, loaded tools stay callable on the next turn', async () => {
    const conversation = await client.conversations.create({});
    await streamed({ conversation: conversation.id, input: scripted({ rounds: [{ tool_calls: [{ name: 'tool_search', arguments: { query: 'scale cluster' } }] }, { text: 'loaded' }] }) });
    const next = await streamed({ conversation: conversation.id, input: [{ role: 'user', content: scripted({ rounds: [{ tool_calls: [{ name: 'devops__scale_cluster', arguments: { cluster_id: 'c1' } }] }] }, 'scale') }] });
    expect(next.response.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'scale_cluster', namespace: 'devops' })]);
    expect(next.upstream[0].tools.map((t: any) => t.function.name)).toEqual(['tool_search', 'get_time']);
    expect(next.upstream[0].messages.find((m: any) => m.role === 'tool').content).toContain('## devops__scale_cluster');
  });

  it('store: false with the output echoed back keeps the loaded tools callable', async () => {
    const first = await streamed({ store: false, input: scripted({ rounds: [{ tool_calls: [{ name: 'tool_search', arguments: { paths: ['billing.refund_payment'] } }] }, { text: 'loaded' }] }) });
    expect(first.response.output[1].tools).toEqual([expect.objectContaining({ type: 'namespace', name: 'billing', tools: [expect.objectContaining({ name: 'refund_payment' })] })]);
    const second = await streamed({
      store: false,
      input: [
        ...first.response.output,
        { role: 'user', content: scripted({ rounds: [{ tool_calls: [{ name: 'billing__refund_payment', arguments: { payment_id: 'p1' } }] }] }, 'refund') },
      ],
    });
    expect(second.response.output[0]).toMatchObject({ type: 'function_call', name: 'refund_payment', namespace: 'billing' });
    expect(second.upstream[0].messages.find((m: any) => m.role === 'tool').content).toContain('## billing__refund_payment');
  });

  it("the SDK's stream accumulator (responses.stream → finalResponse) takes a search-and-call response", async () => {
    const stream = client.responses.stream({
      model: 'm',
      tools: TOOLS,
      input: scripted({ rounds: [{ tool_calls: [{ name: 'tool_search', arguments: { paths: ['crm.score_lead'] } }] }, { tool_calls: [{ name: 'crm__score_lead', arguments: { lead_id: 'l1' } }] }] }),
    } as any);
    const final = await stream.finalResponse();
    expect(final.output.map((i) => i.type)).toEqual(['tool_search_call', 'tool_search_output', 'function_call']);
    expect(final.output[1]).toMatchObject({ type: 'tool_search_output', execution: 'server', tools: [{ type: 'namespace', name: 'crm' }] });
  });

  it('paths: a bare name, a whole namespace, one member; unknown paths are named back to the model', async () => {
    const { response, upstream } = await streamed({
      input: scripted({ rounds: [{ tool_calls: [{ name: 'tool_search', arguments: { paths: ['translate_text', 'devops', 'crm.find_lead', 'nope.none'] } }] }, { text: 'ok' }] }),
    });
    const tools = response.output[1].tools;
    // caps: at most 20 tools per search (devops has 40): the bare one and 19 of devops, crm's not reached
    expect(tools.map((t: any) => t.name)).toEqual(['translate_text', 'devops']);
    expect(tools[0]).toEqual(TRANSLATE);
    expect(tools[1].tools).toHaveLength(19);
    const result = upstream[1].messages.find((m: any) => m.role === 'tool').content as string;
    expect(result).toContain("'nope.none' is not a tool you can load.");
    expect(result).toMatch(/22 more matching tools were not loaded/);
  });

  it('calling a deferred tool by name without searching loads it on the spot', async () => {
    const { response } = await streamed({ input: scripted({ rounds: [{ tool_calls: [{ name: 'storage__lock_file', arguments: { file_id: 'f' } }] }] }) });
    expect(response.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'lock_file', namespace: 'storage' })]);
  });

  it('searches per response are capped; the model is told', async () => {
    const search = { tool_calls: [{ name: 'tool_search', arguments: { query: 'invoice' } }] };
    const { response, upstream } = await streamed({ input: scripted({ rounds: [search, search, search, search, search, search, search, search, search, { text: 'done' }] }) });
    expect(response.output.filter((i: any) => i.type === 'tool_search_call')).toHaveLength(9);
    const last = upstream.at(-1).messages.filter((m: any) => m.role === 'tool').at(-1).content;
    expect(last).toMatch(/at most 8 tool searches per response/);
  });

  it('deferred tools without tool_search are a 400 naming the flag', async () => {
    const err = await client.responses.create({ model: 'm', input: 'hi', tools: deferredNamespaces().slice(0, 1) } as any).catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.param).toBe('tools[0].tools[0].defer_loading');
    expect(err.message).toContain('Deferred tools require tools.tool_search');
    const fnErr = await client.responses.create({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'f', defer_loading: true }] } as any).catch((e) => e);
    expect({ status: fnErr.status, param: fnErr.param }).toEqual({ status: 400, param: 'tools[0].defer_loading' });
  });
});

describe('hosted tool_search: caching modes', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway({ config: { tools: { toolSearch: { modelModes: { 'declaring-model': 'declare', 'eager-model': 'eager' } } } } });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => tg?.close());

  it('declare: loaded tools are appended to the upstream tools from the next round on', async () => {
    const before = tg.simulator.requests.length;
    const response = await client.responses.create({
      model: 'declaring-model',
      tools: TOOLS,
      input: scripted({ rounds: [{ tool_calls: [{ name: 'tool_search', arguments: { paths: ['crm.find_lead', 'crm.tag_deal'] } }] }, { text: 'ok' }] }),
    } as any);
    expect(response.status).toBe('completed');
    const [round0, round1] = tg.simulator.requests.slice(before).map((r) => r.body);
    expect(round0.tools.map((t: any) => t.function.name)).toEqual(['tool_search', 'get_time']);
    expect(round1.tools.map((t: any) => t.function.name)).toEqual(['tool_search', 'get_time', 'crm__find_lead', 'crm__tag_deal']);
    expect(round1.messages.find((m: any) => m.role === 'tool').content).toBe('Loaded 2 tools; now in your tool list: crm__find_lead, crm__tag_deal.');
  });

  it('eager: nothing is deferred — every tool declared, no tool_search function', async () => {
    const before = tg.simulator.requests.length;
    const response = await client.responses.create({ model: 'eager-model', tools: TOOLS, input: scripted({ rounds: [{ tool_calls: [{ name: 'billing__void_receipt', arguments: { receipt_id: 'r' } }] }] }) } as any);
    const sent = tg.simulator.requests[before].body;
    expect(sent.tools).toHaveLength(202);
    expect(sent.tools.map((t: any) => t.function.name)).not.toContain('tool_search');
    expect(response.output[0]).toMatchObject({ type: 'function_call', name: 'void_receipt', namespace: 'billing' });
  });
});

describe('hosted tool_search: deferred MCP tools', () => {
  let fault: FaultServer;
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    fault = await startFaultServer();
    tg = await startTestGateway({ config: { mcp: { ...DEFAULT_MCP_CONFIG, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } } } });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await tg?.close();
    await fault?.close();
  });

  it('an MCP server with defer_loading: listed in the index, a tool loaded by query, run in the same response, and again next turn without searching', async () => {
    const server = { type: 'mcp', server_label: 'faults', server_url: fault.url, require_approval: 'never', defer_loading: true, server_description: 'Test tools that misbehave' };
    const before = tg.simulator.requests.length;
    const events: any[] = [];
    const stream = await client.responses.create({
      model: 'm',
      stream: true,
      tools: [{ type: 'tool_search' }, server],
      input: scripted({ rounds: [{ tool_calls: [{ name: 'tool_search', arguments: { query: 'echo message', limit: 1 } }] }, { tool_calls: [{ name: 'mcp__faults__echo', arguments: { message: 'hi' } }] }, { text: 'echoed' }] }),
    } as any);
    for await (const event of stream as any) events.push(event);
    expect(checkStreamInvariants(events)).toEqual([]);
    const response = events.at(-1).response;
    checkSearchItems(response.output);
    expect(response.output.map((i: any) => i.type)).toEqual(['mcp_list_tools', 'tool_search_call', 'tool_search_output', 'mcp_call', 'message']);
    expect(response.output[2].tools).toEqual([expect.objectContaining({ type: 'mcp', server_label: 'faults', allowed_tools: ['echo'] })]);
    expect(response.output[3]).toMatchObject({ name: 'echo', server_label: 'faults', error: null });
    const round0 = tg.simulator.requests[before].body;
    expect(round0.tools.map((t: any) => t.function.name)).toEqual(['tool_search']);
    expect(round0.tools[0].function.description).toContain('MCP server faults — Test tools that misbehave:');
    expect(round0.tools[0].function.description).toContain('  - faults.echo: Echoes the message');

    const before2 = tg.simulator.requests.length;
    const next = await client.responses.create({
      model: 'm',
      previous_response_id: response.id,
      tools: [{ type: 'tool_search' }, server],
      input: [{ role: 'user', content: scripted({ rounds: [{ tool_calls: [{ name: 'mcp__faults__echo', arguments: { message: 'again' } }] }, { text: 'done' }] }, 'again') }],
    } as any);
    expect(next.output.map((i: any) => i.type)).toEqual(['mcp_call', 'message']);
    expect(next.output[0]).toMatchObject({ name: 'echo', error: null });
    expect(tg.simulator.requests[before2].body.tools.map((t: any) => t.function.name)).toEqual(['tool_search']);
  });

  it('a loaded deferred MCP tool that needs approval: requested, then run on the next turn when approved', async () => {
    const server = { type: 'mcp', server_label: 'faults', server_url: fault.url, require_approval: 'always', defer_loading: true };
    const first = await client.responses.create({
      model: 'm',
      tools: [{ type: 'tool_search' }, server],
      input: scripted({ rounds: [{ tool_calls: [{ name: 'tool_search', arguments: { paths: ['faults.echo'] } }] }, { tool_calls: [{ name: 'mcp__faults__echo', arguments: { message: 'ok?' } }] }, { text: 'done' }] }),
    } as any);
    const request = first.output.find((i: any) => i.type === 'mcp_approval_request') as any;
    expect(request).toMatchObject({ name: 'echo', server_label: 'faults' });
    const calls = fault.stats.calls.echo ?? 0;
    const next = await client.responses.create({
      model: 'm',
      previous_response_id: first.id,
      tools: [{ type: 'tool_search' }, server],
      input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: true }],
    } as any);
    expect(next.output.map((i: any) => i.type)).toEqual(['mcp_call', 'message']);
    expect(next.output[0]).toMatchObject({ name: 'echo', error: null, approval_request_id: request.id });
    expect(fault.stats.calls.echo).toBe(calls + 1);
  });
});

describe('BM25 over tool documents', () => {
  it('splits identifiers (snake_case, camelCase, dotted) into terms', () => {
    expect(terms('crm.findLead create_event HTTPServer')).toEqual(['crm', 'find', 'lead', 'create', 'event', 'httpserver']);
  });

  it('ranks by rare terms: a parameter name only one tool has finds it first', () => {
    const index = new Bm25Index<string>();
    index.add('a', 'send_email Send an email to someone recipient subject body');
    index.add('b', 'send_sms Send a text message phone_number body');
    index.add('c', 'list_inbox List messages in the inbox folder');
    expect(index.search('phone number').map((h) => h.value)).toEqual(['b']);
    expect(index.search('send message')[0].value).toBe('b');
    expect(index.search('unrelated words')).toEqual([]);
  });
});
