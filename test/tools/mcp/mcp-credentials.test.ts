import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MCP_CONFIG } from '../../../src/mcp/service.js';
import { scripted, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { startFaultServer, startRecordingServer, type FaultServer, type RecordingHttpServer } from '../../helpers/mcp-servers.js';

const AUTH = 'SECRET-auth-7f3a9c';
const HEADER = 'SECRET-header-51bd02';
const QUERY = 'SECRET-query-c0ffee';
const SECRETS = [AUTH, HEADER, QUERY];

/** Every byte the gateway wrote to its data folder (SQLite file, WAL and all). */
function dataFolderText(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name)).toString('latin1'))
    .join('\n');
}

// issue 9 #9 and #18: credentials of MCP servers are never stored, echoed, or quoted in errors.
describe('MCP credentials', () => {
  let fault: FaultServer;
  let reflecting: RecordingHttpServer;
  let tg: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    fault = await startFaultServer();
    // answers every request with 500 and a body quoting the credentials it was sent
    reflecting = await startRecordingServer((req, res) => void res.writeHead(500, { 'content-type': 'text/plain' }).end(`bad token ${req.headers.authorization} ${req.headers['x-key']} at ${req.url}`));
    tg = await startTestGateway({ config: { mcp: { ...DEFAULT_MCP_CONFIG, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } } } });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await tg?.close();
    await Promise.allSettled([fault?.close(), reflecting?.close()]);
  });

  const mcp = (url: string, extra: Record<string, unknown> = {}) => ({
    type: 'mcp',
    server_label: 'f',
    server_url: `${url}?token=${QUERY}`,
    authorization: AUTH,
    headers: { 'x-key': HEADER },
    require_approval: 'never',
    allowed_tools: ['echo'],
    ...extra,
  });

  async function expect400(body: Record<string, unknown>, param: string): Promise<APIError> {
    const err = await client.responses.create({ model: 'm', input: 'hi', ...body } as any).then(
      () => expect.unreachable('expected a 400'),
      (e: unknown) => e as APIError,
    );
    expect({ status: err.status, param: err.param }).toEqual({ status: 400, param });
    return err;
  }

  it('a tool_search_output that loads an MCP server loads it (credentials used), and stores and echoes it without them', async () => {
    const before = fault.callsTo('echo');
    fault.resetStats();
    const response = await client.responses.create({
      model: 'm',
      tools: [{ type: 'tool_search', execution: 'client' }],
      input: [
        // round 0 was the tool search (the echoed call below); round 1 calls the loaded tool
        { role: 'user', content: scripted({ rounds: [{ text: 'unused' }, { tool_calls: [{ name: 'mcp__f__echo', arguments: { message: 'loaded' } }] }, { text: 'done' }] }) },
        { type: 'tool_search_call', call_id: 'call_ts1', execution: 'client', status: 'completed', arguments: { query: 'echo' } },
        { type: 'tool_search_output', call_id: 'call_ts1', execution: 'client', status: 'completed', tools: [mcp(fault.url)] },
      ],
    } as any);
    expect(response.output.find((i) => i.type === 'mcp_call'), JSON.stringify(response.output)).toMatchObject({ status: 'completed', output: 'Echo: loaded' });
    expect(fault.callsTo('echo')).toBeGreaterThan(before);
    // the server got the credentials
    const seen = fault.stats.requests.find((r) => r.rpc.some((m) => m.startsWith('tools/call')))!;
    expect(seen.headers.authorization).toBe(`Bearer ${AUTH}`);
    expect(seen.headers['x-key']).toBe(HEADER);

    // nothing the gateway returns or keeps holds them
    const items = await client.responses.inputItems.list(response.id);
    const stored = items.data.find((i: any) => i.type === 'tool_search_output') as any;
    expect(stored.tools[0]).toMatchObject({ type: 'mcp', server_label: 'f', server_url: `${fault.url}?token=REDACTED` });
    expect(stored.tools[0].authorization).toBeUndefined();
    expect(stored.tools[0].headers).toBeUndefined();
    const everything = JSON.stringify([response, items.data, await client.responses.retrieve(response.id)]) + dataFolderText(tg.dataDir);
    for (const secret of SECRETS) expect(everything).not.toContain(secret);
  });

  it('credentials in a declared server_url are neither echoed nor stored', async () => {
    const response = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'hi' }] }), tools: [mcp(fault.url)] } as any);
    expect((response.tools[0] as any).server_url).toBe(`${fault.url}?token=REDACTED`);
    const everything = JSON.stringify([response, await client.responses.retrieve(response.id)]) + dataFolderText(tg.dataDir);
    for (const secret of SECRETS) expect(everything).not.toContain(secret);
  });

  it('an invalid header value (CR/LF, NUL) is a 400 naming where it is, never quoting it', async () => {
    const crlf = await expect400({ tools: [mcp(fault.url, { headers: { 'x-key': `${HEADER}\r\nx-evil: 1` } })] }, 'tools[0].headers.x-key');
    expect(crlf.message).not.toContain(HEADER);
    const nul = await expect400({ tools: [mcp(fault.url, { authorization: `${AUTH}\u0000` })] }, 'tools[0].authorization');
    expect(nul.message).not.toContain(AUTH);
    const name = await expect400({ tools: [mcp(fault.url, { headers: { [`${HEADER}: x`]: 'v' } })] }, 'tools[0].headers');
    expect(name.message).not.toContain(HEADER);
  });

  it('a server_url with userinfo is a 400 that does not quote it', async () => {
    const url = new URL(fault.url);
    const err = await expect400({ tools: [mcp(`http://admin:${AUTH}@${url.host}${url.pathname}`)] }, 'tools[0].server_url');
    expect(err.message).not.toContain(AUTH);
  });

  it('an MCP server error that quotes the credentials reaches the client with them cut out', async () => {
    const err = await client.responses.create({ model: 'm', input: 'hi', tools: [mcp(reflecting.url)] } as any).then(
      () => expect.unreachable('expected a 424'),
      (e: unknown) => e as APIError,
    );
    expect(err.status).toBe(424);
    // the server did quote them back
    expect(reflecting.requests.at(-1)!.headers.authorization).toBe(`Bearer ${AUTH}`);
    for (const secret of SECRETS) expect(err.message).not.toContain(secret);
    expect(err.message).toContain('REDACTED');
  });
});
