import { describe, expect, it } from 'vitest';
import { newId } from '../../src/util/ids.js';

describe('newId', () => {
  it('is the prefix and 48 hex digits, never repeated', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('resp'));
    for (const id of ids.slice(0, 100)) expect(id).toMatch(/^resp_[0-9a-f]{48}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // the random part carries the uniqueness: ids of one millisecond differ after the time
    const sameMs = ids.filter((id) => id.slice(5, 17) === ids[0].slice(5, 17));
    expect(new Set(sameMs.map((id) => id.slice(17))).size).toBe(sameMs.length);
  });

  it('sorts ids minted later after earlier ones (new rows land at the right edge of a store index)', async () => {
    const first = newId('msg');
    await new Promise((resolve) => setTimeout(resolve, 3));
    const later = Array.from({ length: 1000 }, () => newId('msg'));
    for (const id of later) expect(id > first).toBe(true);
    // the time part is the minting millisecond
    expect(Math.abs(parseInt(later[0].slice(4, 16), 16) - Date.now())).toBeLessThan(5_000);
  });
});
