import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from '../../src/observability/metrics.js';

/** `name{labels} value` lines of one metric in a scrape. */
async function series(metrics: GatewayMetrics, name: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await metrics.scrape()).body.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(name.length, at), Number(line.slice(at + 1)));
  }
  return out;
}

describe('metric label values chosen by clients', () => {
  it('count each label set on its own, and past the cap (2,000 label sets) as `other`, without growing', async () => {
    const metrics = new GatewayMetrics();
    // client-chosen MCP server labels: 2,000 get their own series, the next 500 fold into one
    for (let i = 0; i < 2_500; i++) metrics.mcpFailure('call', `server-${i}`);
    // a label set seen before the cap keeps its own series afterwards
    metrics.mcpFailure('call', 'server-7');
    const failures = await series(metrics, 'switchyard_mcp_failures_total');
    expect(failures.get('{server="server-7",operation="call"}')).toBe(2);
    expect(failures.get('{server="server-1999",operation="call"}')).toBe(1);
    expect(failures.has('{server="server-2000",operation="call"}')).toBe(false);
    expect(failures.get('{server="other",operation="other"}')).toBe(500);
    expect(failures.size).toBe(2_001);
    // the cache holds what was counted, not one entry per label set past the cap
    const cached = [...(metrics as unknown as { children: Map<unknown, Map<string, unknown>> }).children.values()].reduce((n, m) => n + m.size, 0);
    expect(cached).toBe(2_001);
  });

  it('keep single-label series apart (a response status per series)', async () => {
    const metrics = new GatewayMetrics();
    const response = (status: string) => ({ status, output: [], incomplete_details: null }) as never;
    metrics.settled(response('completed'), 1);
    metrics.settled(response('completed'), 1);
    metrics.settled(response('failed'), 1);
    const responses = await series(metrics, 'switchyard_responses_total');
    expect(responses.get('{status="completed"}')).toBe(2);
    expect(responses.get('{status="failed"}')).toBe(1);
  });
});
