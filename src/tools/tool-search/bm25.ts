/**
 * Okapi BM25 over small in-memory documents (the deferred tools of one request). Terms are
 * lower-cased words; identifiers are split at `_`, `-`, `.` and camelCase humps, so
 * `createCalendarEvent` matches "calendar event".
 */

const K1 = 1.2;
const B = 0.75;

export function terms(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((term) => term.length > 0);
}

export class Bm25Index<T> {
  private readonly docs: Array<{ value: T; freq: Map<string, number>; length: number }> = [];
  private readonly docFreq = new Map<string, number>();
  private totalLength = 0;

  add(value: T, text: string): void {
    const freq = new Map<string, number>();
    const words = terms(text);
    for (const word of words) freq.set(word, (freq.get(word) ?? 0) + 1);
    for (const word of freq.keys()) this.docFreq.set(word, (this.docFreq.get(word) ?? 0) + 1);
    this.docs.push({ value, freq, length: words.length });
    this.totalLength += words.length;
  }

  /** Documents with a positive score, best first (ties keep insertion order). */
  search(query: string): Array<{ value: T; score: number }> {
    const queryTerms = [...new Set(terms(query))];
    const n = this.docs.length;
    if (n === 0 || queryTerms.length === 0) return [];
    const avgLength = this.totalLength / n || 1;
    const scored: Array<{ value: T; score: number; order: number }> = [];
    this.docs.forEach((doc, order) => {
      let score = 0;
      for (const term of queryTerms) {
        const tf = doc.freq.get(term);
        if (!tf) continue;
        const df = this.docFreq.get(term) ?? 0;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        score += (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * doc.length) / avgLength));
      }
      if (score > 0) scored.push({ value: doc.value, score, order });
    });
    scored.sort((a, b) => b.score - a.score || a.order - b.order);
    return scored.map(({ value, score }) => ({ value, score }));
  }
}
