import { describe, expect, it } from 'vitest';
import { encodeChatMessages } from '../../src/protocol/chat.js';
import type { ModelItem } from '../../src/protocol/model.js';
import { deepFreeze } from '../../src/util/freeze.js';

// The shared history of a conversation reaches the encoder as the same frozen items turn after
// turn (engine/conversation.ts); its messages are kept and only what is new is encoded. These
// tests check that the kept path gives exactly what encoding everything afresh gives.

/** A small deterministic generator (tests must replay the same conversations). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const text = (t: string) => [{ type: 'text' as const, text: t }];

/** Frozen items whose `type` counts its reads: an item the encoder looks at is counted. */
function readCounter(): { counted: (item: ModelItem) => ModelItem; reads: { count: number; reset(): void } } {
  const reads = {
    count: 0,
    reset() {
      reads.count = 0;
    },
  };
  const counted = (item: ModelItem): ModelItem => {
    const { type, ...rest } = item;
    return deepFreeze(Object.defineProperty({ ...rest }, 'type', { enumerable: true, get: () => (reads.count++, type) })) as ModelItem;
  };
  return { counted, reads };
}

/** One turn's items: an input and the model's output, in the shapes the engine produces. */
function turnItems(next: () => number, turn: number): { input: ModelItem[]; output: ModelItem[] } {
  const pick = <T,>(xs: T[]): T => xs[Math.floor(next() * xs.length)];
  const input: ModelItem[] = [];
  const kind = pick(['user', 'user', 'user', 'developer', 'outputs', 'system+user']);
  if (kind === 'developer') input.push({ type: 'message', role: 'developer', content: text(`rule ${turn}`) });
  if (kind === 'system+user') input.push({ type: 'message', role: 'system', content: text(`sys ${turn}`) });
  if (kind === 'outputs') {
    // answers to calls of the turn before, in any order
    for (let i = pick([1, 2, 3]); i > 0; i--) input.push({ type: 'function_call_output', callId: `call_${turn - 1}_${i}`, output: `out ${i}` });
  }
  if (kind !== 'outputs' || next() < 0.5) input.push({ type: 'message', role: 'user', content: text(`question ${turn}`) });
  const output: ModelItem[] = [];
  if (next() < 0.4) output.push({ type: 'reasoning', text: `thinking ${turn}` });
  if (next() < 0.6) output.push({ type: 'message', role: 'assistant', content: text(`answer ${turn}`) });
  const calls = pick([0, 0, 1, 2, 3]);
  for (let i = 1; i <= calls; i++) output.push({ type: 'function_call', callId: `call_${turn}_${i}`, name: `tool_${i}`, arguments: `{"n":${i}}` });
  if (next() < 0.2) output.push({ type: 'reasoning', text: `trailing ${turn}` });
  return { input, output };
}

/** Encoding with nothing kept: the same items, unfrozen. */
const afresh = (items: readonly ModelItem[], replay: 'none' | 'reasoning') => encodeChatMessages(structuredClone(items) as ModelItem[], replay);

describe('encodeChatMessages with a kept shared history', () => {
  it('gives exactly the fresh encoding over long conversations, continued and forked', () => {
    // this turn's input unfrozen (a chain's turn), or — half of the seeds, with either replay — frozen too (a history resent whole)
    for (let seed = 1; seed <= 16; seed++) {
      const next = random(seed);
      const replay = seed % 2 === 0 ? 'reasoning' : 'none';
      // histories by turn: a fork continues from an older one, as previous_response_id allows
      // a stored conversation may begin with a system message of its own, or with the user's
      const first: ModelItem = seed % 3 === 0 ? { type: 'message', role: 'system', content: text('You are terse.') } : { type: 'message', role: 'user', content: text('Hello.') };
      const histories: ModelItem[][] = [[deepFreeze(first) as ModelItem]];
      for (let turn = 1; turn <= 60; turn++) {
        const from = next() < 0.2 ? histories[Math.floor(next() * histories.length)] : histories[histories.length - 1];
        const { input: sent, output } = turnItems(next, turn);
        const input = seed % 4 < 2 ? sent.map((item) => deepFreeze(structuredClone(item)) as ModelItem) : sent;
        // what the engine puts before the history: the request's instructions (never frozen)
        const head: ModelItem[] = [];
        const lead = next();
        if (lead < 0.5) head.push({ type: 'message', role: 'system', content: text('instructions') });
        if (lead < 0.1) head.push({ type: 'message', role: 'developer', content: text('more') });
        if (lead > 0.9) head.push({ type: 'reasoning', text: 'a stray thought' });
        const items = [...head, ...from, ...input];
        expect(JSON.stringify(encodeChatMessages(items, replay)), `seed ${seed}, turn ${turn}`).toBe(JSON.stringify(afresh(items, replay)));
        // the same turn asked again (a retry, another client on the same response)
        expect(JSON.stringify(encodeChatMessages(items, replay))).toBe(JSON.stringify(afresh(items, replay)));
        // stored: the next turn sees this one's input and output as frozen history
        histories.push([...from, ...[...input, ...output].map((item) => deepFreeze(structuredClone(item)) as ModelItem)]);
      }
    }
  });

  it('encodes only the new items of a continued turn and returns the kept messages of the history', () => {
    const history: ModelItem[] = [];
    for (let turn = 0; turn < 40; turn++) {
      history.push(deepFreeze({ type: 'message', role: 'user', content: text(`q${turn}`) }) as ModelItem);
      history.push(deepFreeze({ type: 'message', role: 'assistant', content: text(`a${turn}`) }) as ModelItem);
    }
    const first = encodeChatMessages([...history, { type: 'message', role: 'user', content: text('next') }], 'none');
    const second = encodeChatMessages([...history, { type: 'message', role: 'user', content: text('other') }], 'none');
    expect(second).toHaveLength(81);
    // the history's messages are the same objects: the transport keeps their bytes
    for (let i = 0; i < 80; i++) expect(second[i]).toBe(first[i]);
    expect(second[80]).toEqual({ role: 'user', content: 'other' });
    // the result is the caller's own array
    expect(Object.isFrozen(second)).toBe(false);
    // the same with instructions in front (a new system message every turn, never frozen)
    const instructed = encodeChatMessages([{ type: 'message', role: 'system', content: text('Be brief.') }, ...history, { type: 'message', role: 'user', content: text('third') }], 'none');
    expect(instructed[0]).toEqual({ role: 'system', content: 'Be brief.' });
    for (let i = 0; i < 80; i++) expect(instructed[i + 1]).toBe(first[i]);
  });

  it("an agent's conversation, every turn answering the last turn's calls, encodes only what is new", () => {
    const { counted, reads } = readCounter();
    const history: ModelItem[] = [counted({ type: 'message', role: 'user', content: text('start') })];
    const turn = (n: number) => [
      { type: 'function_call_output' as const, callId: `call_${n - 1}`, output: `result ${n - 1}` },
      { type: 'message' as const, role: 'user' as const, content: text(`go on ${n}`) },
    ];
    for (let n = 1; n <= 300; n++) {
      // the last turn's call, answered by this turn's input (a tool result, then the user's words)
      history.push(counted({ type: 'function_call', callId: `call_${n - 1}`, name: 'shell', arguments: `{"n":${n - 1}}` }));
      const items = [...history, ...turn(n)];
      reads.reset();
      const messages = encodeChatMessages(items, 'none');
      // after the first turns (the kept history is made once), a turn looks at a few items, not at all of them
      if (n > 20) expect(reads.count, `turn ${n}`).toBeLessThan(40);
      expect(JSON.stringify(messages)).toBe(JSON.stringify(afresh(items, 'none')));
      history.push(...turn(n).map(counted));
    }
  });

  it('a history resent whole (every item shared, this turn\'s input too) encodes only what is new', () => {
    // what a client that resends everything gets from the engine: the whole input held, frozen
    // (engine/held-history.ts), ending with this turn's tool result and the user's words
    const { counted, reads } = readCounter();
    for (const replay of ['none', 'reasoning'] as const) {
      const items: ModelItem[] = [counted({ type: 'message', role: 'user', content: text('start') })];
      for (let n = 1; n <= 300; n++) {
        // the model's answer to the user (a thought now and then, a call), its result, the user again
        if (n % 3 === 0) items.push(counted({ type: 'reasoning', text: `thinking ${n}` }));
        items.push(counted({ type: 'function_call', callId: `call_${n}`, name: 'shell', arguments: `{"n":${n}}` }));
        items.push(counted({ type: 'function_call_output', callId: `call_${n}`, output: `result ${n}` }));
        items.push(counted({ type: 'message', role: 'user', content: text(`go on ${n}`) }));
        reads.reset();
        const messages = encodeChatMessages(items, replay);
        if (n > 20) expect(reads.count, `${replay}, turn ${n}`).toBeLessThan(40);
        expect(JSON.stringify(messages)).toBe(JSON.stringify(afresh(items, replay)));
      }
    }
  });

  it("an agent's tool loop (tool results in, thoughts and calls out, no user message) encodes only what is new", () => {
    const { counted, reads } = readCounter();
    for (const replay of ['none', 'reasoning'] as const) {
      const history: ModelItem[] = [counted({ type: 'message', role: 'user', content: text('fix the bug') })];
      for (let n = 1; n <= 200; n++) {
        // the model's last turn: a thought, then two calls
        history.push(counted({ type: 'reasoning', text: `thinking ${n}` }));
        history.push(counted({ type: 'function_call', callId: `a${n}`, name: 'shell', arguments: `{"n":${n}}` }));
        history.push(counted({ type: 'function_call', callId: `b${n}`, name: 'read', arguments: `{"n":${n}}` }));
        // this turn's input: their results, in another order
        const input: ModelItem[] = [
          { type: 'function_call_output', callId: `b${n}`, output: `read ${n}` },
          { type: 'function_call_output', callId: `a${n}`, output: `ran ${n}` },
        ];
        const items = [...history, ...input];
        reads.reset();
        const messages = encodeChatMessages(items, replay);
        if (n > 20) expect(reads.count, `${replay}, turn ${n}`).toBeLessThan(40);
        expect(JSON.stringify(messages)).toBe(JSON.stringify(afresh(items, replay)));
        history.push(...input.map(counted));
      }
    }
  });

  it('does not reuse a history whose last assistant message a new call would join', () => {
    const history: ModelItem[] = [];
    for (let turn = 0; turn < 20; turn++) {
      history.push(deepFreeze({ type: 'message', role: 'user', content: text(`q${turn}`) }) as ModelItem);
      history.push(deepFreeze({ type: 'message', role: 'assistant', content: text(`a${turn}`) }) as ModelItem);
    }
    encodeChatMessages([...history, { type: 'message', role: 'user', content: text('warm') }], 'none');
    // a call item right after the history belongs to the last assistant message
    const items: ModelItem[] = [...history, { type: 'function_call', callId: 'c1', name: 'f', arguments: '{}' }, { type: 'function_call_output', callId: 'c1', output: 'ok' }];
    const messages = encodeChatMessages(items, 'none');
    expect(messages.at(-2)).toEqual({ role: 'assistant', content: 'a19', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] });
    expect(JSON.stringify(messages)).toBe(JSON.stringify(afresh(items, 'none')));
  });
});
