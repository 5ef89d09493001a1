import type { McpServerRef, McpService } from '../mcp/service.js';
import { finishResults, isWebUrl, SearchProviderError, str, withSiteOperators, type SearchProvider, type SearchRequest, type SearchResult } from './provider.js';
import { untilAborted } from '../util/abort.js';

/**
 * Web search delegated to a search tool on an operator-configured MCP server. The tool is called
 * with `{query, count}` and answers in text, in whatever shape that server uses; the parser below
 * accepts JSON (an array of results, or an object holding one under `results`, `items`, `data`,
 * `organic_results`, `web.results`, …) and plain-text or markdown listings (labelled
 * `Title:/URL:/Description:` blocks, `[title](url)` links, or `title` / `url` / `snippet` lines).
 * Allowed domains are added to the query as `site:` operators (the tool has no filter argument);
 * the caller filters the results afterwards as for every provider.
 */

/** Performs the MCP call: returns the tool's text output, throws when the call failed. */
export type McpSearchFn = (query: string, count: number, signal: AbortSignal) => Promise<string>;

export interface McpSearchOptions {
  timeoutMs: number;
}

export class McpSearchProvider implements SearchProvider {
  readonly name = 'mcp';

  constructor(
    private readonly call: McpSearchFn,
    private readonly options: McpSearchOptions,
  ) {}

  async search(request: SearchRequest): Promise<SearchResult[]> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const signal = AbortSignal.any([request.signal, timeout]);
    const count = Math.max(0, Math.floor(request.count));
    let output: string;
    try {
      output = await untilAborted(this.call(withSiteOperators(request.query, request.allowedDomains), count, signal), signal);
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason ?? err;
      if (timeout.aborted) throw new SearchProviderError(`The MCP search tool did not answer within ${this.options.timeoutMs} ms`);
      if (err instanceof SearchProviderError) throw err;
      throw new SearchProviderError(`The MCP search tool failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    return finishResults(parseSearchToolOutput(output), count);
  }
}


/**
 * The `mcpSearch` callback for createSearchProvider, on top of McpService: calls `tool` on
 * `server` with `{query, count}` and turns an error outcome into a SearchProviderError.
 */
export function mcpSearchCallback(service: Pick<McpService, 'callTool'>, server: McpServerRef, tool: string, timeoutMs: number): McpSearchFn {
  return async (query, count, signal) => {
    const outcome = await service.callTool(server, tool, { query, count }, signal, timeoutMs);
    if (outcome.error !== null) throw new SearchProviderError(`MCP search tool '${tool}' on '${server.label}' failed: ${outcome.error}`);
    return outcome.output;
  };
}

// ---------------------------------------------------------------------------------------------
// Parsing tool output

const MAX_SNIPPET_CHARS = 2_000;
const LIST_KEYS = ['results', 'items', 'data', 'organic_results', 'organic', 'webPages', 'web', 'hits', 'documents', 'sources', 'value'];
const TITLE_KEYS = ['title', 'name', 'headline'];
const URL_KEYS = ['url', 'link', 'href', 'uri', 'source_url', 'sourceUrl'];
const SNIPPET_KEYS = ['snippet', 'content', 'description', 'text', 'body', 'summary', 'highlight', 'abstract'];
const DATE_KEYS = ['published_date', 'publishedDate', 'published_at', 'publishedAt', 'date', 'page_age', 'age', 'datePublished'];

/** Search results found in a search tool's text output (JSON or text); [] when there are none. */
export function parseSearchToolOutput(output: string): SearchResult[] {
  const text = output.trim();
  if (text === '') return [];
  const unfenced = /^```[a-zA-Z]*\s*\n([\s\S]*?)\n\s*```$/.exec(text)?.[1]?.trim() ?? text;

  const whole = parseJson(unfenced);
  if (whole.ok) return resultsFromJson(whole.value);

  // Several JSON documents (one per content block or line).
  if (/^[[{]/.test(unfenced)) {
    const fromLines: SearchResult[] = [];
    let parsedAny = false;
    for (const line of unfenced.split('\n')) {
      const trimmed = line.trim();
      if (!/^[[{]/.test(trimmed)) continue;
      const parsed = parseJson(trimmed);
      if (!parsed.ok) continue;
      parsedAny = true;
      fromLines.push(...resultsFromJson(parsed.value));
    }
    if (parsedAny) return fromLines;
  }
  return resultsFromText(unfenced);
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (!/^[[{]/.test(text)) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

function pickString(record: Record<string, unknown>, keys: readonly string[]): string | undefined {
  for (const key of keys) {
    const value = str(record[key]);
    if (value) return value;
  }
  return undefined;
}

function clip(text: string): string {
  const collapsed = text.replace(/\s+/g, ' ').trim();
  return collapsed.length > MAX_SNIPPET_CHARS ? `${collapsed.slice(0, MAX_SNIPPET_CHARS)}…` : collapsed;
}

function resultFromRecord(record: Record<string, unknown>): SearchResult | undefined {
  const url = pickString(record, URL_KEYS);
  if (!isWebUrl(url)) return undefined;
  const result: SearchResult = {
    title: clip(pickString(record, TITLE_KEYS) ?? hostLabel(url)),
    url,
    snippet: clip(pickString(record, SNIPPET_KEYS) ?? ''),
  };
  const date = pickString(record, DATE_KEYS);
  if (date) result.publishedAt = date;
  return result;
}

function resultsFromJson(value: unknown, depth = 0): SearchResult[] {
  if (depth > 4 || value === null || typeof value !== 'object') return [];
  if (Array.isArray(value)) {
    const out: SearchResult[] = [];
    for (const item of value) {
      if (item && typeof item === 'object' && !Array.isArray(item)) {
        const result = resultFromRecord(item as Record<string, unknown>);
        if (result) out.push(result);
      }
    }
    return out;
  }
  const record = value as Record<string, unknown>;
  for (const key of LIST_KEYS) {
    const inner = record[key];
    if (inner && typeof inner === 'object') {
      const found = resultsFromJson(inner, depth + 1);
      if (found.length > 0) return found;
    }
  }
  // An MCP call result passed through as JSON: its text blocks.
  if (Array.isArray(record.content)) {
    const texts = record.content
      .map((block) => (block && typeof block === 'object' && typeof (block as Record<string, unknown>).text === 'string' ? ((block as Record<string, unknown>).text as string) : ''))
      .filter((t) => t !== '');
    if (texts.length > 0) return texts.flatMap((t) => parseSearchToolOutput(t));
  }
  const single = resultFromRecord(record);
  return single ? [single] : [];
}

function hostLabel(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return url;
  }
}

// --- text and markdown ---------------------------------------------------------------------------

const URL_IN_TEXT = /https?:\/\/[^\s<>()[\]"'`]+/;
const MARKDOWN_LINK = /\[([^\]\n]{0,500})\]\((https?:\/\/[^\s)]+)\)/;
const LABEL_LINE = /^\s*(?:[-*•]\s+)?(?:\*\*)?([A-Za-z][A-Za-z ]{0,20}?)(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*(.*)$/;
const ITEM_START = /^\s*(?:#{1,6}\s|\d{1,3}[.)]\s|[-*•]\s|\*\*|title\s*:)/i;
const TITLE_LABELS = new Set(['title', 'name', 'headline']);
const URL_LABELS = new Set(['url', 'link', 'source', 'href', 'uri']);
const SNIPPET_LABELS = new Set(['description', 'snippet', 'content', 'summary', 'text', 'excerpt', 'abstract', 'highlights']);
const DATE_LABELS = new Set(['published', 'published date', 'published at', 'date', 'age', 'page age']);

function trimUrl(url: string): string {
  return url.replace(/[.,;:!?*_]+$/, '');
}

/** Removes list markers, heading hashes and emphasis around a line. */
function stripMarkers(line: string): string {
  return line
    .replace(/^\s*(?:#{1,6}\s+|\d{1,3}[.)]\s+|[-*•]\s+)/, '')
    .replace(/^\*\*(.*)\*\*$/, '$1')
    .replace(/^__(.*)__$/, '$1')
    .trim();
}

function resultsFromText(text: string): SearchResult[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  // Blocks are separated by blank lines or "---" rules.
  const blocks: string[][] = [];
  let current: string[] = [];
  for (const line of lines) {
    if (line.trim() === '' || /^\s*(?:-{3,}|\*{3,}|_{3,})\s*$/.test(line)) {
      if (current.length > 0) blocks.push(current);
      current = [];
    } else {
      current.push(line);
    }
  }
  if (current.length > 0) blocks.push(current);

  const results: SearchResult[] = [];
  for (const block of blocks.flatMap(splitBlock)) {
    const result = resultFromBlock(block);
    if (result) {
      results.push(result);
    } else {
      // A paragraph without a URL right after a result is usually its snippet.
      const previous = results[results.length - 1];
      if (previous && previous.snippet === '') previous.snippet = clip(block.map(stripMarkers).join(' '));
    }
  }
  return results;
}

/** A block holding several results (no blank lines between them) is split where each item starts. */
function splitBlock(block: string[]): string[][] {
  const urlLines = block.filter((line) => URL_IN_TEXT.test(line)).length;
  if (urlLines <= 1) return [block];
  const parts: string[][] = [];
  let current: string[] = [];
  let currentHasUrl = false;
  for (const line of block) {
    if (ITEM_START.test(line) && current.length > 0 && currentHasUrl) {
      parts.push(current);
      current = [];
      currentHasUrl = false;
    }
    current.push(line);
    if (URL_IN_TEXT.test(line)) currentHasUrl = true;
  }
  if (current.length > 0) parts.push(current);
  return parts;
}

function resultFromBlock(block: string[]): SearchResult | undefined {
  let title: string | undefined;
  let url: string | undefined;
  let date: string | undefined;
  const snippet: string[] = [];
  const rest: string[] = [];
  let labelled = false;
  let inSnippet = false;

  for (const raw of block) {
    const label = LABEL_LINE.exec(raw);
    const name = label?.[1]?.trim().toLowerCase();
    // "https://…" would otherwise read as the label "https".
    if (label && name && !/^https?$/.test(name) && (TITLE_LABELS.has(name) || URL_LABELS.has(name) || SNIPPET_LABELS.has(name) || DATE_LABELS.has(name))) {
      labelled = true;
      const value = (label[2] ?? '').replace(/\*\*$/, '').trim();
      inSnippet = SNIPPET_LABELS.has(name);
      if (TITLE_LABELS.has(name)) title ??= stripMarkers(value);
      else if (URL_LABELS.has(name)) url ??= trimUrl(MARKDOWN_LINK.exec(value)?.[2] ?? URL_IN_TEXT.exec(value)?.[0] ?? value);
      else if (DATE_LABELS.has(name)) date ??= value;
      else if (value !== '') snippet.push(value);
      continue;
    }
    if (labelled && /^\s*[A-Za-z][A-Za-z ]{0,20}\s*:\s/.test(raw) && !inSnippet) continue; // another field (Author: …)
    if (inSnippet) {
      snippet.push(raw.trim());
      continue;
    }
    rest.push(raw);
  }

  // Unlabelled parts: a markdown link or a bare URL, a title line, the rest as snippet.
  for (const raw of rest) {
    const line = stripMarkers(raw);
    if (line === '') continue;
    const link = MARKDOWN_LINK.exec(line);
    if (!url && link) {
      url = trimUrl(link[2] as string);
      const linkText = stripMarkers(link[1] as string);
      if (!title && linkText !== '' && !isWebUrl(linkText)) title = linkText;
      const remainder = stripMarkers(line.replace(link[0], '').replace(/^[\s:—–-]+|[\s:—–-]+$/g, ''));
      if (remainder !== '') snippet.push(remainder);
      continue;
    }
    const bare = URL_IN_TEXT.exec(line);
    if (!url && bare) {
      url = trimUrl(bare[0]);
      const remainder = stripMarkers(line.replace(bare[0], '').replace(/^[\s:—–<>|-]+|[\s:—–<>|-]+$/g, ''));
      if (remainder !== '') {
        if (!title) title = remainder;
        else snippet.push(remainder);
      }
      continue;
    }
    if (!title && !labelled && snippet.length === 0) title = line;
    else snippet.push(line);
  }

  if (!isWebUrl(url)) return undefined;
  const result: SearchResult = { title: clip(title || hostLabel(url)), url, snippet: clip(snippet.join(' ')) };
  if (date) result.publishedAt = date;
  return result;
}
