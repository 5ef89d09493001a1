// A coding agent's tool list, resent with every request, is parsed once and then taken as kept
// (src/util/interned-member.ts, src/http/json.ts), and so is a history resent whole
// (src/util/interned-prefix.ts). Through the gateway, every send of the same Codex
// request — compact as Codex sends it, pretty-printed as the fixtures hold it, and as WebSocket
// messages (Codex's mode), and Anthropic Messages requests (Claude Code's) — must answer as
// the first did and send the model the same request; a body that changes one tool must be seen
// changed, and one that breaks after the list must still be a 400.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const FIXTURE = readFileSync(new URL('../fixtures/codex/fallback-tool/0002-request.json', import.meta.url));

describe('a resent tool list through the gateway', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway();
  });
  afterAll(() => tg.close());

  /** Sends `body` and returns the final Response and the upstream request it caused. */
  async function send(body: string | Buffer): Promise<{ response: Record<string, any>; upstream: Record<string, any> }> {
    const before = tg.simulator.requests.length;
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    const response = events.at(-1)!.response;
    expect(response.status).toBe('completed');
    const upstream = tg.simulator.requests.slice(before);
    expect(upstream).toHaveLength(1);
    return { response, upstream: upstream[0].body as Record<string, any> };
  }

  /** The parts of a Response that do not change from one turn to the next (ids and times do). */
  const lasting = (response: Record<string, any>) => ({ tools: response.tools, text: response.output.at(-1)?.content?.[0]?.text, usage: response.usage });

  it('answers every send of the same body alike and sends the model the same request, compact and pretty-printed', async () => {
    const parsed = JSON.parse(FIXTURE.toString('utf8'));
    for (const body of [JSON.stringify(parsed), FIXTURE]) {
      const first = await send(body);
      expect(first.response.tools.map((tool: any) => tool.type)).toEqual(parsed.tools.map((tool: any) => tool.type));
      for (let i = 0; i < 4; i++) {
        const again = await send(body);
        expect(lasting(again.response)).toEqual(lasting(first.response));
        expect(JSON.stringify(again.upstream)).toBe(JSON.stringify(first.upstream));
      }
    }
  });

  it('sees a changed tool at once, and still refuses a body broken after the list', async () => {
    const parsed = JSON.parse(FIXTURE.toString('utf8'));
    const body = JSON.stringify(parsed);
    for (let i = 0; i < 3; i++) await send(body);
    // one character, so the bytes keep their length (and their place in the body)
    const changed = structuredClone(parsed);
    const description: string = changed.tools[0].description;
    changed.tools[0].description = `${description[0] === 'X' ? 'Y' : 'X'}${description.slice(1)}`;
    expect(JSON.stringify(changed).length).toBe(body.length);
    const after = await send(JSON.stringify(changed));
    expect(after.response.tools[0].description).toBe(changed.tools[0].description);
    expect(after.upstream.tools[0].function.description).toBe(changed.tools[0].description);
    expect(lasting((await send(body)).response).tools[0].description).toBe(parsed.tools[0].description);

    const broken = `${body.slice(0, body.lastIndexOf('}'))},}`;
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: broken });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json' });
  });

  it('answers every WebSocket message of the same body alike', async () => {
    const ws = new WebSocket(`${tg.gateway.url.replace('http', 'ws')}/v1/responses`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const turn = (message: string) =>
      new Promise<{ response: Record<string, any>; upstream: Record<string, any> }>((resolve, reject) => {
        const before = tg.simulator.requests.length;
        const onMessage = (data: WebSocket.RawData) => {
          const event = JSON.parse(String(data));
          if (event.type === 'error') reject(new Error(JSON.stringify(event)));
          if (event.type === 'response.completed') {
            ws.off('message', onMessage);
            resolve({ response: event.response, upstream: tg.simulator.requests[before].body as Record<string, any> });
          }
        };
        ws.on('message', onMessage);
        ws.send(message);
      });
    const { stream: _stream, ...body } = JSON.parse(FIXTURE.toString('utf8'));
    const message = JSON.stringify({ type: 'response.create', ...body });
    const first = await turn(message);
    expect(first.response.tools).toHaveLength(body.tools.length);
    for (let i = 0; i < 4; i++) {
      const again = await turn(message);
      expect(lasting(again.response)).toEqual(lasting(first.response));
      expect(JSON.stringify(again.upstream)).toBe(JSON.stringify(first.upstream));
    }
    ws.close();
  });

  it('answers every send of the same Messages request alike (Claude Code resends its tools too)', async () => {
    const tools = Array.from({ length: 12 }, (_, i) => ({
      name: `tool_${i}`,
      description: `Tool ${i}: reads a file — “quoted”, with \\ and "escapes".`,
      input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    }));
    const body = JSON.stringify({
      model: 'm',
      max_tokens: 100,
      tools,
      messages: [{ role: 'user', content: scripted({ rounds: [{ tool_calls: [{ name: 'tool_3', arguments: { path: 'a.txt' } }] }] }) }],
    });
    const send = async () => {
      const before = tg.simulator.requests.length;
      const res = await fetch(`${tg.gateway.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body });
      expect(res.status).toBe(200);
      const message = (await res.json()) as { content: Array<Record<string, unknown>>; stop_reason: string };
      return { content: message.content.map(({ type, name, input }) => ({ type, name, input })), stop: message.stop_reason, upstream: JSON.stringify(tg.simulator.requests[before].body) };
    };
    const first = await send();
    expect(first.content).toEqual([{ type: 'tool_use', name: 'tool_3', input: { path: 'a.txt' } }]);
    expect(first.stop).toBe('tool_use');
    for (let i = 0; i < 4; i++) expect(await send()).toEqual(first);
  });

  it('sends the model the same request for a growing history resent whole as for the same history parsed fresh', async () => {
    const base = JSON.parse(FIXTURE.toString('utf8'));
    const added: Array<Record<string, unknown>> = [];
    const upstreamOf = (request: Record<string, any>) => JSON.stringify({ messages: request.messages, tools: request.tools });
    for (let turn = 0; turn < 8; turn++) {
      added.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: `answer ${turn} “✓”` }] });
      added.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: `question ${turn}` }] });
      const body = { ...base, input: [...base.input, ...added] };
      // Codex's shape (its history kept from the third turn on) …
      const resent = await send(JSON.stringify(body));
      // … and the same request with a member of a new length in front, so nothing is found at a kept place
      const fresh = await send(JSON.stringify({ user: 'u'.repeat(turn + 1), ...body }));
      expect(upstreamOf(resent.upstream)).toBe(upstreamOf(fresh.upstream));
      expect(resent.upstream.messages.at(-1).content).toContain(`question ${turn}`);
      expect(lasting(resent.response)).toEqual(lasting(fresh.response));
    }
  });
});
