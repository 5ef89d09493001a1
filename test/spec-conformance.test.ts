import { afterAll, beforeAll, it } from 'vitest';
import { readSse, scripted, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { validateResponse, validateStreamEvent, EVENT_SCHEMAS } from './helpers/spec.js';

let tg: TestGateway;
beforeAll(async () => { tg = await startTestGateway(); });
afterAll(async () => { await tg.close(); });

const scripts: Record<string, any> = {
  text: { rounds: [{ text: 'Hello there general kenobi', chunks: 3 }] },
  reasoning: { rounds: [{ reasoning: 'Let me think.', text: '42' }] },
  call: { rounds: [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }] },
  par: { rounds: [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }, { name: 'get_time', arguments: { tz: 'CET' } }], tool_call_style: 'interleaved' }] },
  length: { rounds: [{ text: 'one two three four five', finish_reason: 'length' }] },
  filter: { rounds: [{ text: 'bad stuff', finish_reason: 'content_filter' }] },
  err: { rounds: [{ text: 'one two three four five', error_after_chunks: 3 }] },
};
const tools = [
  { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  { type: 'function', name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } },
];
it('explore', async () => {
  console.log([...EVENT_SCHEMAS.keys()]);
  for (const [name, s] of Object.entries(scripts)) {
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: scripted(s), tools, stream: true }) });
    const events = await readSse(res);
    console.log('=====', name, res.status);
    for (const e of events) {
      const errs = validateStreamEvent(e);
      const short = { ...e }; if (short.response) short.response = { status: e.response.status, output: e.response.output, error: e.response.error, inc: e.response.incomplete_details, usage: e.response.usage };
      console.log(JSON.stringify(short), errs.length ? errs.slice(0, 5) : '');
    }
  }
});
