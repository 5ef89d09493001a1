// The Chat Completions chunk reader (issue #16): a chunk that is a kept template's text around
// literals at its holes (id, created, the delta's string, usage counts) is read by reading those
// literals alone — templates are shared by the streams of a model — and every chunk it returns is exactly what
// `checkChatChunk(JSON.parse(data))` gives, for any text, however it is bent.
import { beforeEach, describe, expect, it } from 'vitest';
import { ChatChunkReader } from '../../src/protocol/chat-chunk-reader.js';
import { integerEnd, isPlainInteger, scanned, stringEnd, stringValue } from '../../src/protocol/json-literals.js';
import { checkChatChunk, MalformedChunkError } from '../../src/protocol/upstream-chunks.js';

// Templates outlive a reader (every stream shares them): each test streams from a model of its own,
// so what one test leaves is text another never sends, and its counts are its own.
let models = 0;
let ENVELOPE = newEnvelope();

/** The envelope of a new stream (a new id and `created`), of a new model unless `model` is given. */
function newEnvelope(model = `qwen3-coder-${++models}`, n = models): { id: string; object: string; created: number; model: string } {
  return { id: `chatcmpl-4b0dc4beea3e46f19285edc5652c${String(n).padStart(4, '0')}`, object: 'chat.completion.chunk', created: 1796283335 + n, model };
}

/** A vLLM token chunk as vLLM writes it (compact JSON, fields in its order). */
function token(delta: Record<string, unknown>, finishReason: string | null = null, envelope = ENVELOPE): string {
  return JSON.stringify({ ...envelope, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });
}

/** A whole short answer as vLLM streams it: role, tokens, finish, usage. */
function answer(envelope: ReturnType<typeof newEnvelope>, tokens: string[]): string[] {
  return [
    token({ role: 'assistant', content: '' }, null, envelope),
    ...tokens.map((content) => token({ content }, null, envelope)),
    token({}, 'stop', envelope),
    JSON.stringify({ ...envelope, choices: [], usage: { prompt_tokens: 12, completion_tokens: tokens.length, total_tokens: 12 + tokens.length } }),
  ];
}

/** What the full parse and check make of `data`: the chunk, or the error's class and message. */
function reference(data: string): unknown {
  try {
    return checkChatChunk(JSON.parse(data));
  } catch (err) {
    return { threw: (err as Error).constructor.name, message: (err as Error).message };
  }
}

/** What the reader makes of `data`, copied at once (the reader may reuse the chunk it returned). */
function readOne(reader: ChatChunkReader, data: string): unknown {
  try {
    return structuredClone(reader.read(data));
  } catch (err) {
    return { threw: (err as Error).constructor.name, message: (err as Error).message };
  }
}

function readAll(datas: string[]): { reader: ChatChunkReader; results: unknown[] } {
  const reader = new ChatChunkReader();
  return { reader, results: datas.map((data) => readOne(reader, data)) };
}

const TRICKY = ['', ' said', '"quoted"', 'back\\slash', 'line\nbreak\ttab', 'ünïcödé', '表意文字', '🙂 emoji', '\u2028\u2029', '\u0001ctl', '}]},"x":1', '\\"', 'a'.repeat(5000)];

describe('ChatChunkReader', () => {
  beforeEach(() => {
    ENVELOPE = newEnvelope();
  });

  it('reads a stream of token chunks from a template: same chunks as the full parse', () => {
    const stream = [
      token({ role: 'assistant', content: '' }),
      ...TRICKY.map((content) => token({ content })),
      token({}, 'stop'),
      JSON.stringify({ ...ENVELOPE, choices: [], usage: { prompt_tokens: 2, completion_tokens: 13, total_tokens: 15 } }),
    ];
    const { reader, results } = readAll(stream);
    expect(results).toEqual(stream.map(reference));
    // the first content chunk becomes the template; every later content chunk fills it
    expect(reader.filled).toBe(TRICKY.length - 1);
  });

  it('fills the templates earlier streams left: a new stream is read from them whole, with its own id, created and counts', () => {
    const model = ENVELOPE.model;
    const first = answer(newEnvelope(model, 1), ['Hel', 'lo']);
    expect(readAll(first).results).toEqual(first.map(reference));
    for (let n = 2; n < 6; n++) {
      const next = answer(newEnvelope(model, n), ['You', ' said', ':', ` "hi" ${n}\n`]);
      const { reader, results } = readAll(next);
      expect(results).toEqual(next.map(reference));
      // role, tokens, finish and usage: every chunk from a template
      expect(reader.filled).toBe(next.length);
    }
  });

  it('gives each of two streams read in turns its own chunks', () => {
    const model = ENVELOPE.model;
    const a = answer(newEnvelope(model, 1), ['a1', 'a2', 'a3', 'a4']);
    const b = answer(newEnvelope(model, 2), ['b1', 'b2', 'b3', 'b4']);
    const readerA = new ChatChunkReader();
    const readerB = new ChatChunkReader();
    for (let i = 0; i < a.length; i++) {
      expect(readOne(readerA, a[i])).toEqual(reference(a[i]));
      expect(readOne(readerB, b[i])).toEqual(reference(b[i]));
      // one stream's token right after the other's, both from the same templates
      expect(readOne(readerA, a[i])).toEqual(reference(a[i]));
    }
    expect(readerA.filled + readerB.filled).toBeGreaterThan(a.length * 2);
  });

  it('fills an id or created hole only with what JSON.stringify writes there', () => {
    const model = ENVELOPE.model;
    const base = newEnvelope(model, 1);
    const template = token({ content: 'x' }, null, base);
    const bent = [
      template,
      template,
      template.replace(`"created":${base.created}`, '"created":1.5'),
      template.replace(`"created":${base.created}`, '"created":1e9'),
      template.replace(`"created":${base.created}`, '"created":01796283336'),
      template.replace(`"created":${base.created}`, '"created":-1796283336'),
      template.replace(`"created":${base.created}`, '"created":1234567890123456789'),
      template.replace(`"created":${base.created}`, '"created":0'),
      template.replace(`"created":${base.created}`, '"created":"1796283336"'),
      template.replace(`"created":${base.created}`, '"created":null'),
      template.replace(base.id, 'chat\\"cmpl'),
      template.replace(base.id, 'chat\\u0041cmpl'),
      template.replace(base.id, 'chat\\qcmpl'),
      template.replace(base.id, 'chat\u0001cmpl'),
      template.replace(`"id":"${base.id}"`, '"id":7'),
      template.replace(`"id":"${base.id}"`, '"id":"a","id":"b"'),
      template.replace(base.id, ''),
      token({ content: 'after' }, null, newEnvelope(model, 2)),
    ];
    // each chunk from its own stream: what templates there are, it may fill
    const readers = bent.map(() => new ChatChunkReader());
    const results = bent.map((data, i) => readOne(readers[i], data));
    expect(results).toEqual(bent.map(reference));
    // the template itself again, created 0, the ids with JSON escapes, the empty id and a new stream
    expect(readers.map((reader) => reader.filled)).toEqual(bent.map((_, i) => ([1, 7, 10, 11, 16, 17].includes(i) ? 1 : 0)));
    expect(results[5]).toMatchObject({ id: base.id, created: -1796283336 });
    expect(results[12]).toMatchObject({ threw: 'SyntaxError' });
  });

  it('reads reasoning and tool-call argument fragments the same way', () => {
    const stream = [
      token({ reasoning_content: 'Let me' }),
      token({ reasoning_content: ' think' }),
      token({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'shell', arguments: '' } }] }),
      ...['{"cmd"', ': ["ls', '", "-la"]', '}'].map((fragment) => token({ tool_calls: [{ index: 0, function: { arguments: fragment } }] })),
      token({ tool_calls: [{ index: 1, function: { arguments: '{}' } }] }),
      token({}, 'tool_calls'),
    ];
    const { reader, results } = readAll(stream);
    expect(results).toEqual(stream.map(reference));
    expect(reader.filled).toBe(4);
  });

  it('never fills a template from text that only looks like it: break-outs, other values, malformed literals', () => {
    const template = token({ content: 'x' });
    const [prefix, suffix] = template.split('"x"');
    const bent = [
      template,
      `${prefix}"a","role":"user"${suffix}`, // closes the string and adds a field
      `${prefix}"a"},"extra":{"b":"c"${suffix}`, // closes the delta
      `${prefix}5${suffix}`, // a number where a string was: the check names it
      `${prefix}null${suffix}`,
      `${prefix}"unterminated${suffix}`, // not JSON at all
      `${prefix}"bad \\q escape"${suffix}`,
      `${prefix}"raw \u0001 control"${suffix}`,
      `${prefix} "spaced" ${suffix}`, // whitespace around the literal is still the same JSON
      `${prefix}""${suffix}`,
      `${prefix}"${suffix}`,
      `${prefix}${suffix}`,
      prefix,
      suffix,
      `${prefix}"after"${suffix}`,
    ];
    const { results } = readAll(bent);
    expect(results).toEqual(bent.map(reference));
    expect(results[3]).toEqual({ threw: MalformedChunkError.name, message: "'choices[0].delta.content' is not a string" });
    expect(results[5]).toMatchObject({ threw: 'SyntaxError' });
  });

  it('keeps no template of text that is not exactly its own JSON (spacing, duplicate keys, escapes the server chose)', () => {
    const spaced = ['a', 'b', 'c'].map((content) => token({ content }).replaceAll('":', '": '));
    const duplicate = ['a', 'b', 'c'].map((content) => `{"choices":[{"index":0,"delta":{"content":"ignored"}}],"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}}]}`);
    const escaped = ['\u00e9a', '\u00e9b'].map((content) => token({ content }).replace('\u00e9', '\\u00e9'));
    for (const stream of [spaced, duplicate, escaped]) {
      const { reader, results } = readAll(stream);
      expect(results).toEqual(stream.map(reference));
      expect(reader.filled).toBe(0);
    }
  });

  it('reads chunks that carry usage (counts on every chunk) from a template: the counts are holes', () => {
    const stream = ['a', 'b', 'c'].map((content, i) =>
      JSON.stringify({ ...ENVELOPE, choices: [{ index: 0, delta: { content } }], usage: { prompt_tokens: 2, completion_tokens: i + 1, prompt_tokens_details: { cached_tokens: i * 7 } } }),
    );
    const { reader, results } = readAll(stream);
    expect(results).toEqual(stream.map(reference));
    expect(reader.filled).toBe(2);
    expect(results[2]).toMatchObject({ usage: { completion_tokens: 3, prompt_tokens_details: { cached_tokens: 14 } } });
  });

  it('reads the first fragment of a call from the template of that tool\'s last call, with its own call id and arguments', () => {
    const start = (id: string, name: string, args = '') => token({ tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: args } }] });
    const starts = [start('call_1', 'shell'), start('call_2', 'shell'), start('chatcmpl-tool-9f', 'shell', '{"cmd":["ls"]}'), start('call_4', 'apply_patch'), start('call_5', 'shell', '"\\u00e9"'), start('call_6', 'apply_patch')];
    // a model of the test's own: no other test's templates
    const reader = new ChatChunkReader(ENVELOPE.model);
    const results = starts.map((data) => readOne(reader, data));
    expect(results).toEqual(starts.map(reference));
    // every call after the first of its tool fills that tool's template
    expect(reader.filled).toBe(4);
    expect(results[2]).toMatchObject({ choices: [{ delta: { tool_calls: [{ id: 'chatcmpl-tool-9f', function: { name: 'shell', arguments: '{"cmd":["ls"]}' } }] } }] });
    // another stream's first call of the tool fills it too, with that stream's id and its own call id
    const other = newEnvelope(ENVELOPE.model);
    const next = token({ tool_calls: [{ index: 0, id: 'call_7', type: 'function', function: { name: 'shell', arguments: '' } }] }, null, other);
    const second = new ChatChunkReader(ENVELOPE.model);
    expect(readOne(second, next)).toEqual(reference(next));
    expect(second.filled).toBe(1);
  });

  it('makes no template of a fragment that starts two calls, or of a call id that is not a string', () => {
    const two = (i: number) => token({ tool_calls: [0, 1].map((index) => ({ index, id: `call_${i}_${index}`, type: 'function', function: { name: 'shell', arguments: '' } })) });
    const odd = (i: number) => token({ tool_calls: [{ index: 0, id: i, type: 'function', function: { name: 'shell', arguments: '' } }] });
    const stream = [two(1), two(2), two(3), odd(1), odd(2)];
    const { reader, results } = readAll(stream);
    expect(results).toEqual(stream.map(reference));
    expect(reader.filled).toBe(0);
  });

  it('reads the tokens after a last token with its finish_reason from their own template', () => {
    const tokens = ['Hel', 'lo', ' th', 'ere'].map((content) => token({ content }));
    const last = token({ content: '.' }, 'stop');
    const after = token({ content: 'again' });
    const { reader, results } = readAll([...tokens, last, after]);
    expect(results).toEqual([...tokens, last, after].map(reference));
    expect(reader.filled).toBe(4);
  });

  it('follows a stream that changes shape back and forth', () => {
    // interleaved parallel calls: each chunk has the other's shape
    const stream = Array.from({ length: 40 }, (_, i) => token({ tool_calls: [{ index: i % 2, function: { arguments: `f${i}` } }] }));
    const { reader, results } = readAll(stream);
    expect(results).toEqual(stream.map(reference));
    // the first chunk of each shape makes its template; every later one fills it
    expect(reader.filled).toBe(38);
  });

  it('stops making templates after 16 per stream and keeps the 12 last made or filled for the next streams', () => {
    const shapes = (envelope: ReturnType<typeof newEnvelope>) => Array.from({ length: 20 }, (_, i) => token({ tool_calls: [{ index: i, function: { arguments: 'x' } }] }, null, envelope));
    const model = ENVELOPE.model;
    const first = readAll(shapes(newEnvelope(model, 1)));
    expect(first.results).toEqual(shapes(newEnvelope(model, 1)).map(reference));
    expect(first.reader.filled).toBe(0);
    // after 16 templates (and 16 chunks that fit none), a new shape is read in full, even twice
    const more = [token({ content: 't1' }, null, newEnvelope(model, 1)), token({ content: 't2' }, null, newEnvelope(model, 1))];
    expect(more.map((data) => readOne(first.reader, data))).toEqual(more.map(reference));
    expect(first.reader.filled).toBe(0);
    // the next stream: the shapes of calls 4–15 are the 12 kept, all filled
    const second = readAll(shapes(newEnvelope(model, 2)).slice(4, 16));
    expect(second.results).toEqual(shapes(newEnvelope(model, 2)).slice(4, 16).map(reference));
    expect(second.reader.filled).toBe(12);
    // calls 0–3 were dropped (16–19 never made): read in full again
    const third = readAll(shapes(newEnvelope(model, 3)).slice(1, 4));
    expect(third.results).toEqual(shapes(newEnvelope(model, 3)).slice(1, 4).map(reference));
    expect(third.reader.filled).toBe(0);
  });

  it('keeps each model\'s templates apart: streams of 40 models read in turns each fill their own', () => {
    const models = Array.from({ length: 40 }, (_, m) => `${ENVELOPE.model}-m${m}`);
    // one stream per model first (each makes its model's templates), then a second stream of every
    // model, all read in turns, chunk by chunk
    const warm = models.map((model) => answer(newEnvelope(model, 1), ['one']));
    for (const [m, stream] of warm.entries()) {
      const reader = new ChatChunkReader(models[m]);
      for (const data of stream) expect(readOne(reader, data)).toEqual(reference(data));
    }
    const streams = models.map((model) => answer(newEnvelope(model, 2), ['a', 'b', 'c']));
    const readers = models.map((model) => new ChatChunkReader(model));
    for (let i = 0; i < streams[0].length; i++) {
      for (const [m, stream] of streams.entries()) expect(readOne(readers[m], stream[i])).toEqual(reference(stream[i]));
    }
    expect(readers.map((reader) => reader.filled)).toEqual(streams.map((stream) => stream.length));
  });

  it('keeps the templates of the 64 models read last', () => {
    const model = (m: number) => `${ENVELOPE.model}-k${m}`;
    const stream = (m: number, n: number) => answer(newEnvelope(model(m), n), ['x']);
    const read = (m: number, n: number) => {
      const reader = new ChatChunkReader(model(m));
      for (const data of stream(m, n)) reader.read(data);
      return reader.filled;
    };
    read(0, 1);
    for (let m = 1; m <= 64; m++) read(m, 1);
    // model 0 was read before 64 others: its templates are gone, and made again
    expect(read(0, 2)).toBe(0);
    expect(read(0, 3)).toBe(stream(0, 3).length);
    // model 64, read last but one, still has its own
    expect(read(64, 2)).toBe(stream(64, 2).length);
  });

  it('agrees with the full parse on random streams with random damage (seeded)', () => {
    let seed = 1234567;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)];
    const alphabet = ['a', ' ', '"', '\\', '}', ']', ',', ':', '\n', '\u0000', 'é', '🙂', '\ud800', 'u', '0'];
    let filled = 0;
    for (let stream = 0; stream < 200; stream++) {
      const datas: string[] = [];
      for (let i = 0; i < 30; i++) {
        const text = Array.from({ length: Math.floor(random() * 8) }, () => pick(alphabet)).join('');
        // a token, an argument fragment, or a call's first fragment (its id and arguments random too)
        const shape = random();
        let data =
          shape < 0.7
            ? token({ content: text })
            : shape < 0.9
              ? token({ tool_calls: [{ index: 0, function: { arguments: text } }] })
              : token({ tool_calls: [{ index: 0, id: `call_${pick(alphabet)}${text}`, type: 'function', function: { name: pick(['shell', 'apply_patch']), arguments: text } }] });
        if (random() < 0.15) {
          // damage: one character inserted, removed or replaced anywhere
          const at = Math.floor(random() * data.length);
          const kind = random();
          data = kind < 0.33 ? data.slice(0, at) + pick(alphabet) + data.slice(at) : kind < 0.66 ? data.slice(0, at) + data.slice(at + 1) : data.slice(0, at) + pick(alphabet) + data.slice(at + 1);
        }
        datas.push(data);
      }
      const { reader, results } = readAll(datas);
      expect(results).toEqual(datas.map(reference));
      filled += reader.filled;
    }
    // most undamaged chunks came from a template
    expect(filled).toBeGreaterThan(200 * 30 * 0.5);
  });
});

describe('ChatChunkReader on chunks JSON.stringify cannot write', () => {
  it('reads a chunk nested thousands deep or too long once escaped in full, as the full parse does, and keeps its leaf', () => {
    const deep = `{"x":${'['.repeat(20_000)}${']'.repeat(20_000)},"choices":[{"delta":{"content":"hi"}}]}`;
    const reader = new ChatChunkReader();
    const chunk = reader.read(deep);
    expect(chunk.choices?.[0]?.delta?.content).toBe('hi');
    expect(readOne(new ChatChunkReader(), token({ content: 'after' }))).toEqual(reference(token({ content: 'after' })));
    // the same reader goes on: the next chunks are read as the full parse reads them
    const next = [token({ content: 'a' }), token({ content: 'b' })];
    expect(next.map((data) => readOne(reader, data))).toEqual(next.map(reference));
  });
});

describe('JSON literals read in place (json-literals.ts)', () => {
  it('finds a string literal as JSON.parse reads one, and only such', () => {
    for (const literal of ['""', '"plain"', '"a\\"b"', '"\\\\"', '"\\u00e9\\n"', '"🙂"']) {
      const text = `x:${literal},y`;
      expect(stringEnd(text, 2)).toBe(2 + literal.length);
      expect(stringValue(text, 2, 2 + literal.length, scanned.escaped)).toBe(JSON.parse(literal));
    }
    // not a literal: no opening quote, unterminated, a control character, an escape JSON has not
    expect(stringEnd('x:abc"', 2)).toBe(-1);
    expect(stringEnd('x:"abc', 2)).toBe(-1);
    expect(stringEnd('x:"a\\"', 2)).toBe(-1);
    expect(stringEnd('x:"a\u0001b"', 2)).toBe(-1);
    expect(stringEnd('x:"a\\qb"', 2)).toBe(8);
    expect(stringValue('x:"a\\qb"', 2, 8, scanned.escaped)).toBeNull();
  });

  it('finds an integer written as JSON.stringify writes a plain one, and its value', () => {
    for (const digits of ['0', '7', '1796283335', '999999999999999']) {
      expect(integerEnd(`:${digits},`, 1)).toBe(1 + digits.length);
      expect(scanned.integer).toBe(Number(digits));
      expect(isPlainInteger(Number(digits))).toBe(true);
    }
    for (const text of [':,', ':01,', ':-1,', ':1234567890123456,']) expect(integerEnd(text, 1)).toBe(-1);
    // a fraction or an exponent ends the digits: the fixed text after them no longer fits
    expect(integerEnd(':1.5,', 1)).toBe(2);
    for (const value of [-1, 1.5, 1e15, Number.NaN, -0, '1']) expect(isPlainInteger(value)).toBe(false);
  });
});
