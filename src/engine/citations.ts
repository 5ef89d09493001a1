import type { UrlCitation } from '../protocol/responses.js';

export interface CitedSource {
  url: string;
  title: string;
}

/**
 * The turn's numbered sources: every source a gateway tool showed the model gets one number for
 * the whole turn (the same URL keeps its number), so the answer can cite `[n]` unambiguously.
 */
export class CitationBook {
  private readonly sources: CitedSource[] = [];
  private readonly byUrl = new Map<string, number>();

  get size(): number {
    return this.sources.length;
  }

  /** Numbers (1-based) for these sources, registering new ones. */
  register(sources: readonly CitedSource[]): number[] {
    return sources.map((source) => {
      const known = this.byUrl.get(source.url);
      if (known !== undefined) return known;
      this.sources.push(source);
      this.byUrl.set(source.url, this.sources.length);
      return this.sources.length;
    });
  }

  source(n: number): CitedSource | undefined {
    return this.sources[n - 1];
  }
}

const MARKER = /\[(\d{1,4})\]/g;

/**
 * Scans text for citation markers `[n]` naming known sources, from `from` on. Returns the
 * annotations (spanning each marker) and where the next scan should start: a marker may be cut
 * by a delta boundary, so scanning resumes at an unclosed `[` near the end.
 */
export function scanCitations(text: string, from: number, book: CitationBook): { annotations: UrlCitation[]; next: number } {
  const annotations: UrlCitation[] = [];
  MARKER.lastIndex = from;
  let next = from;
  for (let match = MARKER.exec(text); match !== null; match = MARKER.exec(text)) {
    next = match.index + match[0].length;
    const source = book.source(Number(match[1]));
    if (source) annotations.push({ type: 'url_citation', url: source.url, title: source.title, start_index: match.index, end_index: next });
  }
  const open = text.lastIndexOf('[');
  if (open >= next && text.length - open <= 6 && !text.slice(open).includes(']')) return { annotations, next: open };
  return { annotations, next: Math.max(next, text.length) };
}
