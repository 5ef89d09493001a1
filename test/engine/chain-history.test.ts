// A long previous_response_id chain through the gateway (issue 16): the history of a continued
// turn comes from the store's chain cache and the upstream body from kept message bytes. What the
// model sees must be exactly what a gateway with nothing cached sends (a restart on the same data
// folder), with client function calls, their outputs, instructions and reasoning replay in the chain.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const weather = { type: 'function', name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } as const;

describe('a continued chain sends the model the same conversation, cached or not', () => {
  let tg: TestGateway;
  let client: OpenAI;
  const turns = 40;
  let tip = '';

  beforeAll(async () => {
    tg = await startTestGateway({ config: { codeInterpreter: { enabled: false } } });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
    let previous: string | undefined;
    for (let i = 0; i < turns; i++) {
      // every fifth turn the model calls the client's function, and the next turn answers it
      const callTurn = i % 5 === 3;
      const answersCall = i % 5 === 4;
      const last: any = previous ? await client.responses.retrieve(previous) : undefined;
      const input: any = answersCall
        ? [{ type: 'function_call_output', call_id: last.output.find((o: any) => o.type === 'function_call').call_id, output: `sunny, turn ${i}` }]
        : callTurn
          ? scripted({ rounds: [{ tool_calls: [{ name: 'get_weather', arguments: { city: `City ${i}` } }] }] })
          : `question ${i} with "quotes", unicode ✓ and a newline\n${'x'.repeat(200)}`;
      const response = await client.responses.create({ model: 'm', instructions: 'Be brief.', input, tools: [weather] as any, previous_response_id: previous });
      expect(response.status).toBe('completed');
      previous = response.id;
    }
    tip = previous!;
  }, 60_000);
  afterAll(() => tg.close());

  async function upstreamMessagesOf(previous: string, text: string): Promise<any[]> {
    const before = tg.simulator.requests.length;
    const response = await client.responses.create({ model: 'm', instructions: 'Be brief.', input: text, tools: [weather] as any, previous_response_id: previous, store: false });
    expect(response.status).toBe('completed');
    expect(tg.simulator.requests.length).toBe(before + 1);
    const body = tg.simulator.requests.at(-1)!.body;
    expect(typeof body).toBe('object'); // valid JSON arrived (a malformed body is recorded as its text)
    return body.messages;
  }

  it('warm (cached history, kept bytes) and cold (after a restart) send identical messages', async () => {
    const warm = await upstreamMessagesOf(tip, 'and now?');
    const warmAgain = await upstreamMessagesOf(tip, 'and now?');
    await tg.restart();
    // retries: a keep-alive connection of the global fetch pool to the old process may be dead
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 2 });
    const cold = await upstreamMessagesOf(tip, 'and now?');
    expect(warm).toEqual(cold);
    expect(warmAgain).toEqual(cold);
    // the whole chain is there: system, 40 turns (user/tool + assistant), the new question
    expect(cold[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(cold.at(-1)).toEqual({ role: 'user', content: 'and now?' });
    expect(cold.filter((m: any) => m.role === 'tool').map((m: any) => m.content)).toEqual([4, 9, 14, 19, 24, 29, 34, 39].map((i) => `sunny, turn ${i}`));
    // the scripted calls (the simulator also calls the offered function on its own in other turns)
    const cities = cold.flatMap((m: any) => (m.role === 'assistant' && m.tool_calls ? m.tool_calls.map((c: any) => JSON.parse(c.function.arguments).city) : []));
    expect([...new Set(cities)]).toEqual([3, 8, 13, 18, 23, 28, 33, 38].map((i) => `City ${i}`));
    expect(cold.filter((m: any) => m.role === 'user' && String(m.content).startsWith('question 0 with "quotes", unicode ✓'))).toHaveLength(1);
  });

  it('an output may answer a call far back in the chain; one that answers no call is refused', async () => {
    // the chain's first function call (turn 3), more than a hundred items before its tip
    let first: any;
    for (let id: string | null = tip; id; ) {
      const response: any = await client.responses.retrieve(id);
      first = response.output.find((o: any) => o.type === 'function_call') ?? first;
      id = response.previous_response_id;
    }
    expect(first.arguments).toContain('City 3');
    const late = await client.responses.create({ model: 'm', input: [{ type: 'function_call_output', call_id: first.call_id, output: 'late answer' }], tools: [weather] as any, previous_response_id: tip, store: false });
    expect(late.status).toBe('completed');
    const unknown = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: [{ type: 'function_call_output', call_id: 'call_nobody_made', output: '42' }], previous_response_id: tip }) });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as any).error).toMatchObject({ code: 'invalid_value', param: 'input[0]' });
  });

  it('two continuations of one tip (a fork) and a longer chain each get their own history', async () => {
    const forkA = await client.responses.create({ model: 'm', input: 'fork A', previous_response_id: tip, tools: [weather] as any });
    const forkB = await client.responses.create({ model: 'm', input: 'fork B', previous_response_id: tip, tools: [weather] as any });
    const fromA = await upstreamMessagesOf(forkA.id, 'after A');
    const fromB = await upstreamMessagesOf(forkB.id, 'after B');
    expect(fromA.filter((m: any) => m.role === 'user').map((m: any) => m.content).slice(-2)).toEqual(['fork A', 'after A']);
    expect(fromB.filter((m: any) => m.role === 'user').map((m: any) => m.content).slice(-2)).toEqual(['fork B', 'after B']);
    expect(fromA.slice(0, -3)).toEqual(fromB.slice(0, -3));
  });

  it('deleting a response in the middle of the chain is seen by the next continued turn', async () => {
    const before = await upstreamMessagesOf(tip, 'count');
    const chainIds: string[] = [];
    for (let id: string | null = tip; id; id = ((await client.responses.retrieve(id)) as any).previous_response_id) chainIds.push(id);
    await client.responses.delete(chainIds[chainIds.length - 2]); // the second turn
    const after = await upstreamMessagesOf(tip, 'count');
    // the first two turns are gone: the chain now starts after the deleted response
    expect(after.length).toBeLessThan(before.length);
    expect(after.some((m: any) => m.role === 'user' && String(m.content).startsWith('question 0 '))).toBe(false);
  });
});
