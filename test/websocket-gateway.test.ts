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
