// chatRequestBody (src/upstream/chat-body.ts) must send exactly JSON.stringify(request), whatever
// mix of shared (frozen) and fresh messages a request holds, whatever tools it declares, and
// whatever was kept before.
import { describe, expect, it, vi } from 'vitest';
import { encodeChatRequest, type ChatRequest } from '../../src/protocol/chat.js';
import type { ModelFunction, ModelItem } from '../../src/protocol/model.js';
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
  it('a short conversation without tools is one JSON.stringify', () => {
    const req = encodeChatRequest({ model: 'm', items: [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [] });
    expect(chatRequestBody(req)).toBe(JSON.stringify(req));
  });

  it('a short conversation with tools is exactly JSON.stringify, the tools kept as their own chunk', () => {
    const req = request([{ type: 'message', role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
    const body = chatRequestBody(req);
    expect(bytesOf(body)).toBe(JSON.stringify(req));
    expect((body as Buffer[]).some((chunk) => chunk.toString() === JSON.stringify(req.tools))).toBe(true);
  });

  it('the same tools from a new request (new objects, same JSON) reuse the kept bytes; changed tools do not', () => {
    const tools = (tag: string, order: 'ab' | 'ba' = 'ab'): ModelFunction[] => [
      { name: `t_${tag}`, description: 'Runs “it” ✓', parameters: { type: 'object', properties: order === 'ab' ? { a: { type: 'string' }, b: { enum: [1, 2.5, null, true] } } : { b: { enum: [1, 2.5, null, true] }, a: { type: 'string' } } } },
      { name: 'g', parameters: { type: 'object' }, strict: true },
    ];
    const req = (list: ModelFunction[]) => encodeChatRequest({ model: 'm', items: [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: list });
    const toolsChunk = (r: ChatRequest) => (chatRequestBody(r) as Buffer[]).find((chunk) => chunk.toString() === JSON.stringify(r.tools));
    const first = req(tools('keep'));
    const kept = toolsChunk(first);
    expect(kept).toBeDefined();
    const again = req(tools('keep'));
    expect(toolsChunk(again)).toBe(kept);
    expect(bytesOf(chatRequestBody(again))).toBe(JSON.stringify(again));
    // the same names with other content, key order included, are serialised again
    for (const changed of [req(tools('keep', 'ba')), req(tools('keep').map((fn, i) => (i === 1 ? { ...fn, strict: false } : fn)))]) {
      expect(bytesOf(chatRequestBody(changed))).toBe(JSON.stringify(changed));
      expect(toolsChunk(changed)).not.toBe(kept);
    }
    // what JSON.stringify leaves out or changes is not mistaken for the kept content
    const odd = req(tools('keep'));
    (odd.tools![0].function as Record<string, unknown>).skipped = undefined;
    expect(bytesOf(chatRequestBody(odd))).toBe(JSON.stringify(odd));
    const nonFinite = req(tools('keep'));
    (nonFinite.tools![1].function.parameters as Record<string, unknown>).max = Infinity;
    expect(bytesOf(chatRequestBody(nonFinite))).toBe(JSON.stringify(nonFinite));
  });

  it('a long system prompt resent by a new request (a coding agent) reuses its kept bytes; a changed one does not', () => {
    const prompt = (ending: string) => `You are a coding agent — follow “these” rules → always. ${'Be careful with files. '.repeat(300)}${ending}`;
    const req = (text: string, question: string) =>
      request([
        { type: 'message', role: 'system', content: [{ type: 'text', text }] },
        { type: 'message', role: 'user', content: [{ type: 'text', text: question }] },
      ]);
    /** Whether sending `r` serialised its system prompt (rather than reusing kept bytes). */
    const serialisesPrompt = (r: ChatRequest) => {
      const stringify = vi.spyOn(JSON, 'stringify');
      let body: string | Buffer[];
      let serialised: boolean;
      try {
        body = chatRequestBody(r);
        serialised = stringify.mock.calls.some(([value]) => value === r.messages[0] || (value as ChatRequest)?.messages?.[0] === r.messages[0]);
      } finally {
        stringify.mockRestore();
      }
      expect(bytesOf(body)).toBe(JSON.stringify(r));
      return serialised;
    };
    expect(serialisesPrompt(req(prompt('End.'), 'first question'))).toBe(true);
    // a new request: new objects, the same prompt, another question
    expect(serialisesPrompt(req(prompt('End.'), 'second “question”'))).toBe(false);
    // the same length and opening, another ending: serialised again, never mistaken for the kept one
    expect(serialisesPrompt(req(prompt('Fin.'), 'third question'))).toBe(true);
    // a short system prompt is serialised with the request every time
    expect(serialisesPrompt(req('Be brief.', 'q'))).toBe(true);
    expect(serialisesPrompt(req('Be brief.', 'q2'))).toBe(true);
  });

  it('the last long system prompt is found again without a lookup, and only for the same role and text alone', () => {
    const text = `You are a coding agent — “careful”. ${'Read before you write. '.repeat(300)}`;
    // as a chat dialect sends it: the role as the template wants it
    const req = (role: 'system' | 'developer', question: string): ChatRequest => {
      const encoded = request([
        { type: 'message', role: 'system', content: [{ type: 'text', text }] },
        { type: 'message', role: 'user', content: [{ type: 'text', text: question }] },
      ]);
      return { ...encoded, messages: [{ role, content: text }, ...encoded.messages.slice(1)] };
    };
    /** Whether sending `r` looked its prompt up among the kept ones (its key is made from the text's opening). */
    const looksUp = (r: ChatRequest) => {
      const slice = vi.spyOn(String.prototype, 'slice');
      let body: string | Buffer[];
      let lookedUp: boolean;
      try {
        body = chatRequestBody(r);
        lookedUp = slice.mock.contexts.some((context) => String(context) === text);
      } finally {
        slice.mockRestore();
      }
      expect(bytesOf(body)).toBe(JSON.stringify(r));
      return lookedUp;
    };
    expect(looksUp(req('system', 'q1'))).toBe(true);
    expect(looksUp(req('system', 'q2'))).toBe(false);
    // the same text under another role: other bytes
    expect(looksUp(req('developer', 'q3'))).toBe(true);
    expect(looksUp(req('developer', 'q4'))).toBe(false);
    // a message with more than its role and text (a name) is never the last one's bytes
    const named = req('developer', 'q5');
    (named.messages[0] as { name?: string }).name = 'rules';
    expect(looksUp(named)).toBe(true);
    // nor does it become the last one: the plain message after it gets its own bytes
    expect(looksUp(req('developer', 'q6'))).toBe(false);
  });

  it('a long system prompt with fresh and shared messages around it is still exactly JSON.stringify', () => {
    const system: ModelItem = { type: 'message', role: 'system', content: [{ type: 'text', text: `Rules — “all” of them. ${'Keep going. '.repeat(500)}` }] };
    const fresh = (tag: string): ModelItem[] => [
      { type: 'message', role: 'user', content: [{ type: 'text', text: `${tag}: “wide” — 中文 😀 "quoted" \\ \n` }] },
      { type: 'function_call', callId: `call_${tag}`, name: 'f', arguments: '{"cmd":"ls"}' },
      { type: 'function_call_output', callId: `call_${tag}`, output: `out ${tag}` },
      { type: 'message', role: 'assistant', content: [{ type: 'text', text: `done ${tag}` }] },
    ];
    for (const items of [
      [system, ...fresh('a'), ...fresh('b')],
      [...fresh('first'), system, ...fresh('c')],
      [system, ...history(3, 'h'), ...fresh('d'), ...history(12, 'i'), ...fresh('e')],
      [system],
    ]) {
      const req = request(items);
      expect(bytesOf(chatRequestBody(req))).toBe(JSON.stringify(req));
      const noTools = encodeChatRequest({ model: 'm', items, tools: [] });
      expect(bytesOf(chatRequestBody(noTools))).toBe(JSON.stringify(noTools));
    }
  });

  it('a "tools":[] elsewhere in the request (a response schema) falls back to one JSON.stringify', () => {
    const req = encodeChatRequest({ model: 'm', items: [...history(10, 'rf')], tools: [{ name: 'f' }], responseFormat: { type: 'json_schema', name: 's', schema: { type: 'object', properties: { tools: [] } as never } } });
    expect(bytesOf(chatRequestBody(req))).toBe(JSON.stringify(req));
    const short = { ...req, messages: req.messages.slice(0, 1) };
    expect(chatRequestBody(short)).toBe(JSON.stringify(short));
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

  it('a conversation growing turn by turn keeps a few segments, copies each message a few times, and a regenerated turn reuses its prefix', () => {
    const shared = history(700, 'g');
    const seen = new Set<Buffer>();
    let copied = 0;
    let bodies: Buffer[] = [];
    for (let end = 40; end <= shared.length; end += 3) {
      const req = request([...shared.slice(0, end), { type: 'message', role: 'user', content: [{ type: 'text', text: `turn ${end}` }] }]);
      bodies = chatRequestBody(req) as Buffer[];
      expect(bytesOf(bodies)).toBe(JSON.stringify(req));
      for (const chunk of bodies) {
        if (chunk.length > 1000 && !seen.has(chunk)) copied += chunk.length;
        seen.add(chunk);
      }
    }
    const whole = Buffer.byteLength(JSON.stringify(request(shared).messages));
    // a handful of chunks, not one per kept segment of 32 messages …
    expect(bodies.length).toBeLessThan(16);
    // … and the history's bytes copied about log2(messages / 32) times, not once per growth (≈ 50 ×)
    expect(copied / whole).toBeLessThan(8);
    // a turn continued again from a few turns back (a regenerated answer) sends the segments its
    // prefix holds as they are, and the conversation goes on from either branch
    const fork = request([...shared.slice(0, shared.length - 6), { type: 'message', role: 'user', content: [{ type: 'text', text: 'fork' }] }]);
    const forkBody = chatRequestBody(fork) as Buffer[];
    expect(bytesOf(forkBody)).toBe(JSON.stringify(fork));
    expect(forkBody.filter((chunk) => chunk.length > 1000 && bodies.includes(chunk)).length).toBeGreaterThan(0);
    const back = request([...shared, { type: 'message', role: 'user', content: [{ type: 'text', text: 'back' }] }]);
    expect(bytesOf(chatRequestBody(back))).toBe(JSON.stringify(back));
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
