import type { JsonObject, UrlCitation } from '../protocol/responses.js';
import type { CitedFile } from '../tools/types.js';

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

  private readonly files = new Map<string, CitedFile>();

  get size(): number {
    return this.sources.length;
  }

  /** Files a tool wrote this turn (the latest record of a path wins). */
  registerFiles(files: readonly CitedFile[]): void {
    for (const file of files) this.files.set(file.path, file);
  }

  get citedFiles(): ReadonlyMap<string, CitedFile> {
    return this.files;
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

/**
 * `container_file_citation` annotations for the files the answer names: a registered path
 * (`/mnt/data/x.csv`, also as `sandbox:/mnt/data/x.csv`) spans the annotation. Scanned once over
 * the finished text part (a path split across deltas is found whole).
 */
export function scanFileCitations(text: string, files: ReadonlyMap<string, CitedFile>): JsonObject[] {
  const annotations: Array<JsonObject & { start_index: number }> = [];
  for (const file of files.values()) {
    for (let at = text.indexOf(file.path); at >= 0; at = text.indexOf(file.path, at + file.path.length)) {
      const end = at + file.path.length;
      // a longer name that merely starts with this path is another file (a sentence's full stop is not)
      const next = text.charAt(end);
      if (/[\w-]/.test(next) || (next === '.' && /\w/.test(text.charAt(end + 1)))) continue;
      const start = text.slice(Math.max(0, at - 8), at) === 'sandbox:' ? at - 8 : at;
      annotations.push({ type: 'container_file_citation', container_id: file.containerId, file_id: file.fileId, filename: file.filename, start_index: start, end_index: end });
    }
  }
  return annotations.sort((a, b) => a.start_index - b.start_index);
}
