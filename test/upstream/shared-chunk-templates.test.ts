// Chunk templates are shared by the streams of a model (src/protocol/chat-chunk-reader.ts): streams that run
// at once, their chunks arriving interleaved, must each still read exactly their own text, tool-call
// ids and arguments and usage — through the gateway, from the simulator's real chunk streams.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { checkStreamInvariants } from '../helpers/spec.js';

describe('streams read at once from shared chunk templates', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway();
  });
  afterAll(() => tg.close());

  async function turn(body: Record<string, unknown>): Promise<Array<Record<string, any>>> {
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream: true, store: false, ...body }) });
    expect(res.status).toBe(200);
    return readSse(res);
  }

  it('gives each of 24 interleaved streams its own text, call ids and arguments, and usage', async () => {
    const tool = { type: 'function', name: 'note', parameters: { type: 'object', properties: { text: { type: 'string' } } } };
    // each stream's tokens a millisecond apart, so chunks of different streams arrive in turns
    const runs = Array.from({ length: 24 }, (_, i) => {
      const words = Array.from({ length: 5 + (i % 7) }, (_, k) => `s${i}w${k}${'"\\\n'.slice(0, i % 4)}`);
      const text = words.join(' ');
      const round = i % 3 === 0 ? { tool_calls: [{ name: 'note', arguments: { text } }], delay_ms: 1 } : { text, delay_ms: 1 };
      const body = { input: scripted({ rounds: [round] }, `stream ${i}`), tools: [tool] };
      return { text, withCall: i % 3 === 0, body, events: turn(body) };
    });
    const callIds: string[] = [];
    for (const run of runs) {
      const events = await run.events;
      expect(checkStreamInvariants(events as any)).toEqual([]);
      const final = events.at(-1)!.response;
      expect(final.status).toBe('completed');
      if (run.withCall) {
        const call = final.output.find((item: any) => item.type === 'function_call');
        expect(JSON.parse(call.arguments)).toEqual({ text: run.text });
        // a call's first fragment is read from a template the other streams' calls fill too
        const added = events.find((e) => e.type === 'response.output_item.added' && e.item.type === 'function_call')!.item;
        expect(added.call_id).toBe(call.call_id);
        callIds.push(call.call_id);
        const streamed = events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta).join('');
        expect(streamed).toBe(call.arguments);
      } else {
        expect(final.output[0].content[0].text).toBe(run.text);
        const streamed = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
        expect(streamed).toBe(run.text);
      }
    }
    // the simulator gives every call an id of its own: none read from another stream's
    expect(callIds).toHaveLength(8);
    expect(new Set(callIds).size).toBe(8);
    // each stream's usage is its own: the same turn alone counts the same
    for (const run of runs) {
      const together = (await run.events).at(-1)!.response.usage;
      const alone = (await turn(run.body)).at(-1)!.response.usage;
      expect(together).toEqual(alone);
    }
    const outputs = await Promise.all(runs.map(async (run) => (await run.events).at(-1)!.response.usage.output_tokens));
    expect(new Set(outputs).size).toBeGreaterThan(3);
  });
});
