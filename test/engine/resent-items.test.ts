// The items of a history a client resends whole (Codex over HTTP) reach a turn as the same frozen
// objects every request (src/util/interned-prefix.ts). Each is checked once (engine/request.ts
// `checkedOnce`) and, in a turn not stored, made storable once (util/items.ts
// `normalizeUnstoredItem`): no copy and no minted id per item and request. A stored turn's items
// still get ids of their own; a bad item is still named at its own place.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCreateRequest } from '../../src/engine/request.js';
import type { ResolvedInputItem } from '../../src/protocol/responses.js';
import { deepFreeze } from '../../src/util/freeze.js';
import { normalizeStoredItem, normalizeUnstoredItem } from '../../src/util/items.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/** A Codex-like history: messages without `type` or `id`, calls and outputs without ids. */
function history(turns: number): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [{ role: 'developer', content: `Rules. ${'Be careful with files. '.repeat(20)}` }];
  for (let i = 0; i < turns; i++) {
    items.push({ role: 'user', content: `step ${i}` });
    items.push({ type: 'function_call', name: 'shell', arguments: `{"command":["ls","d${i}"]}`, call_id: `call_${i}` });
    items.push({ type: 'function_call_output', call_id: `call_${i}`, output: `listing of d${i}: ${'file '.repeat(30)}` });
    items.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: `done ${i}` }] });
  }
  return items;
}

describe('resent items checked and made storable once', () => {
  it('a frozen item is checked once: the same frozen item every request; an unfrozen one anew', () => {
    const input = deepFreeze(history(3));
    const first = parseCreateRequest({ model: 'm', input }).input;
    const again = parseCreateRequest({ model: 'm', input: [...input, { role: 'user', content: 'more' }] }).input;
    first.forEach((item, i) => expect(again[i]).toBe(item));
    // the easy form gets its type, as before; the checked item is frozen
    expect(first[0]).toMatchObject({ type: 'message', role: 'developer' });
    expect(Object.isFrozen(first[0])).toBe(true);
    const fresh = history(3);
    const a = parseCreateRequest({ model: 'm', input: fresh }).input;
    const b = parseCreateRequest({ model: 'm', input: fresh }).input;
    expect(b[0]).not.toBe(a[0]);
    expect(b[0]).toEqual(a[0]);
  });

  it('a bad frozen item is refused every time, named at its own place', () => {
    const bad = deepFreeze({ role: 'wizard', content: 'x' });
    const at = (input: unknown[]) => {
      try {
        parseCreateRequest({ model: 'm', input });
      } catch (err) {
        return (err as { param?: string }).param;
      }
      return 'accepted';
    };
    expect(at([bad])).toBe('input[0].role');
    expect(at([...deepFreeze(history(1)), bad])).toBe('input[5].role');
    expect(at([bad])).toBe('input[0].role');
  });

  it('in a turn not stored, a frozen item is made storable once (its minted id kept); a stored turn mints its own', () => {
    const [developer, user, call] = parseCreateRequest({ model: 'm', input: deepFreeze(history(1)) }).input as ResolvedInputItem[];
    const once = normalizeUnstoredItem(developer);
    expect(once.id).toMatch(/^msg_/);
    expect(normalizeUnstoredItem(developer)).toBe(once);
    expect(normalizeUnstoredItem(call)).toBe(normalizeUnstoredItem(call));
    expect(Object.isFrozen(normalizeUnstoredItem(user))).toBe(true);
    const stored = [normalizeStoredItem(developer), normalizeStoredItem(developer)];
    expect(stored[0].id).not.toBe(stored[1].id);
    expect(stored[0].id).not.toBe(once.id);
    // an unfrozen item is normalized anew every time
    const loose = parseCreateRequest({ model: 'm', input: history(1) }).input[0] as ResolvedInputItem;
    expect(normalizeUnstoredItem(loose)).not.toBe(normalizeUnstoredItem(loose));
  });
});

describe('a resent history through the gateway, stored or not', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway();
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await tg?.close();
  });

  it('the model sees the same every time; each stored response keeps input items with ids of their own', async () => {
    const items = history(12);
    const seen: unknown[] = [];
    const stored: string[][] = [];
    // the same bytes five times (kept from the second), then stored three times (kept again from
    // the second: the member before `input` changed), then not stored again
    for (const store of [false, false, false, false, false, true, true, true, false]) {
      const response = await client.responses.create({ model: 'm', store, input: [...items, { role: 'user', content: scripted({ rounds: [{ text: 'ok' }] }, 'next') }] } as any);
      expect(response.status).toBe('completed');
      seen.push(tg.simulator.requests.at(-1)!.body.messages);
      if (store) {
        const listed = [];
        for await (const item of client.responses.inputItems.list(response.id, { order: 'asc', limit: 100 })) listed.push(item);
        expect(listed).toHaveLength(items.length + 1);
        expect(listed[1]).toMatchObject({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'step 0' }] });
        expect(listed[2]).toMatchObject({ type: 'function_call', call_id: 'call_0', name: 'shell' });
        stored.push(listed.map((item) => item.id!));
      }
    }
    for (const messages of seen) expect(messages).toEqual(seen[0]);
    // stored responses of the same history: no id shared between them, none repeated within one
    expect(stored).toHaveLength(3);
    const all = stored.flat();
    expect(new Set(all).size).toBe(all.length);
  });
});
