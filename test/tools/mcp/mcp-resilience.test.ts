import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_MCP_CONFIG } from '../../../src/mcp/service.js';
import { scripted, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const dyingServer = new URL('../../fixtures/mcp/dying-stdio-server.mjs', import.meta.url).pathname;

async function post(tg: TestGateway, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

describe('MCP sessions that die or never start', () => {
  const open: TestGateway[] = [];
  const servers: Server[] = [];
  afterAll(async () => {
    await Promise.all(open.map((tg) => tg.close()));
    for (const s of servers) s.close();
  });

  it('a session whose server exited is dropped and reconnected on the next request', async () => {
    const tg = await startTestGateway({ config: { mcp: { ...DEFAULT_MCP_CONFIG, servers: { local: { command: process.execPath, args: [dyingServer] } } } } as any });
    open.push(tg);
    const tools = [{ type: 'mcp', server_label: 'local', require_approval: 'never' }];
    const call = (name: string, args: object) => post(tg, { model: 'm', tools, input: scripted({ rounds: [{ tool_calls: [{ name, arguments: args }] }, { text: 'ok' }] }) });
    expect((await call('mcp__local__die', {})).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    // no silence in between: the closed session must not linger until it idles out
    for (let i = 0; i < 3; i++) {
      const { status, body } = await call('mcp__local__echo', { text: `n${i}` });
      expect(status).toBe(200);
      expect(body.output.find((item: any) => item.type === 'mcp_call').output).toBe(`echo:n${i}`);
    }
  });

  it('a server that accepts the connection but never answers initialize fails within the list timeout', async () => {
    const sockets = new Set<Socket>();
    const hanging = createServer(() => {
      /* never answers */
    });
    hanging.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    servers.push(hanging);
    const tg = await startTestGateway({ config: { mcp: { ...DEFAULT_MCP_CONFIG, listTimeoutMs: 500, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } } } as any });
    open.push(tg);
    const started = Date.now();
    const { status, body } = await post(tg, { model: 'm', input: 'hi', tools: [{ type: 'mcp', server_label: 'h', server_url: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/mcp` }] });
    expect(status).toBe(424);
    expect(body.error.code).toBe('mcp_list_tools_failed');
    expect(Date.now() - started).toBeLessThan(3_000);
    for (const socket of sockets) socket.destroy();
  });
});
