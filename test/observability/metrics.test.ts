import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, scripted, type TestGateway } from '../helpers/gateway.js';
import { STDIO_FIXTURE } from '../helpers/mcp-servers.js';

// /metrics scraped around one turn that runs an MCP call (gateway-owned) and then returns a
// client function call: the counters and histograms must move by what happened.

let tg: TestGateway;
let client: OpenAI;

beforeAll(async () => {
  tg = await startTestGateway({ config: { mcp: { servers: { local: { command: process.execPath, args: [STDIO_FIXTURE] }, broken: { command: process.execPath, args: ['-e', 'process.exit(3)'] } } } } });
  client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
}, 60_000);
afterAll(async () => tg?.close());

/** Prometheus text → value by `name{labels}` (labels as printed). */
async function scrape(): Promise<Map<string, number>> {
  const response = await fetch(`${tg.gateway.url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  const values = new Map<string, number>();
  for (const line of (await response.text()).split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const at = line.lastIndexOf(' ');
    values.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return values;
}

const delta = (before: Map<string, number>, after: Map<string, number>, key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0);

describe('GET /metrics', () => {
  it('moves with a turn that makes an MCP call and returns a client function call', async () => {
    const before = await scrape();
    const input = scripted({ rounds: [{ tool_calls: [{ name: 'mcp__local__echo', arguments: { message: 'ping' } }] }, { tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }] });
    const response = await client.responses.create({
      model: 'm',
      input,
      tools: [
        { type: 'mcp', server_label: 'local', require_approval: 'never' },
        { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false },
      ],
    } as any);
    expect(response.output.map((i) => i.type)).toEqual(['mcp_list_tools', 'mcp_call', 'function_call']);
    const after = await scrape();

    expect(delta(before, after, 'switchyard_http_requests_total{route="/v1/responses",method="POST",status="200"}')).toBe(1);
    expect(delta(before, after, 'switchyard_http_request_duration_seconds_count{route="/v1/responses",method="POST"}')).toBe(1);
    expect(delta(before, after, 'switchyard_http_time_to_first_byte_seconds_count{route="/v1/responses",method="POST"}')).toBe(1);
    expect(delta(before, after, 'switchyard_tool_calls_total{type="mcp_call",owner="gateway",outcome="ok"}')).toBe(1);
    expect(delta(before, after, 'switchyard_tool_calls_total{type="function_call",owner="client",outcome="returned"}')).toBe(1);
    expect(delta(before, after, 'switchyard_tool_call_duration_seconds_count{type="mcp"}')).toBe(1);
    expect(delta(before, after, 'switchyard_round_upstream_seconds_count')).toBe(2);
    expect(delta(before, after, 'switchyard_round_gateway_seconds_count')).toBe(2);
    expect(delta(before, after, 'switchyard_rounds_per_response_sum')).toBe(2);
    expect(delta(before, after, 'switchyard_responses_total{status="completed"}')).toBe(1);
    expect(after.get('switchyard_open_streams')).toBe(0);
    // the first scrape itself was counted, under its route
    expect(delta(before, after, 'switchyard_http_requests_total{route="/metrics",method="GET",status="200"}')).toBe(1);
  });

  it('counts incomplete responses by reason, MCP list failures by server, and open streams while one runs', async () => {
    const before = await scrape();
    const capped = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'a b c d e f' }] }), max_output_tokens: 2 } as any);
    expect(capped.status).toBe('incomplete');
    // an operator server that dies at start: its listing fails
    const failing = await client.responses.create({ model: 'm', input: 'x', tools: [{ type: 'mcp', server_label: 'broken', require_approval: 'never' }] } as any).catch((e: unknown) => e);
    expect(failing).toBeInstanceOf(Error);
    const stream = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'slow words here', delay_ms: 300 }] }), stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    const during = await scrape();
    expect(during.get('switchyard_open_streams')).toBe(1);
    while (!(await iterator.next()).done);
    const after = await scrape();
    expect(delta(before, after, 'switchyard_responses_incomplete_total{reason="max_output_tokens"}')).toBe(1);
    expect(after.get('switchyard_open_streams')).toBe(0);
    expect(delta(before, after, 'switchyard_mcp_failures_total{server="broken",operation="list"}')).toBeGreaterThanOrEqual(1);
    const status = (failing as { status?: number }).status;
    expect(delta(before, after, `switchyard_http_requests_total{route="/v1/responses",method="POST",status="${status}"}`)).toBe(1);
  });
});
