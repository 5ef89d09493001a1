import { describe, expect, it } from 'vitest';
import { withFields } from '../../src/util/objects.js';

describe('withFields', () => {
  it('is { ...base, ...fields }: same keys, same order, fields win, base untouched', () => {
    const base = { model: 'm', temperature: 1, toolChoice: 'none' as string | undefined };
    const fields = { items: [1], toolChoice: 'auto' as string | undefined, extra: undefined };
    const copy = withFields(base, fields);
    expect(JSON.stringify(copy)).toBe(JSON.stringify({ ...base, ...fields }));
    expect(Object.keys(copy)).toEqual(Object.keys({ ...base, ...fields }));
    expect(copy.toolChoice).toBe('auto');
    expect(base).toEqual({ model: 'm', temperature: 1, toolChoice: 'none' });
    expect(copy).not.toBe(base);
  });
});
