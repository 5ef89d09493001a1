// chatRequestBody (src/upstream/chat-body.ts) must send exactly JSON.stringify(request), whatever
// mix of shared (frozen) and fresh messages a request holds, and whatever was kept before.
import { describe, expect, it } from 'vitest';
import { encodeChatRequest, type ChatRequest } from '../../src/protocol/chat.js';
import type { ModelItem } from '../../src/protocol/model.js';
import { chatRequestBody } from '../../src/upstream/chat-body.js';

const bytesOf = (body: string | Buffer[]): string => (typeof body === 'string' ? body : Buffer.concat(body).toString('utf8'));

/** History items as the engine hands them over: frozen, the same objects every turn. */
function history(turns: number, tag = ''): ModelItem[] {
  const items: ModelItem[] = [];
  for (let i = 0; i < turns; i++) {
    items.push({ type: 'message', role: 'user', content: [{ type: 'text', text: `q${tag}${i} "quoted" ✓\n` }] });
    if (i % 4 === 2) {
      items.push({ type: 'function_call', callId: `call_${tag}${i}`, name: 'f', arguments: `{"i":${i}}` });
      items.push({ type: 'function_call_output', callId: `call_${tag}${i}`, output: `out ${i}` });
    }
    items.push({ type: 'message', role: 'assistant', content: [{ type: 'text', text: `a${tag}${i}` }] });
  }
  for (const item of items) {
    if (item.type === 'message') for (const part of item.content) Object.freeze(part);
    if (item.type === 'message') Object.freeze(item.content);
    Object.freeze(item);
  }
  return items;
}

function request(items: ModelItem[]): ChatRequest {
  return encodeChatRequest({ model: 'm "x"', items, tools: [{ name: 'f', parameters: { type: 'object' } }], temperature: 0.5 });
}

describe('chatRequestBody', () => {
  it('a short conversation is one JSON.stringify', () => {
    const req = request([{ type: 'message', role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
    expect(chatRequestBody(req)).toBe(JSON.stringify(req));
  });

  it('a long shared history is sent in a few chunks that are exactly JSON.stringify of the request', () => {
    const shared = history(60);
    const system: ModelItem = { type: 'message', role: 'system', content: [{ type: 'text', text: 'sys' }] };
    const fresh: ModelItem = { type: 'message', role: 'user', content: [{ type: 'text', text: 'now?' }] };
    const req = request([system, ...shared, fresh]);
    const body = chatRequestBody(req);
    expect(Array.isArray(body)).toBe(true);
    expect(body.length).toBeLessThan(6);
    expect(bytesOf(body)).toBe(JSON.stringify(req));
  });

  it('the next turns reuse the kept block, and still send exactly the request', () => {
    const shared = history(80);
    const first = request([...shared.slice(0, 100)]);
    const firstBody = chatRequestBody(first) as Buffer[];
    expect(bytesOf(firstBody)).toBe(JSON.stringify(first));
    // one turn later: the same history plus a few items; the big block is the same Buffer
    const second = request([...shared.slice(0, 104), { type: 'message', role: 'user', content: [{ type: 'text', text: 'next' }] }]);
    const secondBody = chatRequestBody(second) as Buffer[];
    expect(bytesOf(secondBody)).toBe(JSON.stringify(second));
    expect(secondBody.some((chunk) => firstBody.includes(chunk) && chunk.length > 1000)).toBe(true);
    // a shorter continuation (a fork from earlier in the chain) does not use a block longer than it
    const fork = request([...shared.slice(0, 40), { type: 'message', role: 'user', content: [{ type: 'text', text: 'fork' }] }]);
    expect(bytesOf(chatRequestBody(fork))).toBe(JSON.stringify(fork));
    // the same first message followed by other messages (another history) is not mistaken for it
    const other = history(80, 'b');
    const mixed = request([shared[0], ...other.slice(1, 100)]);
    expect(bytesOf(chatRequestBody(mixed))).toBe(JSON.stringify(mixed));
  });

  it('an assistant message kept for its item is not changed when a later call joins its turn', () => {
    const shared = history(20);
    const assistant = shared.findLast((item) => item.type === 'message' && item.role === 'assistant')!;
    const call: ModelItem = { type: 'function_call', callId: 'c1', name: 'f', arguments: '{}' };
    const req = request([...shared, call, { type: 'function_call_output', callId: 'c1', output: 'r' }]);
    const joined = req.messages.find((m) => m.role === 'assistant' && m.tool_calls?.[0]?.id === 'c1')!;
    expect(joined.content).toBe((assistant as any).content[0].text);
    // the shared message for that item is untouched: without the call, it has no tool_calls
    const again = request(shared);
    expect(again.messages.at(-1)).toEqual({ role: 'assistant', content: (assistant as any).content[0].text });
    expect(bytesOf(chatRequestBody(req))).toBe(JSON.stringify(req));
  });
});
