import type { ContainerFileCitation, FileCitation, UrlCitation } from '../protocol/responses.js';
import type { CitationSource, CitedFile } from '../tools/types.js';
import { EMPTY_MAP } from '../util/empty.js';

export type CitedSource = CitationSource;

const keyOf = (source: CitedSource): string => ('fileId' in source ? `file:${source.fileId}` : `url:${source.url}`);

/**
 * The turn's numbered sources: every source a gateway tool showed the model (a web page, a file)
 * gets one number for the whole turn (the same URL or file keeps its number), so the answer can
 * cite `[n]` unambiguously.
 */
export class CitationBook {
  private readonly sources: CitedSource[] = [];
  /** Made with the first source (most turns show the model none). */
  private byKey: Map<string, number> | undefined;
  /** How many of the sources are files (their markers become `file_citation`). */
  private fileSources = 0;
  /** Files a tool wrote (code_interpreter), by path: cited where the answer names them. */
  private writtenFiles: Map<string, CitedFile> | undefined;

  get size(): number {
    return this.sources.length;
  }

  /** Files a tool wrote this turn (the latest record of a path wins). */
  registerFiles(files: readonly CitedFile[]): void {
    const written = (this.writtenFiles ??= new Map());
    for (const file of files) written.set(file.path, file);
  }

  get citedFiles(): ReadonlyMap<string, CitedFile> {
    return this.writtenFiles ?? EMPTY_MAP;
  }

  /** Whether any source is a file (whose markers are taken out of the text). */
  get hasFiles(): boolean {
    return this.fileSources > 0;
  }

  /** Numbers (1-based) for these sources, registering new ones. */
  register(sources: readonly CitedSource[]): number[] {
    return sources.map((source) => {
      const key = keyOf(source);
      const byKey = (this.byKey ??= new Map());
      const known = byKey.get(key);
      if (known !== undefined) return known;
      this.sources.push(source);
      if ('fileId' in source) this.fileSources++;
      byKey.set(key, this.sources.length);
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

/**
 * `container_file_citation` annotations for the files the answer names: a registered path
 * (`/mnt/data/x.csv`, also as `sandbox:/mnt/data/x.csv`) spans the annotation. Scanned once over
 * the finished text part (a path split across deltas is found whole).
 */
export function scanFileCitations(text: string, files: ReadonlyMap<string, CitedFile>): ContainerFileCitation[] {
  const annotations: ContainerFileCitation[] = [];
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
