import { describe, expect, it } from 'vitest';
import { withAddedFields } from '../../src/protocol/client-objects.js';

/** Own keys, values and prototype, as a spread literal would have them. */
function shape(value: object): unknown {
  return { keys: Reflect.ownKeys(value), json: JSON.stringify(value), proto: Object.getPrototypeOf(value), descriptors: Object.getOwnPropertyDescriptors(value) };
}

describe('withAddedFields (a copy of client JSON with fields added, for the hot path)', () => {
  it('is { ...raw, ...fields }: keys in the same order (integer keys first), fields override in place, new ones last', () => {
    const raw = JSON.parse('{"type":"function","name":"f","2":"two","parameters":{"type":"object"},"1":"one","strict":true}') as Record<string, unknown>;
    const fields = { description: null, parameters: raw.parameters, strict: null };
    const copy = withAddedFields(raw, fields);
    expect(shape(copy)).toEqual(shape({ ...raw, ...fields }));
    expect(Object.keys(copy)).toEqual(['1', '2', 'type', 'name', 'parameters', 'strict', 'description']);
    expect(copy).not.toBe(raw);
    expect(raw.strict).toBe(true);
  });

  it('keeps an own "__proto__" key of parsed JSON as data, as a spread does, and never sets the prototype', () => {
    const raw = JSON.parse('{"role":"user","__proto__":{"polluted":true},"content":"hi"}') as Record<string, unknown>;
    const copy = withAddedFields(raw, { type: 'message' });
    const spread = { ...raw, type: 'message' };
    expect(shape(copy)).toEqual(shape(spread));
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(copy, '__proto__')).toBe(true);
    expect(JSON.stringify(copy)).toBe('{"role":"user","__proto__":{"polluted":true},"content":"hi","type":"message"}');
    // the copy's own "__proto__" stays an ordinary, writable data property
    (copy as Record<string, unknown>)['__proto__'] = 1;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
  });

  it('gives the same object when every field is already there (then it is the spread itself)', () => {
    const raw = JSON.parse('{"type":"function","__proto__":{"p":1},"name":"f","description":"d","strict":false,"parameters":{}}') as Record<string, unknown>;
    const fields = { description: 'd', parameters: null, strict: null };
    const copy = withAddedFields(raw, fields);
    expect(shape(copy)).toEqual(shape({ ...raw, ...fields }));
    expect(Object.keys(copy)).toEqual(['type', '__proto__', 'name', 'description', 'strict', 'parameters']);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
  });

  it('copies own keys only, leaves the source untouched, and takes an empty source', () => {
    const inherited = Object.create({ hidden: 1 }) as Record<string, unknown>;
    inherited.own = 2;
    expect(withAddedFields(inherited, { added: 3 })).toEqual({ own: 2, added: 3 });
    expect(Object.keys(withAddedFields({}, { type: 'message' }))).toEqual(['type']);
  });
});
