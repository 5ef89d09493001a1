import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MCP_CONFIG } from '../../../src/mcp/service.js';
import { scripted, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { FIXTURES } from '../../helpers/mcp-servers.js';

const COUNTING_SERVER = join(FIXTURES, 'stdio-counting-server.mjs');

// issue 9 #7: a tools/call is re-sent on a fresh session only when it certainly did not reach the
// server. A server that runs the call and dies before answering must see it exactly once.
describe('MCP tool calls are never re-sent after they may have run', () => {
  let tg: TestGateway;
  let client: OpenAI;
  let dir: string;
  let countFile: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-mcp-count-'));
    countFile = join(dir, 'executions.log');
    writeFileSync(countFile, '');
    tg = await startTestGateway({
      config: { mcp: { ...DEFAULT_MCP_CONFIG, servers: { counter: { command: process.execPath, args: [COUNTING_SERVER], env: { COUNT_FILE: countFile } } } } },
    });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await tg?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const executions = () => readFileSync(countFile, 'utf8').split('\n').filter(Boolean);
  const callOnce = (name: string, tag: string) =>
    client.responses.create({
      model: 'm',
      input: scripted({ rounds: [{ tool_calls: [{ name: `mcp__counter__${name}`, arguments: { tag } }] }, { text: 'done' }] }),
      tools: [{ type: 'mcp', server_label: 'counter', require_approval: 'never' }],
    } as any);

  it('a server that dies mid-call ran it once: the call fails with a clear error instead of running again', async () => {
    const response = await callOnce('count_then_die', 'mid-call');
    const call = response.output.find((i) => i.type === 'mcp_call') as any;
    expect(executions().filter((t) => t === 'mid-call')).toHaveLength(1);
    expect(call.status).toBe('failed');
    expect(call.error).toMatch(/lost while the call was in flight; it may have run, so it was not retried/);
    // the model was told the same
    const toolMessage = tg.simulator.requests.at(-1)!.body.messages.find((m: any) => m.role === 'tool');
    expect(toolMessage.content).toMatch(/not retried/);
  });

  it('a session known dead before the call is replaced before anything is sent: the call runs once', async () => {
    const response = await callOnce('count', 'after-death');
    expect(response.output.find((i) => i.type === 'mcp_call')).toMatchObject({ status: 'completed', output: 'counted after-death' });
    expect(executions().filter((t) => t === 'after-death')).toHaveLength(1);
  });
});
