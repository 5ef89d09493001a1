import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPACTION_PROMPT, SUMMARY_MESSAGE_PREFIX } from '../src/engine/compaction.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

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

  it('counts input tokens', async () => {
    const counted = await client.responses.inputTokens.count({ model: 'm', input: 'hello there' });
    expect(counted.object).toBe('response.input_tokens');
    expect(counted.input_tokens).toBeGreaterThan(0);
  });
});
