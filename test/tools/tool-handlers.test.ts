import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MCP_CONFIG, McpService } from '../../src/mcp/service.js';
import type { DeclareContext, ToolHandler } from '../../src/tools/handler.js';
import {
  codeInterpreterHandler,
  customHandler,
  fileSearchHandler,
  functionHandler,
  mcpHandler,
  namespaceHandler,
  toolSearchHandler,
  webSearchHandler,
} from '../../src/tools/handler-list.js';
import { flattenedName } from '../../src/tools/namespace/handler.js';
import { checkDeclarations, discoverTools, echoTools, parseTools, registerTools, resolveToolChoice, searchedDeclarations } from '../../src/tools/registry.js';
import { FUNCTION_NAME_PATTERN } from '../../src/tools/validate.js';
import { deepFreeze } from '../../src/util/freeze.js';
import { ToolDeclarationError, type GatewayExecution } from '../../src/tools/types.js';
import { startEverything, type ChildMcpServer } from '../helpers/mcp-servers.js';

// The MCP handler normalizes what its server offers: a real one (server-everything from npm) serves
// the conformance suite, so its assertions run over real discovered tools, not over nothing.
let everything: ChildMcpServer;
let mcp: McpService;
beforeAll(async () => {
  everything = await startEverything('streamableHttp');
  mcp = new McpService({ ...DEFAULT_MCP_CONFIG, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } });
}, 30_000);
afterAll(async () => {
  await mcp?.close();
  await everything?.close();
});

const fakeExecution: GatewayExecution = {
  parallelSafe: true,
  timeoutMs: 1000,
  begin: () => undefined,
  run: async () => ({ kind: 'ok', output: 'ok' }),
  end: () => {},
};

function context(configured: boolean): DeclareContext & { logged: string[] } {
  const logged: string[] = [];
  return { logged, executionFor: () => (configured ? fakeExecution : undefined), logOnce: (_key, message) => logged.push(message), ...(configured && mcp ? { mcp } : {}) };
}

/** Parse, discover (MCP: `tools/list` on the real server), register — as a request does. */
async function register(declaration: Record<string, unknown>, ctx: DeclareContext) {
  const parsed = parseTools([declaration]);
  await discoverTools(parsed, { ...ctx, priorItems: [], signal: new AbortController().signal });
  return registerTools(parsed, ctx);
}

/** One valid declaration and one invalid declaration (with the param it must name) per handler. */
const CASES: Array<{ handler: ToolHandler<any>; valid: Record<string, unknown>; invalid: Record<string, unknown>; invalidParam: string }> = [
  { handler: functionHandler, valid: { type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } }, invalid: { type: 'function', name: 'has space' }, invalidParam: 'tools[0].name' },
  { handler: customHandler, valid: { type: 'custom', name: 'apply_patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' } }, invalid: { type: 'custom', name: 'p', format: { type: 'grammar', syntax: 'ebnf', definition: 'x' } }, invalidParam: 'tools[0].format.syntax' },
  { handler: namespaceHandler, valid: { type: 'namespace', name: 'crm', description: 'CRM tools', tools: [{ type: 'function', name: 'find' }, { type: 'custom', name: 'note' }] }, invalid: { type: 'namespace', name: 'crm', description: 'x', tools: [{ type: 'web_search' }] }, invalidParam: 'tools[0].tools[0].type' },
  { handler: toolSearchHandler, valid: { type: 'tool_search', execution: 'client' }, invalid: { type: 'tool_search', execution: 'remote' }, invalidParam: 'tools[0].execution' },
  { handler: webSearchHandler, valid: { type: 'web_search', search_context_size: 'low', filters: { allowed_domains: ['example.com'] } }, invalid: { type: 'web_search', search_context_size: 'huge' }, invalidParam: 'tools[0].search_context_size' },
  { handler: fileSearchHandler, valid: { type: 'file_search', vector_store_ids: ['vs_1'] }, invalid: { type: 'file_search', vector_store_ids: [] }, invalidParam: 'tools[0].vector_store_ids' },
  { handler: codeInterpreterHandler, valid: { type: 'code_interpreter', container: { type: 'auto' } }, invalid: { type: 'code_interpreter' }, invalidParam: 'tools[0].container' },
  {
    handler: mcpHandler,
    get valid() {
      return { type: 'mcp', server_label: 'db', server_url: everything.url };
    },
    invalid: { type: 'mcp', server_url: 'https://x' }, invalidParam: 'tools[0].server_label' },
];

// One conformance suite, run against every handler (style.md §4).
describe.each(CASES)('handler conformance: $handler.types.0', (testCase) => {
  const { handler, invalid, invalidParam } = testCase;
  it('accepts every one of its type names through parseTools', () => {
    for (const type of handler.types) {
      const [parsed] = parseTools([{ ...testCase.valid, type }]);
      expect(parsed.handler).toBe(handler);
    }
  });

  it('rejects an invalid declaration with a precise param', () => {
    try {
      parseTools([invalid]);
      expect.unreachable('should have thrown');
    } catch (err) {
      expect(err).toBeInstanceOf(ToolDeclarationError);
      expect((err as ToolDeclarationError).param).toBe(invalidParam);
    }
  });

  it('normalizes to valid, deterministic model-visible functions with explicit ownership', async () => {
    const ctx = context(true);
    const once = await register(testCase.valid, ctx);
    const twice = await register(testCase.valid, ctx);
    const entries = [...once.all()];
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.map((e) => e.modelName)).toEqual([...twice.all()].map((e) => e.modelName));
    for (const entry of entries) {
      expect(entry.modelName).toMatch(FUNCTION_NAME_PATTERN);
      expect(entry.fn.name).toBe(entry.modelName);
      expect(entry.fn.parameters?.type ?? 'object').toBe('object');
      expect(entry.owner).toBe(entry.shape === 'gateway' ? 'gateway' : 'client');
      if (entry.owner === 'gateway') expect(entry.execution).toBeDefined();
      expect(entry.declaredAt.startsWith('tools[0]')).toBe(true);
    }
  });

  it('omits a gateway-owned type whose executor is not configured (logged), never a client type', async () => {
    const ctx = context(false);
    const registry = await register(testCase.valid, ctx);
    if (handler.owner === 'gateway') {
      expect(registry.size).toBe(0);
      expect(ctx.logged.length).toBe(1);
    } else {
      expect(registry.size).toBeGreaterThan(0);
    }
  });
});

describe('registry', () => {
  const ctx = context(true);

  it('flattens namespace members to documented names and restores identity from the entry', () => {
    const registry = registerTools(parseTools([{ type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'find' }, { type: 'custom', name: 'note' }] }]), ctx);
    expect(registry.lookup('crm__find')).toMatchObject({ shape: 'function', identity: { type: 'function', name: 'find', namespace: 'crm' } });
    expect(registry.lookup('crm__note')).toMatchObject({ shape: 'custom', identity: { type: 'custom', name: 'note', namespace: 'crm' } });
  });

  it('counts the MCP servers of tools and of a client tool_search_output together against mcp.maxServersPerRequest', () => {
    const limited = { ...ctx, mcp: { config: { ...DEFAULT_MCP_CONFIG, maxServersPerRequest: 2 } } as McpService };
    const server = (label: string) => ({ type: 'mcp', server_label: label, server_url: 'http://127.0.0.1:1/mcp', require_approval: 'never' });
    const declared = parseTools([server('a'), { type: 'function', name: 'f' }]);
    const searched = searchedDeclarations([{ type: 'tool_search_output', execution: 'client', tools: [server('b'), server('c')] }, { type: 'tool_search_output', execution: 'server', tools: [server('d')] }]);
    expect(() => checkDeclarations(declared, searched.slice(0, 1), limited)).not.toThrow();
    const tooMany = (() => {
      try {
        checkDeclarations(declared, searched, limited);
      } catch (err) {
        return err;
      }
    })();
    expect(tooMany).toBeInstanceOf(ToolDeclarationError);
    expect(tooMany).toMatchObject({ message: 'Too many MCP servers: 3 declared, at most 2 allowed.', param: 'tools', code: 'too_many_mcp_servers' });
  });

  it('keeps long flattened names within 64 characters, deterministically', () => {
    const name = flattenedName('n'.repeat(40), 'm'.repeat(40));
    expect(name).toHaveLength(64);
    expect(name).toBe(flattenedName('n'.repeat(40), 'm'.repeat(40)));
    expect(name).not.toBe(flattenedName('n'.repeat(40), `${'m'.repeat(39)}x`));
  });

  it('rejects duplicate names and namespace collisions, naming both declarations', () => {
    const dup = () => registerTools(parseTools([{ type: 'function', name: 'a' }, { type: 'custom', name: 'a' }]), ctx);
    expect(dup).toThrow(/tools\[1\] \(custom 'a'\) and tools\[0\] \(function 'a'\)/);
    const collide = () => registerTools(parseTools([{ type: 'function', name: 'crm__find' }, { type: 'namespace', name: 'crm', description: 'x', tools: [{ type: 'function', name: 'find' }] }]), ctx);
    expect(collide).toThrow(/tools\[1\]\.tools\[0\] \(function 'crm\.find'\) and tools\[0\] \(function 'crm__find'\)/);
  });

  it('keeps unknown types for the echo and never shows them', () => {
    const parsed = parseTools([{ type: 'teleporter', range: 3 }, { type: 'function', name: 'f' }]);
    const registry = registerTools(parsed, ctx);
    expect(registry.visibleFunctions().map((f) => f.name)).toEqual(['f']);
    expect(echoTools(parsed)[0]).toEqual({ type: 'teleporter', range: 3 });
  });

  it('never echoes MCP credentials', () => {
    const echoed = echoTools(parseTools([{ type: 'mcp', server_label: 'db', server_url: 'https://x/mcp', authorization: 'secret', headers: { 'x-key': 'secret' } }]));
    expect(JSON.stringify(echoed)).not.toContain('secret');
  });

  it('echoes a kept (frozen) tool list as the same array every time, made from its declarations alone', () => {
    const list = deepFreeze([
      { type: 'function', name: 'f', parameters: { type: 'object' } },
      { type: 'mcp', server_label: 'db', server_url: 'https://x/mcp', authorization: 'secret' },
    ]);
    const echoed = echoTools(parseTools(list));
    expect(echoTools(parseTools(list))).toBe(echoed);
    expect(JSON.stringify(echoed)).not.toContain('secret');
    // the same first declaration in another list, or a list the request made itself: its own echo
    const other = deepFreeze([list[0], { type: 'function', name: 'g' }]);
    expect(echoTools(parseTools(other)).map((tool) => tool.name)).toEqual(['f', 'g']);
    // (one echo kept per first declaration: the list's own is made again, then kept)
    const again = echoTools(parseTools([...list]));
    expect(again).toEqual(echoed);
    expect(echoTools(parseTools([...list]))).toBe(again);
    const own = [{ type: 'function', name: 'f' }];
    expect(echoTools(parseTools(own))).not.toBe(echoTools(parseTools(own)));
  });

  it('resolves tool_choice through the registry', () => {
    const registry = registerTools(
      parseTools([
        { type: 'function', name: 'f' },
        { type: 'custom', name: 'patch' },
        { type: 'namespace', name: 'crm', description: 'x', tools: [{ type: 'function', name: 'find' }, { type: 'function', name: 'save' }] },
        { type: 'web_search' },
      ]),
      ctx,
    );
    expect(resolveToolChoice('required', registry).toolChoice).toBe('required');
    expect(resolveToolChoice({ type: 'function', name: 'f' }, registry).toolChoice).toEqual({ name: 'f' });
    expect(resolveToolChoice({ type: 'custom', name: 'patch' }, registry).toolChoice).toEqual({ name: 'patch' });
    expect(resolveToolChoice({ type: 'function', name: 'find', namespace: 'crm' }, registry).toolChoice).toEqual({ name: 'crm__find' });
    expect(resolveToolChoice({ type: 'web_search_preview' }, registry).toolChoice).toEqual({ name: 'web_search' });
    const allowed = resolveToolChoice({ type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'f' }, { type: 'namespace', name: 'crm' }] }, registry);
    expect(allowed.toolChoice).toBe('required');
    expect(allowed.functions.map((f) => f.name)).toEqual(['f', 'crm__find', 'crm__save']);
    expect(() => resolveToolChoice({ type: 'function', name: 'nope' }, registry)).toThrow(/not among the request's tools/);
  });

  it('hides deferred tools until loaded', () => {
    const registry = registerTools(parseTools([{ type: 'tool_search', execution: 'client' }, { type: 'function', name: 'later', defer_loading: true }, { type: 'function', name: 'now' }]), ctx);
    expect(registry.visibleFunctions().map((f) => f.name)).toEqual(['tool_search', 'now']);
    registry.markLoaded('later');
    // loaded tools are appended, so what earlier rounds declared stays a prefix
    expect(registry.visibleFunctions().map((f) => f.name)).toEqual(['tool_search', 'now', 'later']);
  });
});
