import { describe, expect, it } from 'vitest';
import { JsonStringFieldDecoder } from '../../src/protocol/json-string-field.js';

interface Fed {
  out: string;
  decoding: boolean;
  closed: boolean;
}

function feed(fragments: readonly string[], key = 'input'): Fed {
  const decoder = new JsonStringFieldDecoder(key);
  let out = '';
  for (const fragment of fragments) out += decoder.push(fragment);
  return { out, decoding: decoder.decoding, closed: decoder.closed };
}

const perChar = (text: string): string[] => [...text.split('')];

/** Every way of cutting `text` in two (by UTF-16 unit, as fragments are JS strings). */
function everySplit(text: string): string[][] {
  const out: string[][] = [];
  for (let i = 0; i <= text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

describe('JsonStringFieldDecoder', () => {
  // {"input": "a\nb \"q\" \\ \u00e9 \ud83d\ude00"} as the model writes it (JSON escapes, not decoded)
  const json = String.raw`{"input": "a\nb \"q\" \\ \u00e9 \ud83d\ude00"}`;
  const value = 'a\nb "q" \\ é 😀';

  it('the fixture is the JSON encoding of the value', () => {
    expect(JSON.parse(json)).toEqual({ input: value });
    expect(value).toHaveLength(14); // the emoji is two UTF-16 units
  });

  it('decodes the value fed whole', () => {
    expect(feed([json])).toEqual({ out: value, decoding: true, closed: true });
  });

  it('decodes the value fed one character at a time', () => {
    expect(feed(perChar(json))).toEqual({ out: value, decoding: true, closed: true });
  });

  it('decodes the value split at every position', () => {
    for (const parts of everySplit(json)) {
      expect({ parts, ...feed(parts) }).toEqual({ parts, out: value, decoding: true, closed: true });
    }
  });

  it('decodes the value split at every pair of positions', () => {
    for (let i = 0; i <= json.length; i++) {
      for (let j = i; j <= json.length; j++) {
        const parts = [json.slice(0, i), json.slice(i, j), json.slice(j)];
        const got = feed(parts);
        if (got.out !== value || !got.closed) expect({ parts, ...got }).toEqual({ parts, out: value, decoding: true, closed: true });
      }
    }
  });

  it('streams: each push returns only the newly decoded text, never escape fragments', () => {
    const decoder = new JsonStringFieldDecoder('input');
    expect(decoder.push('{"in')).toBe('');
    expect(decoder.decoding).toBe(false);
    expect(decoder.push('put": "a')).toBe('a');
    expect(decoder.decoding).toBe(true);
    expect(decoder.push('\\')).toBe('');
    expect(decoder.push('nb \\"q\\" \\')).toBe('\nb "q" ');
    expect(decoder.push('\\ \\u00')).toBe('\\ ');
    expect(decoder.push('e9 \\ud83d')).toBe('é ');
    expect(decoder.push('\\ude00')).toBe('😀');
    expect(decoder.closed).toBe(false);
    expect(decoder.push('"}')).toBe('');
    expect(decoder.closed).toBe(true);
    // anything after the closing quote is ignored
    expect(decoder.push(', "x": "ignored"}')).toBe('');
  });

  it('decodes every simple escape', () => {
    expect(feed([String.raw`{"input":"\"\\\/\b\f\n\r\t"}`]).out).toBe('"\\/\b\f\n\r\t');
  });

  it('handles whitespace variants around the key and colon', () => {
    for (const text of ['{ "input" : "x" }', '{"input":"x"}', '  {\n  "input":\t"x"\n}', '{\r\n"input"  :  "x"}']) {
      expect({ text, ...feed(perChar(text)) }).toEqual({ text, out: 'x', decoding: true, closed: true });
      expect({ text, ...feed([text]) }).toEqual({ text, out: 'x', decoding: true, closed: true });
    }
  });

  it('gives up on another key', () => {
    expect(feed(['{"other": "x"}'])).toEqual({ out: '', decoding: false, closed: false });
    expect(feed(perChar('{"other": "x"}'))).toEqual({ out: '', decoding: false, closed: false });
    // a key that merely starts with the expected one
    expect(feed(['{"inputs": "x"}'])).toEqual({ out: '', decoding: false, closed: false });
    // the expected key, but not first
    expect(feed(['{"other": "y", "input": "x"}'])).toEqual({ out: '', decoding: false, closed: false });
  });

  it('gives up on a bare JSON string', () => {
    expect(feed(['"raw text"'])).toEqual({ out: '', decoding: false, closed: false });
    expect(feed(perChar('"raw text"'))).toEqual({ out: '', decoding: false, closed: false });
  });

  it('gives up on non-JSON text', () => {
    for (const text of ['*** Begin Patch\n*** End Patch', 'hello {"input": "x"}', '{input: "x"}', '[{"input": "x"}]']) {
      expect({ text, ...feed([text]) }).toEqual({ text, out: '', decoding: false, closed: false });
      expect({ text, ...feed(perChar(text)) }).toEqual({ text, out: '', decoding: false, closed: false });
    }
  });

  it('gives up on a non-string value', () => {
    expect(feed(['{"input": 42}'])).toEqual({ out: '', decoding: false, closed: false });
    expect(feed(['{"input": {"nested": "x"}}'])).toEqual({ out: '', decoding: false, closed: false });
  });

  it('waits (neither decoding nor given up) while the prefix is still ambiguous', () => {
    const decoder = new JsonStringFieldDecoder('input');
    for (const fragment of ['  ', '{', ' ', '"', 'inp', 'ut', '"', ' ', ':', ' ']) {
      expect(decoder.push(fragment)).toBe('');
      expect(decoder.decoding).toBe(false);
    }
    expect(decoder.push('"ok"}')).toBe('ok');
    expect(decoder.closed).toBe(true);
  });

  it('escapes regex metacharacters in the key', () => {
    expect(feed(['{"a.b": "x"}'], 'a.b').out).toBe('x');
    expect(feed(['{"aXb": "x"}'], 'a.b').decoding).toBe(false);
  });

  it('passes a lone (unpaired) surrogate escape through', () => {
    expect(feed([String.raw`{"input": "\ud83dx"}`]).out).toBe('\ud83dx');
    expect(feed([String.raw`{"input": "\ude00x"}`]).out).toBe('\ude00x');
    expect(feed([String.raw`{"input": "\ud83d\n"}`]).out).toBe('\ud83d\n');
  });

  it('keeps a lone high surrogate escape that ends the value (as JSON.parse does)', () => {
    const json = String.raw`{"input": "x\ud83d"}`;
    expect(JSON.parse(json).input).toBe('x\ud83d');
    expect(feed([json])).toEqual({ out: 'x\ud83d', decoding: true, closed: true });
  });
});
