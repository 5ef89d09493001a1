import type { FileCitation, UrlCitation } from '../protocol/responses.js';
import type { CitationSource } from '../tools/types.js';

export type CitedSource = CitationSource;

const keyOf = (source: CitedSource): string => ('fileId' in source ? `file:${source.fileId}` : `url:${source.url}`);

/**
 * The turn's numbered sources: every source a gateway tool showed the model (a web page, a file)
 * gets one number for the whole turn (the same URL or file keeps its number), so the answer can
 * cite `[n]` unambiguously.
 */
export class CitationBook {
  private readonly sources: CitedSource[] = [];
  private readonly byKey = new Map<string, number>();
  private files = 0;

  get size(): number {
    return this.sources.length;
  }

  /** Whether any source is a file (whose markers are taken out of the text). */
  get hasFiles(): boolean {
    return this.files > 0;
  }

  /** Numbers (1-based) for these sources, registering new ones. */
  register(sources: readonly CitedSource[]): number[] {
    return sources.map((source) => {
      const key = keyOf(source);
      const known = this.byKey.get(key);
      if (known !== undefined) return known;
      this.sources.push(source);
      if ('fileId' in source) this.files++;
      this.byKey.set(key, this.sources.length);
      return this.sources.length;
    });
  }

  source(n: number): CitedSource | undefined {
    return this.sources[n - 1];
  }
}

const MARKER = /\[(\d{1,4})\]/g;

/**
 * Scans text for citation markers `[n]` naming known web sources, from `from` on. Returns the
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
    if (source && !('fileId' in source)) annotations.push({ type: 'url_citation', url: source.url, title: source.title, start_index: match.index, end_index: next });
  }
  const open = text.lastIndexOf('[');
  if (open >= next && text.length - open <= 6 && !text.slice(open).includes(']')) return { annotations, next: open };
  return { annotations, next: Math.max(next, text.length) };
}

/** A file marker with the space before it (`fact [2].` reads `fact.` once the marker is out). */
const FILE_MARKER = / ?\[(\d{1,4})\]/g;
/** The end of a chunk that may still become a file marker: hold it back until the next delta. */
const MAYBE_MARKER = / ?\[\d{0,4}$| $/;

/**
 * Takes `[n]` markers naming file sources out of streamed text (OpenAI's answers carry
 * `file_citation` annotations, not markers). `text` is what is held back from before plus the new
 * delta; `offset` is how much of the part the client already has. Returns the text to send now,
 * the text to hold back (a possible marker cut by a delta boundary), and one `file_citation` per
 * marker, `index` = where the marker stood in the text the client sees.
 */
export function takeFileCitations(text: string, offset: number, book: CitationBook, final: boolean): { emit: string; held: string; annotations: FileCitation[] } {
  const annotations: FileCitation[] = [];
  let emit = '';
  let last = 0;
  FILE_MARKER.lastIndex = 0;
  for (let match = FILE_MARKER.exec(text); match !== null; match = FILE_MARKER.exec(text)) {
    const source = book.source(Number(match[1]));
    if (!source || !('fileId' in source)) continue;
    emit += text.slice(last, match.index);
    last = match.index + match[0].length;
    annotations.push({ type: 'file_citation', file_id: source.fileId, filename: source.filename, index: offset + emit.length });
  }
  let rest = text.slice(last);
  let held = '';
  if (!final) {
    const maybe = MAYBE_MARKER.exec(rest);
    if (maybe) {
      held = rest.slice(maybe.index);
      rest = rest.slice(0, maybe.index);
    }
  }
  return { emit: emit + rest, held, annotations };
}
