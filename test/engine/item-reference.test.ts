import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { inProcessFetch } from '../helpers/in-process.js';

// issue 9 #4: item_reference input items are resolved from the store, or rejected with a 400.
// In process (test/helpers/in-process.ts): no socket between the SDK and the gateway.
describe('item_reference', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway();
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0, fetch: inProcessFetch(tg.gateway) });
  });
  afterAll(() => tg?.close());

  const lastMessages = () => tg.simulator.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown }>;

  it('a reference to a stored output or input item is replaced by the item as stored', async () => {
    const first = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'the first answer' }] }, 'first question') });
    const [question] = (await client.responses.inputItems.list(first.id)).data;
    const answer = first.output[0];

    const second = await client.responses.create({
      model: 'm',
      input: [
        { type: 'item_reference', id: question.id },
        { type: 'item_reference', id: answer.id! },
        { role: 'user', content: scripted({ rounds: [{ text: 'ok' }] }, 'and now?') },
      ],
    } as any);
    expect(second.output_text).toBe('ok');
    const messages = lastMessages();
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(JSON.stringify(messages[0].content)).toContain('first question');
    expect(JSON.stringify(messages[1].content)).toContain('the first answer');
    // stored as the items they name
    const stored = (await client.responses.inputItems.list(second.id, { order: 'asc' })).data;
    expect(stored[0]).toEqual(question);
    expect(stored[1]).toEqual(answer);
  });

  it('an unknown id is a 400 naming input[n].id', async () => {
    const err = await client.responses
      .create({ model: 'm', input: [{ role: 'user', content: 'hi' }, { type: 'item_reference', id: 'msg_doesnotexist' }] } as any)
      .then(
        () => expect.unreachable('expected a 400'),
        (e: unknown) => e as APIError,
      );
    expect({ status: err.status, param: err.param, code: err.code }).toEqual({ status: 400, param: 'input[1].id', code: 'item_not_found' });
    expect(err.message).toContain('msg_doesnotexist');
  });

  it('a reference resolves from the previous response chain too', async () => {
    const first = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'remember me' }] }, 'q') });
    await client.responses.create({ model: 'm', previous_response_id: first.id, input: [{ type: 'item_reference', id: first.output[0].id! }, { role: 'user', content: 'again' }] } as any);
    const assistants = lastMessages().filter((m) => m.role === 'assistant');
    expect(assistants.map((m) => JSON.stringify(m.content))).toEqual([expect.stringContaining('remember me'), expect.stringContaining('remember me')]);
  });
});
