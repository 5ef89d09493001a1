// Long request text with wide characters (typographic quotes, dashes, emoji, CJK: a Codex or
// Claude Code prompt) takes ICU's conversion at the edges (src/util/utf8.ts): what the upstream
// receives and what every client surface gets back must be the same text, byte for byte.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const instructions = 'You are “Switchyard’s” test — follow → these 【rules†】. '.repeat(120).trim();
const input = 'Summarise: café, naïve, 中文字符, emoji 😀🚀, math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 – done. '.repeat(80).trim();

describe('long text with wide characters, end to end', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway();
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  /** The messages of the last upstream request. */
  const upstreamMessages = () => (tg.simulator.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages;
  const textOf = (content: unknown) => (typeof content === 'string' ? content : (content as { text: string }[]).map((part) => part.text).join(''));

  it('blocking: the upstream gets the text exactly, the Response echoes it with a right content-length', async () => {
    const res = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', instructions, input, store: false }),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(res.status).toBe(200);
    expect(Number(res.headers.get('content-length'))).toBe(bytes.length);
    const response = JSON.parse(bytes.toString('utf8'));
    expect(response.instructions).toBe(instructions);
    expect(response.output[0].content[0].text).toBe(`You said: ${input}`);
    const messages = upstreamMessages();
    expect(textOf(messages[0].content)).toBe(instructions);
    expect(textOf(messages.at(-1)!.content)).toBe(input);
  });

  it('streaming through the OpenAI SDK: created and completed carry the text exactly', async () => {
    const stream = await client.responses.create({ model: 'm', instructions, input, store: false, stream: true });
    const events = [];
    for await (const event of stream) events.push(event);
    const created = events.find((e) => e.type === 'response.created');
    const completed = events.find((e) => e.type === 'response.completed');
    expect(created?.type === 'response.created' && created.response.instructions).toBe(instructions);
    const message = completed?.type === 'response.completed' ? completed.response.output[0] : undefined;
    expect(message?.type === 'message' && message.content[0].type === 'output_text' && message.content[0].text).toBe(`You said: ${input}`);
    const deltas = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(deltas).toBe(`You said: ${input}`);
  });

  it('a long body with invalid UTF-8 reads as Node reads it (U+FFFD), not as an error', async () => {
    const json = Buffer.from(JSON.stringify({ model: 'm', input: `${input}BROKEN`, store: false }));
    const at = json.indexOf('BROKEN');
    json[at] = 0xff; // not a UTF-8 byte
    json[at + 1] = 0xc3; // a lead byte without its continuation
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: json });
    const response = (await res.json()) as { output: { content: { text: string }[] }[] };
    expect(res.status).toBe(200);
    expect(response.output[0].content[0].text).toBe(`You said: ${input}\uFFFD\uFFFDOKEN`);
  });

  it('a stored chain continued turn after turn: the next turns send the history exactly (kept message bytes)', async () => {
    // from 8 shared messages on, the history goes upstream as kept bytes (chat-body.ts): six turns make 12
    let previous: string | undefined;
    const inputs: string[] = [];
    for (let turn = 0; turn < 6; turn++) {
      const text = `Turn ${turn}: ${input}`;
      inputs.push(text);
      const response = await client.responses.create({ model: 'm', instructions, input: text, store: true, ...(previous ? { previous_response_id: previous } : {}) });
      expect(response.output_text).toBe(`You said: ${text}`);
      previous = response.id;
    }
    const messages = upstreamMessages();
    expect(textOf(messages[0].content)).toBe(instructions);
    const history = messages.slice(1).map((message) => [message.role, textOf(message.content)]);
    expect(history).toEqual(inputs.flatMap((text, i) => (i < inputs.length - 1 ? [['user', text], ['assistant', `You said: ${text}`]] : [['user', text]])));
    // and the stored response reads back exactly
    const stored = await client.responses.retrieve(previous!);
    expect(stored.instructions).toBe(instructions);
    expect(stored.output_text).toBe(`You said: ${inputs.at(-1)}`);
  });

  it('WebSocket mode: text frames, the text exactly, both ways', async () => {
    const ws = new WebSocket(`${tg.gateway.url.replace('http', 'ws')}/v1/responses`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const frames: { event: any; binary: boolean }[] = [];
    const done = new Promise<void>((resolve) => {
      ws.on('message', (data, isBinary) => {
        const event = JSON.parse(String(data));
        frames.push({ event, binary: isBinary });
        if (event.type === 'response.completed' || event.type === 'error') resolve();
      });
    });
    ws.send(JSON.stringify({ type: 'response.create', model: 'm', instructions, input, store: false }));
    await done;
    ws.close();
    expect(frames.every((frame) => !frame.binary)).toBe(true);
    expect(frames[0].event.type).toBe('response.created');
    expect(frames[0].event.response.instructions).toBe(instructions);
    expect(frames.at(-1)!.event.response.output[0].content[0].text).toBe(`You said: ${input}`);
    expect(textOf(upstreamMessages().at(-1)!.content)).toBe(input);
  });
});
