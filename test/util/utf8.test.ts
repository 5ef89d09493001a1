import { describe, expect, it } from 'vitest';
import { utf8Bytes, utf8Text, wireText } from '../../src/util/utf8.js';

/** Long enough to take the converted path (utf8.ts converts from 4,096 characters or bytes). */
const long = (piece: string): string => piece.repeat(Math.ceil(5_000 / piece.length));

const texts: Record<string, string> = {
  'short, wide': 'a “quoted” — dash → 😀',
  'long ASCII': long('plain ascii text, {"json": [1, 2, 3]} '),
  'long Latin-1': long('café naïve façade '),
  'long, wide characters': long('It’s “quoted” – dash — arrow → 【cite†】 non‑breaking '),
  'long, astral characters': long('emoji 😀🚀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 '),
  'long, one wide character at the end': `${long('x')}—`,
  'long, CJK': long('中文字符和日本語のテキスト'),
  'long, a byte-order mark first': `\uFEFF${long('“bom” ')}`,
  'long, U+FFFD and U+2028/U+2029 kept': long('\uFFFD\u2028\u2029 '),
  'very long (over 8 M characters: Node converts it)': '“wide” '.repeat(1_300_000),
};

describe('utf8Bytes / wireText', () => {
  for (const [name, text] of Object.entries(texts)) {
    it(`is Buffer.from(text) for ${name}`, () => {
      expect(utf8Bytes(text).equals(Buffer.from(text))).toBe(true);
      const wire = wireText(text);
      expect(typeof wire === 'string' ? wire === text : wire.equals(Buffer.from(text))).toBe(true);
    });
  }

  it('hands short, long Latin-1 and very long texts over as they are (Node encodes those itself)', () => {
    expect(wireText(texts['short, wide'])).toBe(texts['short, wide']);
    expect(wireText('short ascii')).toBe('short ascii');
    expect(wireText(texts['long Latin-1'])).toBe(texts['long Latin-1']);
    const veryLong = texts['very long (over 8 M characters: Node converts it)'];
    expect(wireText(veryLong)).toBe(veryLong);
    expect(Buffer.isBuffer(wireText(texts['long, wide characters']))).toBe(true);
  });

  it('hands a long ASCII text over as its bytes, also when it was made of pieces or held two bytes per character', () => {
    const ascii = texts['long ASCII'];
    expect(Buffer.isBuffer(wireText(ascii))).toBe(true);
    // a string of many pieces (as a tick's events are joined), and one V8 holds two bytes per
    // character though every character is ASCII (a slice of a text that had a wide one)
    let joined = '';
    for (let i = 0; i < 400; i++) joined += `event: e\ndata: {"n":${i},"t":"${'x'.repeat(i % 17)}"}\n\n`;
    const twoByteAscii = `${ascii}\u2014`.slice(0, ascii.length);
    for (const text of [joined, twoByteAscii, `${ascii}\u007f`, `\u0000${ascii}`]) {
      const wire = wireText(text);
      expect(Buffer.isBuffer(wire) && wire.equals(Buffer.from(text))).toBe(true);
    }
    // one character above ASCII anywhere: not Latin-1 bytes (é is two bytes in UTF-8)
    for (const text of [`${ascii}\u0080`, `\u00e9${ascii}`, `${ascii.slice(0, 3_000)}\u00ff${ascii.slice(3_000)}`]) expect(wireText(text)).toBe(text);
  });

  it('writes a lone surrogate as U+FFFD, exactly as Buffer.from does', () => {
    for (const text of [`${long('“x” ')}\uD800 tail`, `${long('“x” ')}\uDC00`, `\uD83D${long('— ')}`]) {
      const bytes = utf8Bytes(text);
      expect(bytes.equals(Buffer.from(text))).toBe(true);
      expect(bytes.includes(Buffer.from([0xef, 0xbf, 0xbd]))).toBe(true);
    }
  });
});

describe('utf8Text', () => {
  for (const [name, text] of Object.entries(texts)) {
    it(`is bytes.toString('utf8') for ${name}`, () => {
      const bytes = Buffer.from(text);
      expect(utf8Text(bytes)).toBe(bytes.toString('utf8'));
      expect(utf8Text(bytes)).toBe(text);
    });
  }

  it('replaces invalid sequences as V8 does (the same U+FFFD count and places)', () => {
    const invalid = [[0xff], [0xc3], [0xe2, 0x80], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x98], [0xc0, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80, 0x80]];
    const body = Buffer.from(long('“wide” text '));
    for (const bytes of invalid) {
      for (const at of [0, 1_000, body.length]) {
        const mixed = Buffer.concat([body.subarray(0, at), Buffer.from(bytes), body.subarray(at)]);
        expect(utf8Text(mixed)).toBe(mixed.toString('utf8'));
        expect(utf8Text(mixed)).toContain('\uFFFD');
      }
    }
  });

  it('agrees with Buffer#toString on 2,000 randomly damaged long texts', () => {
    let seed = 42;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const base = Buffer.from(texts['long, wide characters'] + texts['long, astral characters']);
    for (let i = 0; i < 2_000; i++) {
      const bytes = Buffer.from(base);
      // a few bytes overwritten, some cut mid-character
      for (let k = 0; k < 1 + Math.floor(random() * 4); k++) bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256);
      const cut = bytes.subarray(Math.floor(random() * 3), bytes.length - Math.floor(random() * 3));
      expect(utf8Text(cut)).toBe(cut.toString('utf8'));
    }
  });
});
