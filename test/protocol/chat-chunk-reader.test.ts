// The Chat Completions chunk reader (issue #16): a token's chunk that is a kept template's text
// around one string literal is read by parsing that literal alone — and every chunk it returns is
// exactly what `checkChatChunk(JSON.parse(data))` gives, for any text, however it is bent.
import { describe, expect, it } from 'vitest';
import { ChatChunkReader } from '../../src/protocol/chat-chunk-reader.js';
import { checkChatChunk, MalformedChunkError } from '../../src/protocol/upstream-chunks.js';

const ENVELOPE = { id: 'chatcmpl-4b0dc4beea3e46f19285edc5652c5fee', object: 'chat.completion.chunk', created: 1796283335, model: 'qwen3-coder' };

/** A vLLM token chunk as vLLM writes it (compact JSON, fields in its order). */
function token(delta: Record<string, unknown>, finishReason: string | null = null): string {
  return JSON.stringify({ ...ENVELOPE, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });
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

  it('keeps no template of chunks that carry usage (its numbers change with every chunk)', () => {
    const stream = ['a', 'b', 'c'].map((content, i) => JSON.stringify({ ...ENVELOPE, choices: [{ index: 0, delta: { content } }], usage: { prompt_tokens: 2, completion_tokens: i + 1 } }));
    const { reader, results } = readAll(stream);
    expect(results).toEqual(stream.map(reference));
    expect(reader.filled).toBe(0);
  });

  it('keeps no template of a chunk that ends its choice (a last token with its finish_reason)', () => {
    const tokens = ['Hel', 'lo', ' th', 'ere'].map((content) => token({ content }));
    const last = token({ content: '.' }, 'stop');
    // a chunk of the earlier shape after the last one: still read from the earlier template
    const after = token({ content: 'again' });
    const { reader, results } = readAll([...tokens, last, after]);
    expect(results).toEqual([...tokens, last, after].map(reference));
    expect(reader.filled).toBe(4);
  });

  it('follows a stream that changes shape, and stops making templates after 16', () => {
    // interleaved parallel calls: each chunk has the other's shape, so each makes a new template
    const stream = Array.from({ length: 40 }, (_, i) => token({ tool_calls: [{ index: i % 2, function: { arguments: `f${i}` } }] }));
    const { reader, results } = readAll(stream);
    expect(results).toEqual(stream.map(reference));
    // the 16th template (call 1's shape, chunk 15) is the last: call 1's 12 later fragments fill it
    expect(reader.filled).toBe(12);
    // a new shape gets no template any more: read in full
    const more = Array.from({ length: 5 }, (_, i) => token({ content: `t${i}` }));
    expect(more.map((data) => readOne(reader, data))).toEqual(more.map(reference));
    expect(reader.filled).toBe(12);
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
        let data = random() < 0.8 ? token({ content: text }) : token({ tool_calls: [{ index: 0, function: { arguments: text } }] });
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
