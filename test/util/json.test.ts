// jsonString (issue #16): the per-delta shortcut is exactly JSON.stringify for every string.
import { describe, expect, it } from 'vitest';
import { jsonString } from '../../src/util/json.js';

describe('jsonString', () => {
  it('is JSON.stringify for every character of the BMP alone and inside a token', () => {
    for (let code = 0; code <= 0xffff; code++) {
      const char = String.fromCharCode(code);
      for (const text of [char, ` a${char}b`]) expect(jsonString(text)).toBe(JSON.stringify(text));
    }
  });

  it('is JSON.stringify for surrogate pairs, lone surrogates, empty, long and escaped text', () => {
    const samples = ['', '🙂', ' 🙂 ok', '\ud83d', 'x\ude42', '\ude42\ud83d', 'a"b', 'a\\b', '\u2028', 'tab\there', 'x'.repeat(64), `${'x'.repeat(64)}"`, `${'é'.repeat(200)}\n`];
    for (const text of samples) expect(jsonString(text)).toBe(JSON.stringify(text));
  });
});
