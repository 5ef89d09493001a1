import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { DEFAULT_MCP_CONFIG } from '../../../src/mcp/service.js';
import { startSimulator, type Simulator } from '../../../src/simulate/server.js';
import { SqliteResponseStore } from '../../../src/store/sqlite.js';
import type { StoredResponse } from '../../../src/store/store.js';
import { scripted } from '../../helpers/gateway.js';
import { startFaultServer, type FaultServer } from '../../helpers/mcp-servers.js';

/** A real SQLite store whose next `failSaves` writes fail (a locked file, an unreachable database). */
class FlakyStore extends SqliteResponseStore {
  failSaves = 0;
  override async save(record: StoredResponse): Promise<void> {
    if (this.failSaves > 0) {
      this.failSaves--;
      throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    }
    return super.save(record);
  }
}

// issue 9 #8: an approval is used up only when its call starts, and is bound to the server's URL.
describe('MCP approvals', () => {
  let sim: Simulator;
  let gateway: Gateway;
  let store: FlakyStore;
  let dir: string;
  let fault: FaultServer;
  let other: FaultServer;
  let client: OpenAI;

  beforeAll(async () => {
    [sim, fault, other] = await Promise.all([startSimulator({ port: 0 }), startFaultServer(), startFaultServer()]);
    dir = mkdtempSync(join(tmpdir(), 'switchyard-approvals-'));
    store = new FlakyStore(join(dir, 'store'));
    const config = loadConfig({
      env: {},
      overrides: { port: 0, host: '127.0.0.1', dataDir: dir, logLevel: 'silent', upstream: { url: sim.url, maxRetries: 0 }, mcp: { ...DEFAULT_MCP_CONFIG, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } } } as any,
    });
    gateway = await startGateway({ config, logger: pino({ level: 'silent' }), store });
    client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
    await Promise.allSettled([sim?.close(), fault?.close(), other?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const tools = (url: string) => [{ type: 'mcp', server_label: 'f', server_url: url, allowed_tools: ['echo'], require_approval: 'always' }];

  /** A stored response that ends with an approval request for `echo` on server `f` at `url`. */
  async function approvalRequested(url: string, message: string): Promise<{ responseId: string; requestId: string }> {
    const first = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ tool_calls: [{ name: 'mcp__f__echo', arguments: { message } }] }] }), tools: tools(url) } as any);
    const request = first.output.find((i) => i.type === 'mcp_approval_request')!;
    expect(request).toBeDefined();
    return { responseId: first.id, requestId: request.id! };
  }

  it('a launch that fails before the run leaves the approval usable; the retry runs the call once', async () => {
    const { responseId, requestId } = await approvalRequested(fault.url, 'launch');
    const before = fault.callsTo('echo');
    const answer = { previous_response_id: responseId, input: [{ type: 'mcp_approval_response', approval_request_id: requestId, approve: true }], tools: tools(fault.url), model: 'm' };
    store.failSaves = 1;
    const failed = await client.responses.create({ ...answer, background: true } as any).then(
      () => expect.unreachable('the launch should have failed'),
      (err: unknown) => err as APIError,
    );
    expect(failed).toBeInstanceOf(APIError);
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(fault.callsTo('echo')).toBe(before);

    const retried = await client.responses.create(answer as any);
    const call = retried.output.find((i) => i.type === 'mcp_call') as any;
    expect(call).toMatchObject({ status: 'completed', output: 'Echo: launch', approval_request_id: requestId });
    expect(fault.callsTo('echo')).toBe(before + 1);

    // and now it is used up
    const again = await client.responses.create(answer as any).then(
      () => expect.unreachable('a used approval must be refused'),
      (err: unknown) => err as APIError,
    );
    expect({ status: again.status, code: again.code }).toEqual({ status: 400, code: 'approval_request_already_used' });
    expect(fault.callsTo('echo')).toBe(before + 1);
  });

  it('an approved call to a tool this request does not offer (allowed_tools) is refused, not run', async () => {
    const { responseId, requestId } = await approvalRequested(fault.url, 'hidden');
    const before = fault.callsTo('echo');
    const err = await client.responses
      .create({
        model: 'm',
        previous_response_id: responseId,
        input: [{ type: 'mcp_approval_response', approval_request_id: requestId, approve: true }],
        tools: [...tools(fault.url), { type: 'function', name: 'other', parameters: { type: 'object', properties: {} } }],
        tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'other' }] },
      } as any)
      .then(
        () => expect.unreachable('expected a 400'),
        (e: unknown) => e as APIError,
      );
    expect({ status: err.status, code: err.code }).toEqual({ status: 400, code: 'approval_request_mismatch' });
    expect(fault.callsTo('echo')).toBe(before);
  });

  it('re-declaring the label with another server_url does not run the approved call there', async () => {
    const { responseId, requestId } = await approvalRequested(fault.url, 'moved');
    const elsewhere = other.callsTo('echo');
    const err = await client.responses
      .create({ model: 'm', previous_response_id: responseId, input: [{ type: 'mcp_approval_response', approval_request_id: requestId, approve: true }], tools: tools(other.url) } as any)
      .then(
        () => expect.unreachable('expected a 400'),
        (e: unknown) => e as APIError,
      );
    expect({ status: err.status, code: err.code, param: err.param }).toEqual({ status: 400, code: 'approval_request_mismatch', param: 'input[0].approval_request_id' });
    expect(other.callsTo('echo')).toBe(elsewhere);
    // the approval still works for the server it was issued for
    const ok = await client.responses.create({ model: 'm', previous_response_id: responseId, input: [{ type: 'mcp_approval_response', approval_request_id: requestId, approve: true }], tools: tools(fault.url) } as any);
    expect(ok.output.find((i) => i.type === 'mcp_call')).toMatchObject({ status: 'completed', output: 'Echo: moved' });
  });
});
