import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/** WebSocket mode as served by the real gateway (src/app.ts wiring), not a test-built server. */
describe('WebSocket mode on the gateway', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway();
  });
  afterAll(() => tg.close());

  it('upgrades /v1/responses and answers response.create with the SSE events', async () => {
    const ws = new WebSocket(`${tg.gateway.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer test' } });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const events: any[] = [];
    const done = new Promise<void>((resolve) => {
      ws.on('message', (data) => {
        const event = JSON.parse(String(data));
        events.push(event);
        if (event.type === 'response.completed') resolve();
      });
    });
    ws.send(JSON.stringify({ type: 'response.create', model: 'm', input: 'over a socket', store: false }));
    await done;
    ws.close();
    expect(events[0].type).toBe('response.created');
    expect(events.at(-1).response.output[0].content[0].text).toBe('You said: over a socket');
  });
});

describe('WebSocket store:false chains longer than the per-socket cache', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway();
  });
  afterAll(() => tg.close());

  it('keeps the whole history after 300 chained turns (evicting old entries never cuts a chain)', async () => {
    const ws = new WebSocket(`${tg.gateway.url.replace('http', 'ws')}/v1/responses`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const turn = (input: string, previous: string | null) =>
      new Promise<string>((resolve, reject) => {
        const onMessage = (data: WebSocket.RawData) => {
          const event = JSON.parse(String(data));
          if (event.type === 'error') reject(new Error(JSON.stringify(event)));
          if (event.type === 'response.completed') {
            ws.off('message', onMessage);
            resolve(event.response.id);
          }
        };
        ws.on('message', onMessage);
        ws.send(JSON.stringify({ type: 'response.create', model: 'm', input, store: false, ...(previous ? { previous_response_id: previous } : {}) }));
      });
    let previous: string | null = null;
    for (let i = 0; i < 300; i++) previous = await turn(`turn ${i}`, previous);
    ws.close();
    const messages = tg.simulator.requests.at(-1)!.body.messages;
    expect(messages).toHaveLength(599);
    expect(messages[0].content).toBe('turn 0');
  });
});

describe('WebSocket: a failed continuation evicts what it continued (issue 9, defect 10)', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway();
  });
  afterAll(() => tg.close());

  const sim = (script: unknown, text = 'go') => `${text}\n#sim ${JSON.stringify(script)}`;

  /** Sends one response.create and collects its events up to the terminal one (or the error event). */
  function turn(ws: WebSocket, params: Record<string, unknown>): Promise<any[]> {
    return new Promise((resolve) => {
      const events: any[] = [];
      const onMessage = (data: WebSocket.RawData) => {
        const event = JSON.parse(String(data));
        events.push(event);
        if (event.type === 'error' || event.type === 'response.completed' || event.type === 'response.failed' || event.type === 'response.incomplete') {
          ws.off('message', onMessage);
          resolve(events);
        }
      };
      ws.on('message', onMessage);
      ws.send(JSON.stringify({ type: 'response.create', model: 'm', store: false, ...params }));
    });
  }

  async function open(): Promise<WebSocket> {
    const ws = new WebSocket(`${tg.gateway.url.replace('http', 'ws')}/v1/responses`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return ws;
  }

  for (const [name, failing] of [
    ['an upstream 400 before any event', { status: 400, error: 'bad request' }],
    ['an upstream 500 before any event', { status: 500, error: 'boom' }],
    ['a failure after events (mid-stream error)', { text: 'a b c d e f', error_after_chunks: 3 }],
  ] as const) {
    it(`${name}: continuing from the same response again is previous_response_not_found`, async () => {
      const ws = await open();
      const first = await turn(ws, { input: sim({ rounds: [{ text: 'first' }] }) });
      const firstId = first.at(-1).response.id;
      expect(first.at(-1).type).toBe('response.completed');

      const failed = await turn(ws, { input: sim({ rounds: [failing] }), previous_response_id: firstId });
      expect(['error', 'response.failed']).toContain(failed.at(-1).type);

      const again = await turn(ws, { input: sim({ rounds: [{ text: 'again' }] }), previous_response_id: firstId });
      ws.close();
      expect(again).toHaveLength(1);
      expect(again[0].type).toBe('error');
      expect(again[0].error.code).toBe('previous_response_not_found');
    });
  }

  it('a continuation that succeeds keeps its parent usable (no eviction on success)', async () => {
    const ws = await open();
    const first = await turn(ws, { input: sim({ rounds: [{ text: 'first' }] }) });
    const firstId = first.at(-1).response.id;
    const second = await turn(ws, { input: sim({ rounds: [{ text: 'second' }] }), previous_response_id: firstId });
    expect(second.at(-1).type).toBe('response.completed');
    const third = await turn(ws, { input: sim({ rounds: [{ text: 'third' }] }), previous_response_id: firstId });
    ws.close();
    expect(third.at(-1).type).toBe('response.completed');
  });
});
