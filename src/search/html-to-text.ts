/**
 * Readable text from HTML without a DOM: a single forward pass over the markup (every search
 * starts where the previous one ended, so the cost is linear in the input), tolerant of the
 * malformed markup real pages contain — unclosed tags and quotes, stray `<`, huge attributes,
 * unterminated scripts and comments.
 */
import { collapseWhitespace, decodeEntities } from './html-entities.js';

export { decodeEntities };

// Elements whose content is raw text (no tags inside): found by searching for their end tag.
const RAW_TEXT = new Set(['script', 'style', 'title', 'textarea', 'xmp', 'iframe', 'noembed', 'noframes', 'noscript', 'plaintext']);
// Raw-text elements whose content is not page text.
const DROP_RAW = new Set(['script', 'style', 'xmp', 'iframe', 'noembed', 'noframes', 'noscript']);
// Containers whose whole subtree is dropped.
const SKIP_CONTAINERS = new Set(['head', 'svg', 'math', 'template']);
// What may appear in <head>; any other start tag closes it implicitly (as browsers do).
const HEAD_CONTENT = new Set(['meta', 'link', 'title', 'script', 'style', 'base', 'noscript', 'template', 'object', 'basefont', 'bgsound']);
// HTML start tags that end foreign (svg/math) content in a browser.
const FOREIGN_BREAKOUT = new Set([
  'b', 'big', 'blockquote', 'body', 'br', 'center', 'code', 'dd', 'div', 'dl', 'dt', 'em', 'embed', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6',
  'head', 'hr', 'i', 'img', 'li', 'listing', 'menu', 'meta', 'nobr', 'ol', 'p', 'pre', 'ruby', 's', 'small', 'span', 'strong', 'strike',
  'sub', 'sup', 'table', 'tt', 'u', 'ul', 'var',
]);
// Blocks that separate paragraphs (a blank line) and blocks that only start a new line.
const PARAGRAPH_BLOCKS = new Set([
  'p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'dl', 'table', 'blockquote', 'pre', 'listing', 'hr', 'section', 'article',
  'header', 'footer', 'main', 'nav', 'aside', 'figure', 'form', 'details', 'address', 'fieldset',
]);
const LINE_BLOCKS = new Set([
  'div', 'li', 'tr', 'dt', 'dd', 'figcaption', 'caption', 'summary', 'option', 'legend', 'hgroup', 'dialog', 'center', 'menu',
  'body', 'html', 'textarea', 'frameset', 'noscript',
]);

const endTagPatterns = new Map<string, RegExp>();
function endTagPattern(name: string): RegExp {
  let pattern = endTagPatterns.get(name);
  if (!pattern) {
    pattern = new RegExp(`</${name}[\\s/>]`, 'gi');
    endTagPatterns.set(name, pattern);
  }
  return pattern;
}

const isWhitespace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
const isAsciiLetter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const GT = 0x3e;
const SLASH = 0x2f;
const EQUALS = 0x3d;
const DQUOTE = 0x22;
const SQUOTE = 0x27;

/** Collects text with pending separators, so output never has trailing spaces or more than one blank line. */
class TextBuilder {
  private readonly parts: string[] = [];
  private empty = true;
  private pendingBreaks = 0;
  private pendingSpace = false;
  private pendingCell = false;
  private pendingPrefix = '';

  /** Collapsed (non-preformatted) text. */
  text(raw: string): void {
    const collapsed = raw.replace(/\s+/g, ' ');
    if (collapsed === '') return;
    if (collapsed === ' ') {
      this.pendingSpace = true;
      return;
    }
    const leading = collapsed.charCodeAt(0) === 0x20;
    const trailing = collapsed.charCodeAt(collapsed.length - 1) === 0x20;
    if (leading) this.pendingSpace = true;
    this.flush();
    this.parts.push(collapsed.slice(leading ? 1 : 0, trailing ? collapsed.length - 1 : collapsed.length));
    this.pendingSpace = trailing;
  }

  /** Preformatted text, kept as written. */
  pre(raw: string): void {
    if (raw === '') return;
    this.flush();
    this.parts.push(raw.replace(/\r\n?/g, '\n'));
  }

  /** A line break before the next text (2 = a blank line); blocks take the larger, `<br>`s add up. */
  lineBreak(count: 1 | 2, additive = false): void {
    this.pendingBreaks = Math.min(2, additive ? this.pendingBreaks + count : Math.max(this.pendingBreaks, count));
    this.pendingCell = false;
  }

  /** Text the next line starts with (list markers). */
  linePrefix(prefix: string): void {
    this.pendingPrefix = prefix;
  }

  /** A table cell boundary: " | " between cells of one row. */
  cell(): void {
    this.pendingCell = true;
  }

  private flush(): void {
    if (!this.empty) {
      if (this.pendingBreaks > 0) this.parts.push(this.pendingBreaks === 2 ? '\n\n' : '\n');
      else if (this.pendingCell) this.parts.push(' | ');
      else if (this.pendingSpace) this.parts.push(' ');
    }
    if (this.pendingPrefix !== '' && (this.empty || this.pendingBreaks > 0)) this.parts.push(this.pendingPrefix);
    this.pendingBreaks = 0;
    this.pendingSpace = false;
    this.pendingCell = false;
    this.pendingPrefix = '';
    this.empty = false;
  }

  result(): string {
    return this.parts.join('').replace(/\n{3,}/g, '\n\n').trim();
  }
}

/**
 * Readable text from HTML without a DOM library: drops script/style/noscript/svg/head (keeping
 * <title>), turns block elements into line breaks, list items into "- ", keeps link text, decodes
 * entities, collapses whitespace (except in <pre>), trims. Linear-time and safe on malformed HTML.
 */
export function htmlToText(html: string): { title: string; text: string } {
  const n = html.length;
  const out = new TextBuilder();
  const skip = new Map<string, number>();
  let skipTotal = 0;
  let preDepth = 0;
  let listDepth = 0;
  let title: string | undefined;
  // A second <head>, or one after the body started, is ignored (as browsers do).
  let headDone = false;
  // The newline right after <pre> is not content.
  let preStart = false;

  const setSkip = (name: string, count: number) => {
    skipTotal += count - (skip.get(name) ?? 0);
    skip.set(name, count);
    if (name === 'head' && count === 0) headDone = true;
  };
  const skipCount = (name: string) => skip.get(name) ?? 0;

  const emitText = (raw: string) => {
    if (raw === '') return;
    // Text outside head elements means the body has started, as in a browser.
    if (!headDone && skipTotal === skipCount('head') && /\S/.test(raw)) setSkip('head', 0);
    if (skipTotal > 0) return;
    let decoded = decodeEntities(raw.includes('\u0000') ? raw.replace(/\u0000/g, '') : raw);
    if (preDepth > 0) {
      if (preStart && decoded.startsWith('\n')) decoded = decoded.slice(1);
      else if (preStart && decoded.startsWith('\r\n')) decoded = decoded.slice(2);
      preStart = false;
      out.pre(decoded);
    } else {
      out.text(decoded);
    }
  };

  const blockBoundary = (name: string) => {
    if (PARAGRAPH_BLOCKS.has(name)) out.lineBreak(2);
    else if (LINE_BLOCKS.has(name)) out.lineBreak(1);
  };

  const startTag = (name: string, selfClosing: boolean) => {
    // <body>, or any element that cannot be in <head>, ends the head (open or implied).
    if (!headDone && name !== 'html' && name !== 'head' && (name === 'body' || !HEAD_CONTENT.has(name))) setSkip('head', 0);
    if ((skipCount('svg') > 0 || skipCount('math') > 0) && FOREIGN_BREAKOUT.has(name)) {
      setSkip('svg', 0);
      setSkip('math', 0);
    }
    if (SKIP_CONTAINERS.has(name) && !selfClosing) {
      if (name === 'head') {
        if (!headDone && skipCount('head') === 0) setSkip('head', 1);
      } else {
        setSkip(name, skipCount(name) + 1);
      }
      return;
    }
    if (skipTotal > 0) return;
    if (name === 'br') {
      out.lineBreak(1, true);
      return;
    }
    if (name === 'pre' || name === 'listing') {
      preDepth++;
      preStart = true;
    }
    if (name === 'ul' || name === 'ol') {
      // A list nested in a list item only starts a new line.
      out.lineBreak(listDepth > 0 ? 1 : 2);
      if (!selfClosing) listDepth++;
      return;
    }
    blockBoundary(name);
    if (name === 'li') out.linePrefix(`${'  '.repeat(Math.max(0, listDepth - 1))}- `);
    else if (name === 'td' || name === 'th') out.cell();
  };

  const endTag = (name: string) => {
    if (SKIP_CONTAINERS.has(name)) {
      if (skipCount(name) > 0) setSkip(name, skipCount(name) - 1);
      return;
    }
    if (skipTotal > 0) return;
    if (name === 'br') {
      out.lineBreak(1, true);
      return;
    }
    if ((name === 'pre' || name === 'listing') && preDepth > 0) preDepth--;
    if (name === 'ul' || name === 'ol') {
      if (listDepth > 0) listDepth--;
      out.lineBreak(listDepth > 0 ? 1 : 2);
      return;
    }
    blockBoundary(name);
  };

  /** End of a tag name: the first whitespace, "/" or ">". */
  const nameEnd = (from: number) => {
    let j = from;
    while (j < n) {
      const c = html.charCodeAt(j);
      if (isWhitespace(c) || c === SLASH || c === GT) break;
      j++;
    }
    return j;
  };

  /**
   * The ">" closing a start tag, skipping quoted attribute values. An unterminated quote means no
   * later quote of that kind exists, so falling back to the first ">" keeps the whole pass linear.
   */
  const tagEnd = (from: number) => {
    let j = from;
    while (j < n) {
      const c = html.charCodeAt(j);
      if (c === GT) return j;
      if (c === EQUALS) {
        let k = j + 1;
        while (k < n && isWhitespace(html.charCodeAt(k))) k++;
        const q = html.charCodeAt(k);
        if (q === DQUOTE || q === SQUOTE) {
          const close = html.indexOf(q === DQUOTE ? '"' : "'", k + 1);
          if (close === -1) return html.indexOf('>', from);
          j = close + 1;
          continue;
        }
        j = k;
        continue;
      }
      j++;
    }
    return -1;
  };

  /** Consumes a raw-text element's content (starting at `from`) up to its end tag; returns where parsing resumes. */
  const rawText = (name: string, from: number): number => {
    let content: string;
    let resume: number;
    if (name === 'plaintext') {
      content = html.slice(from);
      resume = n;
    } else {
      const pattern = endTagPattern(name);
      pattern.lastIndex = from;
      const found = pattern.exec(html);
      if (found) {
        content = html.slice(from, found.index);
        const gt = html.indexOf('>', found.index);
        resume = gt === -1 ? n : gt + 1;
      } else {
        content = html.slice(from);
        resume = n;
      }
    }
    if (name === 'title') {
      if (title === undefined && skipCount('svg') === 0 && skipCount('math') === 0) title = collapseWhitespace(decodeEntities(content));
    } else if (!DROP_RAW.has(name) && skipTotal === 0) {
      if (name === 'plaintext') out.pre(content);
      else emitText(content);
    }
    endTag(name);
    return resume;
  };

  let i = 0;
  // Text runs from `textStart` to the next real tag; a "<" that starts no tag stays inside it.
  let textStart = 0;
  while (i < n) {
    const lt = html.indexOf('<', i);
    if (lt === -1) break;
    const next = html.charCodeAt(lt + 1);
    const markup = next === 0x21 /* ! */ || next === 0x3f /* ? */ || next === SLASH || isAsciiLetter(next);
    if (!markup) {
      i = lt + 1;
      continue;
    }
    if (lt > textStart) emitText(html.slice(textStart, lt));

    if (next === 0x21 || next === 0x3f) {
      // Comments, doctypes, CDATA and processing instructions.
      if (html.startsWith('<!--', lt)) {
        const end = html.indexOf('-->', lt + 4);
        i = end === -1 ? n : end + 3;
      } else {
        const end = html.indexOf('>', lt + 2);
        i = end === -1 ? n : end + 1;
      }
    } else if (next === SLASH) {
      if (!isAsciiLetter(html.charCodeAt(lt + 2))) {
        // "</>" is ignored; "</ …>" and friends are bogus comments.
        const end = html.indexOf('>', lt + 2);
        i = end === -1 ? n : end + 1;
      } else {
        const end = nameEnd(lt + 2);
        const name = html.slice(lt + 2, end).toLowerCase();
        const close = html.indexOf('>', end);
        i = close === -1 ? n : close + 1;
        endTag(name);
      }
    } else {
      const end = nameEnd(lt + 1);
      const name = html.slice(lt + 1, end).toLowerCase();
      const close = tagEnd(end);
      if (close === -1) {
        // A tag cut off by the end of the input is dropped, as browsers do.
        textStart = i = n;
        break;
      }
      const selfClosing = html.charCodeAt(close - 1) === SLASH;
      i = close + 1;
      startTag(name, selfClosing);
      if (RAW_TEXT.has(name) && !selfClosing) i = rawText(name, i);
    }
    textStart = i;
  }
  if (textStart < n) emitText(html.slice(textStart));

  return { title: title ?? '', text: out.result() };
}
