/**
 * The regular-expression syntax tree shared by regex formats and Lark terminals. Everything
 * works on Unicode code points; flags (`i`, `s`, `m`) are resolved while parsing, so a node
 * carries its own case-folding and dot behaviour and terminals built from several pieces (a
 * Lark string with `i`, a regex without) combine without a flag context.
 */
export type RegexNode =
  | { kind: 'empty' }
  | { kind: 'char'; set: CharSet }
  | { kind: 'concat'; items: RegexNode[] }
  | { kind: 'alt'; items: RegexNode[] }
  /** `max` = Infinity for unbounded. Lazy quantifiers match the same language and are not marked. */
  | { kind: 'repeat'; node: RegexNode; min: number; max: number }
  | { kind: 'assert'; assertion: Assertion };

/** Zero-width assertions: `^`/`$` (per the `m` flag), `\A`/`\z`, `\b`/`\B`. */
export type Assertion = 'line_start' | 'line_end' | 'text_start' | 'text_end' | 'word_boundary' | 'not_word_boundary';

/** Tests a single code point against a Unicode property (e.g. `\p{L}`). */
type CodePointTest = (codePoint: number) => boolean;

/**
 * A set of code points: sorted-or-not ranges plus optional Unicode property tests, optionally
 * negated and case-insensitive. Matching one code point never backtracks, so using a JavaScript
 * RegExp for a single-code-point property test is safe.
 */
export class CharSet {
  constructor(
    /** Inclusive [lo, hi] pairs, flattened. */
    readonly ranges: number[],
    readonly negated = false,
    readonly caseInsensitive = false,
    readonly tests: CodePointTest[] = [],
  ) {}

  static of(codePoint: number, caseInsensitive = false): CharSet {
    return new CharSet([codePoint, codePoint], false, caseInsensitive);
  }

  /** The single code point this set is, if it is exactly one (for literal fast paths). */
  get single(): number | undefined {
    if (this.negated || this.caseInsensitive || this.tests.length > 0 || this.ranges.length !== 2 || this.ranges[0] !== this.ranges[1]) return undefined;
    return this.ranges[0];
  }

  has(codePoint: number): boolean {
    let found = this.contains(codePoint);
    if (!found && this.caseInsensitive) {
      for (const variant of caseVariants(codePoint)) {
        if (this.contains(variant)) {
          found = true;
          break;
        }
      }
    }
    return found !== this.negated;
  }

  private contains(codePoint: number): boolean {
    const r = this.ranges;
    for (let i = 0; i < r.length; i += 2) if (codePoint >= r[i] && codePoint <= r[i + 1]) return true;
    for (const test of this.tests) if (test(codePoint)) return true;
    return false;
  }
}

const variantCache = new Map<number, number[]>();

/** Simple case folding: the lower- and upper-case forms that are single code points. */
function caseVariants(codePoint: number): number[] {
  if (codePoint < 128) {
    if (codePoint >= 65 && codePoint <= 90) return [codePoint + 32];
    if (codePoint >= 97 && codePoint <= 122) return [codePoint - 32];
    return [];
  }
  let cached = variantCache.get(codePoint);
  if (cached) return cached;
  const ch = String.fromCodePoint(codePoint);
  cached = [];
  for (const variant of [ch.toLowerCase(), ch.toUpperCase()]) {
    const cp = variant.codePointAt(0)!;
    if (variant.length === String.fromCodePoint(cp).length && cp !== codePoint) cached.push(cp);
  }
  if (variantCache.size < 10_000) variantCache.set(codePoint, cached);
  return cached;
}

export const DIGIT_RANGES = [48, 57];
export const WORD_RANGES = [48, 57, 65, 90, 95, 95, 97, 122];
/** `\s`: space, \t \n \v \f \r, and the common Unicode spaces. */
export const SPACE_RANGES = [9, 13, 32, 32, 0x85, 0x85, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000];

export function isWordChar(codePoint: number): boolean {
  return (codePoint >= 48 && codePoint <= 57) || (codePoint >= 65 && codePoint <= 90) || codePoint === 95 || (codePoint >= 97 && codePoint <= 122);
}

export function literal(text: string, caseInsensitive = false): RegexNode {
  const items: RegexNode[] = [];
  for (const ch of text) items.push({ kind: 'char', set: CharSet.of(ch.codePointAt(0)!, caseInsensitive) });
  if (items.length === 1) return items[0];
  return items.length === 0 ? { kind: 'empty' } : { kind: 'concat', items };
}

/** The code points a node matches if it is a plain case-sensitive literal (a fast path), else undefined. */
export function literalCodePoints(node: RegexNode): number[] | undefined {
  if (node.kind === 'empty') return [];
  if (node.kind === 'char') {
    const single = node.set.single;
    return single === undefined ? undefined : [single];
  }
  if (node.kind === 'concat') {
    const out: number[] = [];
    for (const item of node.items) {
      const part = literalCodePoints(item);
      if (part === undefined) return undefined;
      out.push(...part);
    }
    return out;
  }
  return undefined;
}
