import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPACTION_PROMPT, SUMMARY_MESSAGE_PREFIX } from '../../src/engine/compaction.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const history = Array.from({ length: 12 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `message number ${i} with some words in it` })) as any[];

describe('compaction through the gateway', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway();
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  it('POST /v1/responses/compact → output fed back as input → the next turn answers from the summary', async () => {
    const compacted = await client.responses.compact({ model: 'm', input: [...history, { role: 'user', content: 'what did we discuss?' }] });
    expect(compacted.object).toBe('response.compaction');
    expect(compacted.output[0].type).toBe('compaction');
    const summaryRequest = tg.simulator.requests.at(-1)!.body;
    expect(summaryRequest.messages.at(-1).content).toBe(COMPACTION_PROMPT);

    const next = await client.responses.create({ model: 'm', input: compacted.output as any });
    expect(next.status).toBe('completed');
    const messages = tg.simulator.requests.at(-1)!.body.messages;
    expect(messages).toHaveLength(2);
    expect(messages[0].content.startsWith(SUMMARY_MESSAGE_PREFIX)).toBe(true);
    expect(messages[1]).toEqual({ role: 'user', content: 'what did we discuss?' });
  });

  it('context_management compacts automatically past the threshold; the chain keeps the summary', async () => {
    const first = await client.responses.create({
      model: 'm',
      input: [...history, { role: 'user', content: 'continue' }],
      context_management: [{ type: 'compaction', compact_threshold: 50 }],
    } as any);
    expect(first.output[0].type).toBe('compaction');
    expect(first.output.at(-1)!.type).toBe('message');
    const sent = tg.simulator.requests.at(-1)!.body.messages;
    expect(sent[0].content.startsWith(SUMMARY_MESSAGE_PREFIX)).toBe(true);
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'continue' });

    // the next turn through previous_response_id is rebuilt from the summary, not the 12 messages
    await client.responses.create({ model: 'm', previous_response_id: first.id, input: 'and then?' });
    const rebuilt = tg.simulator.requests.at(-1)!.body.messages;
    expect(rebuilt.map((m: any) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(rebuilt.some((m: any) => String(m.content).includes('message number 3'))).toBe(false);
  });

  it('a compacted chain keeps its user message on later turns and does not re-summarize a lone summary', async () => {
    const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }] as any;
    const cm = [{ type: 'compaction', compact_threshold: 1 }];
    const r1 = await client.responses.create({ model: 'm', input: 'first message U1' });
    const r2 = await client.responses.create({ model: 'm', previous_response_id: r1.id, input: 'U2: call get_weather with {"city": "Oslo"}', tools, context_management: cm } as any);
    expect(r2.output.map((i) => i.type)).toEqual(['compaction', 'function_call']);
    const call = r2.output.find((i) => i.type === 'function_call') as any;
    const r3 = await client.responses.create({ model: 'm', previous_response_id: r2.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"t":4}' }], tools, context_management: cm } as any);
    // only the earlier summary precedes the last user message: nothing new to summarize
    expect(r3.output.map((i) => i.type)).toEqual(['message']);
    await client.responses.create({ model: 'm', previous_response_id: r3.id, input: 'U4 next question', tools });
    const roles = tg.simulator.requests.at(-1)!.body.messages.map((m: any) => `${m.role}:${String(m.content ?? '').slice(0, 3)}`);
    expect(roles).toEqual(['system:Sum', 'user:U2:', 'assistant:', 'tool:{"t', 'assistant:The', 'user:U4 ']);
  });

  it('counts input tokens', async () => {
    const counted = await client.responses.inputTokens.count({ model: 'm', input: 'hello there' });
    expect(counted.object).toBe('response.input_tokens');
    expect(counted.input_tokens).toBeGreaterThan(0);
  });
});
