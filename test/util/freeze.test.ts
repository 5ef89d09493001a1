// util/freeze.ts: shared documents are frozen so no reader changes what the next one sees.
import { describe, expect, it } from 'vitest';
import { deepFreeze, deepFreezeEach } from '../../src/util/freeze.js';

describe('deepFreeze', () => {
  it('freezes a value and everything in it, lists included', () => {
    const value = { a: [{ b: { c: 1 } }], d: 'x' };
    expect(deepFreeze(value)).toBe(value);
    expect(Object.isFrozen(value)).toBe(true);
    expect(Object.isFrozen(value.a)).toBe(true);
    expect(Object.isFrozen(value.a[0].b)).toBe(true);
  });
});

describe('deepFreezeEach', () => {
  it('freezes every item and everything in it, but not the list (V8 copies a frozen array element by element: bench/frozen-arrays.mjs)', () => {
    const items = [{ type: 'message', content: [{ type: 'text', text: 'hi' }] }, { type: 'function_call_output', output: 'ok' }];
    expect(deepFreezeEach(items)).toBe(items);
    expect(Object.isFrozen(items)).toBe(false);
    for (const item of items) expect(Object.isFrozen(item)).toBe(true);
    expect(Object.isFrozen(items[0].content)).toBe(true);
    expect(Object.isFrozen(items[0].content![0])).toBe(true);
    // the list can still be joined, and taken apart, without touching the items
    items.push({ type: 'function_call_output', output: 'more' });
    expect(items).toHaveLength(3);
  });
});
