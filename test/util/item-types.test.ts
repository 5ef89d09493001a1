// `itemTypes` (src/util/item-types.ts) and the shared lengths arrays are noted with
// (src/util/kept-runs.ts): the types of a resent history's leading shared items are kept as a
// run, and must be those of the items themselves for any list — grown, cut, edited, forked, with
// a wrong note never trusted past the objects it was kept for.
import { describe, expect, it } from 'vitest';
import { itemTypes } from '../../src/util/item-types.js';
import { KeptRuns, mapWithKeptRun, sharedLength, withSharedLength } from '../../src/util/kept-runs.js';
import { prng } from '../reliability/hostile-input.js';

const TYPES = ['message', 'function_call', 'function_call_output', 'reasoning', 'compaction', 'tool_search_output', 'item_reference'];
const item = (type: string, tag: string) => Object.freeze({ type, tag });

describe('sharedLength', () => {
  it('counts leading frozen objects, or takes what an array was noted with', () => {
    const shared = [item('message', 'a'), item('message', 'b'), { type: 'message', tag: 'fresh' }, item('message', 'c')];
    expect(sharedLength(shared)).toBe(2);
    expect(sharedLength(['text', item('message', 'a')])).toBe(0);
    // many are noted; a few are counted again (a note costs more than counting them)
    const many = Array.from({ length: 200 }, (_, i) => item('message', `m${i}`));
    expect(sharedLength(withSharedLength([...many], 150))).toBe(150);
    expect(sharedLength(withSharedLength([...shared], 1))).toBe(2);
  });

  it('mapWithKeptRun notes its result with the shared objects it began with', () => {
    const runs = new KeptRuns<readonly object[]>(64);
    const made = new WeakMap<object, object>();
    const map = (value: { tag: string }) => {
      if (!Object.isFrozen(value)) return { tag: `${value.tag}'` };
      let out = made.get(value);
      if (out === undefined) made.set(value, (out = Object.freeze({ tag: `${value.tag}'` })));
      return out;
    };
    const sent = [...Array.from({ length: 20 }, (_, i) => item('message', `m${i}`)), { type: 'message', tag: 'fresh' }];
    for (let request = 0; request < 2; request++) {
      const out = mapWithKeptRun(runs, sent, map);
      expect(sharedLength(out)).toBe(20);
      expect(out.slice(0, 20).every((value) => Object.isFrozen(value))).toBe(true);
    }
  });
});

describe('itemTypes', () => {
  it('random resent lists, grown, cut, edited and forked, give the types of their items', () => {
    const random = prng(777);
    let sent: Array<{ type: string; tag: string }> = Array.from({ length: 20 }, (_, i) => item('message', `o${i}`));
    for (let request = 0; request < 500; request++) {
      const roll = random();
      const randomType = () => TYPES[Math.floor(random() * TYPES.length)];
      if (roll < 0.6) sent = [...sent, ...Array.from({ length: 1 + Math.floor(random() * 4) }, (_, i) => item(random() < 0.8 ? 'message' : randomType(), `r${request}.${i}`))];
      else if (roll < 0.8) sent = sent.slice(0, Math.max(16, sent.length - Math.floor(random() * 10)));
      else {
        sent = [...sent];
        sent[Math.floor(random() * sent.length)] = item(randomType(), `e${request}`);
      }
      const fresh = random() < 0.5 ? [{ type: randomType(), tag: 'fresh' }] : [];
      const input = [...sent, ...fresh];
      const noted = random() < 0.5 ? withSharedLength(input, sent.length) : input;
      expect(itemTypes(noted), `request ${request}`).toEqual(new Set(input.map((value) => value.type)));
    }
  });

  it('a short list is looked at whole', () => {
    expect(itemTypes([item('message', 'a'), item('compaction', 'b')])).toEqual(new Set(['message', 'compaction']));
    expect(itemTypes([])).toEqual(new Set());
  });
});
