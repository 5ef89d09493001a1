// The execution side of every gateway-owned tool type, through one shared suite (style.md §4):
// begin → run → end against the real service behind it (a real MCP server from npm, a local server
// speaking SearXNG's documented API), on the success path and on the failure path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Item, JsonObject } from '../../src/protocol/responses.js';
import { DEFAULT_MCP_CONFIG, McpService } from '../../src/mcp/service.js';
import { DEFAULT_WEB_SEARCH_SETTINGS, setUpWebSearch } from '../../src/tools/web-search/setup.js';
import type { DeclareContext } from '../../src/tools/handler.js';
import { discoverTools, parseTools, registerTools } from '../../src/tools/registry.js';
import type { GatewayExecution, ItemEmitter, ModelCall, PlannedInvocation, RegistryEntry } from '../../src/tools/types.js';
import { newId } from '../../src/util/ids.js';
import { startFakeSearchApis, type FakeSearchApis } from '../helpers/fake-search-apis.js';
import { startEverything, type ChildMcpServer } from '../helpers/mcp-servers.js';
import { EVENT_SCHEMAS, NON_CORE_EVENT_TYPES } from '../helpers/spec.js';

let everything: ChildMcpServer;
let searchApis: FakeSearchApis;
let mcp: McpService;
let declare: DeclareContext;

beforeAll(async () => {
  [everything, searchApis] = await Promise.all([startEverything('streamableHttp'), startFakeSearchApis()]);
  mcp = new McpService({ ...DEFAULT_MCP_CONFIG, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true }, callTimeoutMs: 10_000 });
  const webSearch = setUpWebSearch({ ...DEFAULT_WEB_SEARCH_SETTINGS, provider: 'searxng', baseUrl: searchApis.url, timeoutMs: 5_000 }, mcp, 5_000)!;
  declare = {
    mcp,
    request: { include: [] },
    logOnce: () => undefined,
    executionFor: (type, declaration, request) => (type === 'web_search' ? webSearch(declaration, request ?? { include: [] }) : undefined),
  };
}, 30_000);

afterAll(async () => {
  await mcp?.close();
  await Promise.all([everything?.close(), searchApis?.close()]);
});

/** A recording emitter: what an execution side announces, as the accumulator would receive it. */
interface RecordingEmitter extends ItemEmitter {
  items: Item[];
  closed: Map<number, Item>;
  events: Array<{ type: string; outputIndex: number }>;
}

function recordingEmitter(): RecordingEmitter {
  const items: Item[] = [];
  const closed = new Map<number, Item>();
  const events: Array<{ type: string; outputIndex: number }> = [];
  return {
    items,
    closed,
    events,
    add: (item) => items.push(structuredClone(item)) - 1,
    event: (type, outputIndex) => void events.push({ type, outputIndex }),
    done: (outputIndex, item) => void closed.set(outputIndex, structuredClone(item)),
    newId,
    registerSources: (sources) => sources.map((_, i) => i + 1),
  };
}

interface ExecutionCase {
  name: string;
  /** The declaration, built once the services are up. */
  declaration: () => JsonObject;
  /** The public item type the call is projected as. */
  itemType: string;
  /** Its public shape as OpenAI defines it (these items are not in the Open Responses spec). */
  shape: Record<string, unknown>;
  /** A call that succeeds, and what its result for the model must contain. */
  good: { tool: string; args: JsonObject; outputContains: string };
  /** A call that fails at the service: an error result, a failed item — never a throw. */
  bad: { tool: string; args: JsonObject; prepare?: () => void };
}

const CASES: ExecutionCase[] = [
  {
    name: 'mcp',
    declaration: () => ({ type: 'mcp', server_label: 'everything', server_url: everything.url, require_approval: 'never' }),
    itemType: 'mcp_call',
    shape: { id: expect.stringMatching(/^mcp_/), server_label: 'everything', name: expect.any(String), arguments: expect.any(String) },
    good: { tool: 'mcp__everything__echo', args: { message: 'conformance ✓' }, outputContains: 'conformance ✓' },
    bad: { tool: 'mcp__everything__get-resource-reference', args: { resourceType: 'nonsense', resourceId: -1 } },
  },
  {
    name: 'web_search',
    declaration: () => ({ type: 'web_search' }),
    itemType: 'web_search_call',
    shape: { id: expect.stringMatching(/^ws_/), action: expect.objectContaining({ type: 'search' }) },
    good: { tool: 'web_search', args: { query: 'oslo weather' }, outputContains: 'http' },
    bad: { tool: 'web_search', args: { query: 'anything' }, prepare: () => searchApis.failNext(500) },
  },
];

/** Parse → discover (MCP lists the real server's tools) → register: the entry the engine would route to. */
async function entryFor(c: ExecutionCase, tool: string): Promise<RegistryEntry> {
  const parsed = parseTools([c.declaration()]);
  await discoverTools(parsed, { ...declare, priorItems: [], signal: new AbortController().signal });
  const registry = registerTools(parsed, declare);
  const entry = registry.lookup(tool);
  expect(entry, `registry has ${tool}: ${[...registry.all()].map((e) => e.modelName).join(', ')}`).toBeDefined();
  return entry!;
}

async function runThrough(execution: GatewayExecution, entry: RegistryEntry, args: JsonObject, signal = new AbortController().signal) {
  const emit = recordingEmitter();
  const call: ModelCall = { callId: newId('call'), modelName: entry.modelName, arguments: JSON.stringify(args) };
  const planned: PlannedInvocation = { call, entry, args };
  const state = execution.begin(planned, emit);
  const outcome = await execution.run({ ...planned, signal, emit });
  execution.end(planned, outcome, emit, state);
  return { emit, outcome };
}

describe.each(CASES)('gateway execution conformance: $name', (c) => {
  it('registers gateway-owned entries with an execution side (timeout, parallel-safety declared)', async () => {
    const entry = await entryFor(c, c.good.tool);
    expect(entry.owner).toBe('gateway');
    expect(entry.shape).toBe('gateway');
    expect(entry.execution).toBeDefined();
    expect(entry.execution!.timeoutMs).toBeGreaterThan(0);
    expect(typeof entry.execution!.parallelSafe).toBe('boolean');
  });

  it('begin → run → end: one public item opened in progress, closed completed, valid per the spec', async () => {
    const entry = await entryFor(c, c.good.tool);
    const { emit, outcome } = await runThrough(entry.execution!, entry, c.good.args);
    expect(outcome.kind).toBe('ok');
    expect(outcome.output).toContain(c.good.outputContains);
    expect(emit.items).toHaveLength(1);
    expect(emit.items[0]).toMatchObject({ type: c.itemType, status: 'in_progress' });
    const closed = emit.closed.get(0);
    expect(closed).toMatchObject({ ...c.shape, type: c.itemType, id: emit.items[0].id, status: 'completed' });
    // every event it announced is about its own item and a known event type
    for (const event of emit.events) {
      expect(event.outputIndex).toBe(0);
      expect(NON_CORE_EVENT_TYPES.has(event.type) || EVENT_SCHEMAS.has(event.type), event.type).toBe(true);
      expect(event.type.startsWith(`response.${c.itemType}`)).toBe(true);
    }
    expect(emit.events.map((e) => e.type).at(-1)).toMatch(/\.completed$/);
  });

  it('a failure at the service is an error result for the model and a failed item, not a throw', async () => {
    const entry = await entryFor(c, c.bad.tool);
    c.bad.prepare?.();
    const { emit, outcome } = await runThrough(entry.execution!, entry, c.bad.args);
    expect(outcome.kind).not.toBe('ok');
    expect(outcome.output.length).toBeGreaterThan(0);
    const closed = emit.closed.get(0);
    expect(closed).toMatchObject({ ...c.shape, type: c.itemType, status: 'failed' });
  });

  it('stops promptly when its call is aborted', async () => {
    const entry = await entryFor(c, c.good.tool);
    const controller = new AbortController();
    controller.abort(new Error('client went away'));
    const started = Date.now();
    // fresh arguments: an answer already cached would rightly be served without contacting anyone
    const args = { ...c.good.args, ...('query' in c.good.args ? { query: `uncached ${Date.now()}` } : {}) };
    const settled = await entry.execution!.run({ call: { callId: 'call_x', modelName: entry.modelName, arguments: JSON.stringify(args) }, entry, args, signal: controller.signal, emit: recordingEmitter() }).then(
      (outcome) => ({ outcome }),
      (error: unknown) => ({ error }),
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    // either way is allowed: a rejected run (the scheduler turns it into an error result) or an error outcome
    if ('outcome' in settled) expect(settled.outcome.kind).not.toBe('ok');
    else expect(settled.error).toBeDefined();
  });
});
