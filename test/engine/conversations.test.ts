import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { validateResponse } from '../helpers/spec.js';

describe('conversation on create', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway();
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  it('carries a conversation across three turns; items listed and one deleted', async () => {
    const conversation = await client.conversations.create({ metadata: { topic: 'cats' }, items: [{ type: 'message', role: 'developer', content: 'Be brief.' }] });
    expect(conversation.id).toMatch(/^conv_/);

    // no script: the simulator answers "You said: …", so every turn's answer is traceable
    const first = await client.responses.create({ model: 'm', conversation: conversation.id, input: 'tell me about cats' });
    expect(first.output_text).toBe('You said: tell me about cats');
    expect((first as any).conversation).toEqual({ id: conversation.id });
    expect(validateResponse(first)).toEqual([]);

    const second = await client.responses.create({ model: 'm', conversation: { id: conversation.id }, input: 'and dogs?' });
    // the model saw the whole conversation: developer text, turn 1 and the new question
    const messages = tg.simulator.requests.at(-1)!.body.messages;
    expect(messages.map((m: any) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(messages[0].content).toBe('Be brief.');
    expect(messages[2].content).toBe('You said: tell me about cats');
    expect(second.output_text).toBe('You said: and dogs?');

    const third = await client.responses.create({ model: 'm', conversation: conversation.id, input: 'thanks' });
    expect(tg.simulator.requests.at(-1)!.body.messages).toHaveLength(6);
    expect(third.status).toBe('completed');

    const items: any[] = [];
    for await (const item of client.conversations.items.list(conversation.id, { order: 'asc', limit: 3 })) items.push(item);
    expect(items.map((i) => `${i.type}:${i.role}`)).toEqual([
      'message:developer',
      'message:user',
      'message:assistant',
      'message:user',
      'message:assistant',
      'message:user',
      'message:assistant',
    ]);
    expect(items[4].id).toBe(second.output[0].id);

    await client.conversations.items.delete(items[4].id, { conversation_id: conversation.id });
    const remaining: any[] = [];
    for await (const item of client.conversations.items.list(conversation.id, { order: 'asc' })) remaining.push(item);
    expect(remaining.map((i) => i.id)).not.toContain(items[4].id);
    expect(remaining).toHaveLength(6);

    // the next turn no longer sees the deleted answer
    await client.responses.create({ model: 'm', conversation: conversation.id, input: 'again' });
    const seen = tg.simulator.requests.at(-1)!.body.messages.map((m: any) => m.content);
    expect(seen).not.toContain('You said: and dogs?');
  });

  it('conversation and previous_response_id together are a 400; an unknown conversation a 404', async () => {
    await expect(client.responses.create({ model: 'm', input: 'x', conversation: 'conv_x', previous_response_id: 'resp_y' })).rejects.toMatchObject({ status: 400, param: 'conversation' });
    await expect(client.responses.create({ model: 'm', input: 'x', conversation: 'conv_missing' })).rejects.toMatchObject({ status: 404, code: 'conversation_not_found' });
  });

  it('a failed turn does not extend the conversation', async () => {
    const conversation = await client.conversations.create({});
    await client.responses.create({ model: 'm', conversation: conversation.id, input: scripted({ rounds: [{ text: 'a b c', close_after_chunks: 2 }] }) }).catch(() => undefined);
    const items: any[] = [];
    for await (const item of client.conversations.items.list(conversation.id)) items.push(item);
    expect(items).toHaveLength(0);
  });
});

describe('one turn at a time per conversation', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway();
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  it('a second turn while one runs is refused with conversation_locked; afterwards turns proceed', async () => {
    const conversation = await client.conversations.create({});
    const slow = client.responses.create({ model: 'm', conversation: conversation.id, input: scripted({ rounds: [{ text: 'slow answer', first_delay_ms: 400 }] }) });
    await new Promise((r) => setTimeout(r, 100));
    await expect(client.responses.create({ model: 'm', conversation: conversation.id, input: 'me too' })).rejects.toMatchObject({ status: 400, code: 'conversation_locked', param: 'conversation' });
    // token counting does not take the conversation
    await expect(client.responses.inputTokens.count({ model: 'm', conversation: conversation.id, input: 'count me' } as any)).resolves.toMatchObject({ object: 'response.input_tokens' });
    expect((await slow).output_text).toBe('slow answer');
    const next = await client.responses.create({ model: 'm', conversation: conversation.id, input: 'now me' });
    expect(next.status).toBe('completed');
    const items: any[] = [];
    for await (const item of client.conversations.items.list(conversation.id, { order: 'asc' })) items.push(item);
    expect(items).toHaveLength(4);
  });
});
