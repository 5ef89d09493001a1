// Units of file_search: citation markers → file_citation (split at every delta boundary),
// attribute filters, keyword sanitising, token chunking, the hashing embedder, the exact scan.
import { describe, expect, it } from 'vitest';
import { CitationBook, takeFileCitations } from '../../src/engine/citations.js';
import { normalize } from '../../src/retrieval/embedder.js';
import { chunkText, countTokens } from '../../src/retrieval/chunker.js';
import { chunkingProblem } from '../../src/retrieval/chunking-strategy.js';
import { matchesFilter, parseFilter } from '../../src/retrieval/filters.js';
import { queryTerms } from '../../src/retrieval/query-terms.js';
import { nearest } from '../../src/retrieval/search.js';
import { hashEmbedding } from '../../src/simulate/embeddings.js';

describe('file citations', () => {
  const book = new CitationBook();
  book.register([{ url: 'https://example.com', title: 'Example' }]);
  book.register([{ fileId: 'file-a', filename: 'a.pdf' }, { fileId: 'file-b', filename: 'b.md' }]);
  const answer = 'Alpha holds [2]. Beta too [3][2], see [1] and [9].';
  const expected = 'Alpha holds. Beta too, see [1] and [9].';

  /** Feeds the answer in the given pieces, as the message stream does. */
  function run(pieces: string[]) {
    let held = '';
    let text = '';
    const annotations: unknown[] = [];
    pieces.forEach((piece, i) => {
      const out = takeFileCitations(held + piece, text.length, book, false);
      held = out.held;
      text += out.emit;
      annotations.push(...out.annotations);
      if (i === pieces.length - 1) {
        const last = takeFileCitations(held, text.length, book, true);
        text += last.emit;
        annotations.push(...last.annotations);
      }
    });
    return { text, annotations };
  }

  it('takes file markers (and the space before them) out of the text and keeps web markers', () => {
    const { text, annotations } = run([answer]);
    expect(text).toBe(expected);
    expect(annotations).toEqual([
      { type: 'file_citation', file_id: 'file-a', filename: 'a.pdf', index: 'Alpha holds'.length },
      { type: 'file_citation', file_id: 'file-b', filename: 'b.md', index: 'Alpha holds. Beta too'.length },
      { type: 'file_citation', file_id: 'file-a', filename: 'a.pdf', index: 'Alpha holds. Beta too'.length },
    ]);
  });

  it('gives the same result whatever the delta boundaries', () => {
    const whole = run([answer]);
    for (let a = 1; a < answer.length; a++) {
      for (const b of [a + 1, a + 3, a + 7]) {
        if (b >= answer.length) continue;
        expect(run([answer.slice(0, a), answer.slice(a, b), answer.slice(b)])).toEqual(whole);
      }
    }
  });

  it('numbers the same file once per turn', () => {
    expect(book.register([{ fileId: 'file-a', filename: 'a.pdf' }])).toEqual([2]);
    expect(book.hasFiles).toBe(true);
  });
});

describe('attribute filters', () => {
  const attrs = { region: 'eu', year: 2024, draft: false };
  const check = (filter: unknown) => matchesFilter(parseFilter(filter, 'filters'), attrs);
  it('compares by type and nests and/or', () => {
    expect(check({ type: 'eq', key: 'region', value: 'eu' })).toBe(true);
    expect(check({ type: 'ne', key: 'region', value: 'eu' })).toBe(false);
    expect(check({ type: 'gt', key: 'year', value: 2023 })).toBe(true);
    expect(check({ type: 'lte', key: 'year', value: 2023 })).toBe(false);
    expect(check({ type: 'gt', key: 'year', value: '2023' })).toBe(false); // no cross-type ordering
    expect(check({ type: 'in', key: 'region', value: ['us', 'eu'] })).toBe(true);
    expect(check({ type: 'nin', key: 'region', value: ['us', 'eu'] })).toBe(false);
    expect(check({ type: 'nin', key: 'missing', value: ['x'] })).toBe(true);
    expect(check({ type: 'eq', key: 'draft', value: false })).toBe(true);
    expect(check({ type: 'or', filters: [{ type: 'eq', key: 'region', value: 'us' }, { type: 'and', filters: [{ type: 'gte', key: 'year', value: 2024 }, { type: 'eq', key: 'draft', value: false }] }] })).toBe(true);
  });
  it('rejects malformed filters with the path of the problem', () => {
    expect(() => parseFilter({ type: 'and', filters: [{ type: 'eq', key: 'a' }] }, 'filters')).toThrow(expect.objectContaining({ param: 'filters.filters[0].value' }));
    expect(() => parseFilter({ type: 'in', key: 'a', value: 'x' }, 'filters')).toThrow(expect.objectContaining({ param: 'filters.value' }));
  });
});

describe('keyword terms', () => {
  it('keeps only words, drops stopwords unless nothing else is left', () => {
    expect(queryTerms('What is the "aurora" season (in Tromsø) NOT OR near*?')).toEqual(['aurora', 'season', 'tromsø', 'near']);
    expect(queryTerms('what is it')).toEqual(['what', 'is', 'it']);
    expect(queryTerms('?? :: ""')).toEqual([]);
  });
});

describe('chunking', () => {
  it('windows by tokens with overlap, as the static strategy says', () => {
    const text = Array.from({ length: 600 }, (_, i) => `word${i}`).join(' ');
    const chunks = chunkText(text, { type: 'static', maxChunkSizeTokens: 200, chunkOverlapTokens: 50 });
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) expect(countTokens(chunk)).toBeLessThanOrEqual(201);
    // consecutive chunks overlap: the end of one reappears at the start of the next
    const tail = chunks[0].split(' ').slice(-5).join(' ');
    expect(chunks[1]).toContain(tail);
    expect(chunks.at(-1)).toContain('word599');
  });
  it('validates static sizes as OpenAI does', () => {
    expect(chunkingProblem(800, 400)).toBeUndefined();
    expect(chunkingProblem(99, 0)).toMatch(/100 to 4096/);
    expect(chunkingProblem(800, 401)).toMatch(/half/);
  });
});

describe('vectors', () => {
  it('the hashing embedder is deterministic, unit length and closer for shared words', () => {
    const a = hashEmbedding('aurora season in Tromso');
    expect(hashEmbedding('aurora season in Tromso')).toEqual(a);
    expect(Math.hypot(...a)).toBeCloseTo(1, 6);
    const dot = (x: number[], y: number[]) => x.reduce((s, v, i) => s + v * y[i], 0);
    expect(dot(a, hashEmbedding('the aurora season'))).toBeGreaterThan(dot(a, hashEmbedding('sourdough starter flour')));
  });
  it('the exact scan returns the nearest allowed chunks, best first', () => {
    const rows = [normalize(Float32Array.from([1, 0])), normalize(Float32Array.from([1, 1])), normalize(Float32Array.from([0, 1]))];
    const vectors = { chunkIds: Int32Array.from([10, 11, 12]), fileIds: ['a', 'b', 'c'], matrix: Float32Array.from(rows.flatMap((r) => Array.from(r))), dimensions: 2 };
    const query = normalize(Float32Array.from([1, 0.1]));
    expect(nearest(vectors, query, null, 2).map((h) => h.chunkId)).toEqual([10, 11]);
    expect(nearest(vectors, query, new Set(['b', 'c']), 5).map((h) => h.chunkId)).toEqual([11, 12]);
  });
});
