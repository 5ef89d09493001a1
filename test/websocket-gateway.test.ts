import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

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
