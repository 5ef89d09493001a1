// KeptJson (src/util/kept-json.ts) must answer exactly what serialising the value now would: the
// kept text only for the same JSON, whatever objects carry it.
import { describe, expect, it } from 'vitest';
import { aroundHole, KeptJson, sameJson as sameAsSnapshot, snapshotOf } from '../../src/util/kept-json.js';

const sameJson = (value: unknown, parsed: unknown) => sameAsSnapshot(value, snapshotOf(JSON.stringify(parsed)));

const same = (value: unknown) => sameAsSnapshot(value, snapshotOf(JSON.stringify(value)));

describe('sameJson', () => {
  it('holds for a value and the parse of its own JSON, key order, unicode and nesting included', () => {
    expect(same({ a: [1, 2.5, -3e-7, null, true, 'x “q” ✓'], b: { c: { d: [] } }, e: {} })).toBe(true);
    expect(same([{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} } }])).toBe(true);
    // keys JSON.stringify leaves out are not looked for
    expect(sameJson({ a: 1, b: undefined, c: () => 1 }, { a: 1 })).toBe(true);
  });

  it('fails for another content: a value, a key, the key order, a length', () => {
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameJson({ a: 1 }, { a: 2 })).toBe(false);
    expect(sameJson({ a: 1 }, { a: 1, b: 1 })).toBe(false);
    expect(sameJson({ a: 1, b: 1 }, { a: 1 })).toBe(false);
    expect(sameJson([1, 2], [1, 2, 3])).toBe(false);
    expect(sameJson({ a: '1' }, { a: 1 })).toBe(false);
    expect(sameJson({ a: [] }, { a: {} })).toBe(false);
    expect(sameJson({ a: null }, { a: {} })).toBe(false);
  });

  it('fails (serialise again) for what JSON.stringify would transform', () => {
    expect(sameJson({ a: Number.NaN }, { a: null })).toBe(false);
    expect(sameJson({ a: Infinity }, { a: null })).toBe(false);
    expect(sameJson([undefined], [null])).toBe(false);
    expect(sameJson({ toJSON: () => 1 }, 1)).toBe(false);
    expect(sameJson(new Date(0), {})).toBe(false);
    expect(sameJson({ a: 1n }, { a: 1 })).toBe(false);
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(same(deep)).toBe(false);
  });
});

describe('KeptJson', () => {
  it('keeps the encoding of one content and reuses it for equal content in new objects', () => {
    let encoded = 0;
    const kept = new KeptJson((json) => ({ json, n: ++encoded }), 2, 1000);
    const first = kept.get('k', { a: [1, 2] });
    expect(first.json).toBe('{"a":[1,2]}');
    expect(kept.get('k', { a: [1, 2] })).toBe(first);
    // other content under the same key replaces it
    const other = kept.get('k', { a: [2, 1] });
    expect(other.json).toBe('{"a":[2,1]}');
    expect(kept.get('k', { a: [2, 1] })).toBe(other);
    expect(kept.get('k', { a: [1, 2] })).not.toBe(first);
  });

  it('evicts the least recently used key, and keeps nothing over its size limit', () => {
    const kept = new KeptJson((json) => ({ json }), 2, 20);
    const a = kept.get('a', 1);
    kept.get('b', 2);
    expect(kept.get('a', 1)).toBe(a); // a used again: b is now the oldest
    kept.get('c', 3);
    expect(kept.get('a', 1)).toBe(a);
    const big = 'x'.repeat(50);
    const once = kept.get('big', big);
    expect(once.json).toBe(JSON.stringify(big));
    expect(kept.get('big', big)).not.toBe(once);
  });
});

describe('aroundHole', () => {
  it('splits around the one occurrence, and refuses none or several', () => {
    expect(aroundHole('{"a":1,"tools":[],"b":2}', '"tools":[]')).toEqual(['{"a":1,"tools":', ',"b":2}']);
    expect(aroundHole('{"a":1}', '"tools":[]')).toBeUndefined();
    expect(aroundHole('{"x":{"tools":[]},"tools":[]}', '"tools":[]')).toBeUndefined();
  });
});
