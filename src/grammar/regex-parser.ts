import { GrammarDefinitionError, lineColumn } from './errors.js';
import { CharSet, DIGIT_RANGES, SPACE_RANGES, WORD_RANGES, type RegexNode } from './regex-ast.js';

export interface RegexFlags {
  /** `i`: case-insensitive. */
  caseInsensitive?: boolean;
  /** `s`: `.` matches newline too. */
  dotAll?: boolean;
  /** `m`: `^`/`$` match at line boundaries. */
  multiLine?: boolean;
  /** `x`: whitespace and `#` comments outside classes are ignored. */
  extended?: boolean;
}

/** Parses `i`, `s`, `m`, `x` (and the no-op `u`) flag letters. */
export function parseFlagLetters(letters: string, base: RegexFlags = {}): RegexFlags | undefined {
  const flags = { ...base };
  for (const letter of letters) {
    if (letter === 'i') flags.caseInsensitive = true;
    else if (letter === 's') flags.dotAll = true;
    else if (letter === 'm') flags.multiLine = true;
    else if (letter === 'x') flags.extended = true;
    else if (letter !== 'u') return undefined;
  }
  return flags;
}

/** Largest `{m,n}` bound accepted (RE2 uses 1000). */
const MAX_REPEAT = 1000;

/**
 * Parses the regex dialect OpenAI's `regex` formats and Lark/LLGuidance terminals use (Rust
 * `regex` / Python `re` common ground) into a syntax tree. Backreferences and lookaround are
 * rejected: they cannot be matched in linear time.
 */
export function parseRegex(source: string, flags: RegexFlags = {}): RegexNode {
  return new RegexParser(source).parse(flags);
}

class RegexParser {
  private readonly cps: number[];
  private pos = 0;

  constructor(private readonly source: string) {
    this.cps = Array.from(source, (ch) => ch.codePointAt(0)!);
  }

  parse(flags: RegexFlags): RegexNode {
    const node = this.alternation(flags);
    if (this.pos < this.cps.length) this.fail(this.peek() === 41 ? "unmatched ')'" : 'unexpected character');
    return node;
  }

  private fail(reason: string, at = this.pos): never {
    const { column } = lineColumn(this.cps, at);
    throw new GrammarDefinitionError(`invalid regex /${this.source}/: ${reason} at offset ${at}`, 1, column);
  }

  private peek(offset = 0): number | undefined {
    return this.cps[this.pos + offset];
  }

  private eat(cp: number): boolean {
    if (this.cps[this.pos] !== cp) return false;
    this.pos++;
    return true;
  }

  private alternation(flags: RegexFlags): RegexNode {
    const branches = [this.concatenation(flags)];
    while (this.eat(124 /* | */)) branches.push(this.concatenation(flags));
    return branches.length === 1 ? branches[0] : { kind: 'alt', items: branches };
  }

  private concatenation(flags: RegexFlags): RegexNode {
    const items: RegexNode[] = [];
    for (;;) {
      this.skipExtended(flags);
      const cp = this.peek();
      if (cp === undefined || cp === 124 || cp === 41) break;
      // an inline flag group `(?i)` changes the flags for the rest of this group
      const inline = this.inlineFlags(flags);
      if (inline) {
        flags = inline;
        continue;
      }
      items.push(this.quantified(flags));
    }
    if (items.length === 0) return { kind: 'empty' };
    return items.length === 1 ? items[0] : { kind: 'concat', items };
  }

  private skipExtended(flags: RegexFlags): void {
    if (!flags.extended) return;
    for (;;) {
      const cp = this.peek();
      if (cp === 32 || cp === 9 || cp === 10 || cp === 13) this.pos++;
      else if (cp === 35 /* # */) {
        while (this.pos < this.cps.length && this.cps[this.pos] !== 10) this.pos++;
      } else return;
    }
  }

  /** `(?flags)` with no body: returns the new flags, or undefined if this is not one. */
  private inlineFlags(flags: RegexFlags): RegexFlags | undefined {
    if (this.peek() !== 40 || this.peek(1) !== 63) return undefined;
    let end = this.pos + 2;
    let letters = '';
    while (end < this.cps.length && /[a-zA-Z-]/.test(String.fromCodePoint(this.cps[end]))) letters += String.fromCodePoint(this.cps[end++]);
    if (this.cps[end] !== 41 || letters === '') return undefined;
    const next = applyFlagSpec(letters, flags);
    if (!next) this.fail(`unknown inline flags '${letters}'`);
    this.pos = end + 1;
    return next;
  }

  private quantified(flags: RegexFlags): RegexNode {
    const start = this.pos;
    let node = this.atom(flags);
    for (;;) {
      this.skipExtended(flags);
      const cp = this.peek();
      let min: number;
      let max: number;
      if (cp === 42) [min, max] = [0, Infinity];
      else if (cp === 43) [min, max] = [1, Infinity];
      else if (cp === 63) [min, max] = [0, 1];
      else if (cp === 123) {
        const bounds = this.braces();
        if (!bounds) return node;
        [min, max] = bounds;
        this.pos--; // braces() consumed through '}'; the shared ++ below steps over it
      } else return node;
      this.pos++;
      if (node.kind === 'assert') this.fail('nothing to repeat', start);
      // lazy (`*?`) and possessive (`*+`) variants describe the same language here
      if (this.peek() === 63 || this.peek() === 43) this.pos++;
      node = { kind: 'repeat', node, min, max };
    }
  }

  /** `{m}`, `{m,}`, `{m,n}`, `{,n}`; anything else is a literal `{` (as in Python). */
  private braces(): [number, number] | undefined {
    const rest = String.fromCodePoint(...this.cps.slice(this.pos, this.pos + 24));
    const match = /^\{(\d*)(,(\d*))?\}/.exec(rest);
    if (!match || (match[1] === '' && (match[2] === undefined || match[3] === ''))) return undefined;
    const min = match[1] === '' ? 0 : Number(match[1]);
    const max = match[2] === undefined ? min : match[3] === '' ? Infinity : Number(match[3]);
    if (min > MAX_REPEAT || (max !== Infinity && max > MAX_REPEAT)) this.fail(`repetition count above ${MAX_REPEAT}`);
    if (max < min) this.fail('repetition range out of order');
    this.pos += match[0].length;
    return [min, max];
  }

  private atom(flags: RegexFlags): RegexNode {
    const cp = this.cps[this.pos];
    switch (cp) {
      case 40: // (
        return this.group(flags);
      case 91: // [
        return { kind: 'char', set: this.charClass(flags) };
      case 46: // .
        this.pos++;
        return { kind: 'char', set: flags.dotAll ? new CharSet([], true) : new CharSet([10, 10], true) };
      case 94: // ^
        this.pos++;
        return { kind: 'assert', assertion: flags.multiLine ? 'line_start' : 'text_start' };
      case 36: // $
        this.pos++;
        return { kind: 'assert', assertion: flags.multiLine ? 'line_end' : 'text_end' };
      case 92: // backslash
        return this.escapeAtom(flags);
      case 42:
      case 43:
      case 63:
        return this.fail('nothing to repeat');
      default:
        this.pos++;
        return { kind: 'char', set: CharSet.of(cp, flags.caseInsensitive) };
    }
  }

  private group(flags: RegexFlags): RegexNode {
    const open = this.pos;
    this.pos++;
    let inner = flags;
    if (this.eat(63 /* ? */)) {
      const cp = this.peek();
      if (cp === 58 /* : */) this.pos++;
      else if (cp === 80 /* P */ && this.peek(1) === 60) {
        this.pos += 2;
        this.groupName();
      } else if (cp === 60 /* < */ && this.peek(1) !== 61 && this.peek(1) !== 33) {
        this.pos++;
        this.groupName();
      } else if (cp === 61 || cp === 33 || cp === 60) {
        this.fail('lookaround assertions are not supported (they cannot be matched in linear time)', open);
      } else {
        let letters = '';
        while (this.pos < this.cps.length && this.cps[this.pos] !== 58 && this.cps[this.pos] !== 41) letters += String.fromCodePoint(this.cps[this.pos++]);
        const next = this.eat(58) ? applyFlagSpec(letters, flags) : undefined;
        if (!next) this.fail(`unsupported group syntax '(?${letters}'`, open);
        inner = next;
      }
    }
    const node = this.alternation(inner);
    if (!this.eat(41)) this.fail("missing ')'", open);
    return node;
  }

  private groupName(): void {
    while (this.pos < this.cps.length && this.cps[this.pos] !== 62) this.pos++;
    if (!this.eat(62)) this.fail('unterminated group name');
  }

  private escapeAtom(flags: RegexFlags): RegexNode {
    const start = this.pos;
    this.pos++;
    const cp = this.cps[this.pos];
    if (cp === undefined) this.fail('trailing backslash', start);
    const ch = String.fromCodePoint(cp);
    switch (ch) {
      case 'A':
        this.pos++;
        return { kind: 'assert', assertion: 'text_start' };
      case 'z':
      case 'Z':
        this.pos++;
        return { kind: 'assert', assertion: 'text_end' };
      case 'b':
        this.pos++;
        return { kind: 'assert', assertion: 'word_boundary' };
      case 'B':
        this.pos++;
        return { kind: 'assert', assertion: 'not_word_boundary' };
    }
    if (/[1-9]/.test(ch)) this.fail('backreferences are not supported (they cannot be matched in linear time)', start);
    this.pos = start;
    return { kind: 'char', set: this.escapeSet(flags) };
  }

  /** A backslash escape that stands for a set of code points (inside or outside a class). */
  private escapeSet(flags: RegexFlags): CharSet {
    const start = this.pos;
    this.pos++; // the backslash
    const cp = this.cps[this.pos++];
    if (cp === undefined) this.fail('trailing backslash', start);
    const ch = String.fromCodePoint(cp);
    const ci = flags.caseInsensitive;
    switch (ch) {
      case 'd':
        return new CharSet(DIGIT_RANGES);
      case 'D':
        return new CharSet(DIGIT_RANGES, true);
      case 'w':
        return new CharSet(WORD_RANGES);
      case 'W':
        return new CharSet(WORD_RANGES, true);
      case 's':
        return new CharSet(SPACE_RANGES);
      case 'S':
        return new CharSet(SPACE_RANGES, true);
      case 'p':
      case 'P':
        return this.property(ch === 'P', start);
    }
    return CharSet.of(this.escapedCodePoint(ch, start), ci);
  }

  private escapedCodePoint(ch: string, start: number): number {
    switch (ch) {
      case 'n':
        return 10;
      case 't':
        return 9;
      case 'r':
        return 13;
      case 'f':
        return 12;
      case 'v':
        return 11;
      case 'a':
        return 7;
      case 'e':
        return 27;
      case '0':
        return 0;
      case 'x':
        return this.braced() ?? this.hex(2, start);
      case 'u':
        return this.braced() ?? this.unicodeEscape(start);
      case 'U':
        return this.hex(8, start);
    }
    if (/[a-zA-Z0-9]/.test(ch)) this.fail(`unknown escape '\\${ch}'`, start);
    return ch.codePointAt(0)!;
  }

  private braced(): number | undefined {
    if (this.peek() !== 123) return undefined;
    const close = this.cps.indexOf(125, this.pos);
    const digits = close < 0 ? '' : String.fromCodePoint(...this.cps.slice(this.pos + 1, close));
    if (!/^[0-9a-fA-F]{1,6}$/.test(digits) || parseInt(digits, 16) > 0x10ffff) this.fail('invalid \\x{…}/\\u{…} escape');
    this.pos = close + 1;
    return parseInt(digits, 16);
  }

  private hex(count: number, start: number): number {
    const digits = String.fromCodePoint(...this.cps.slice(this.pos, this.pos + count));
    if (digits.length !== count || !/^[0-9a-fA-F]+$/.test(digits)) this.fail('invalid hex escape', start);
    this.pos += count;
    const value = parseInt(digits, 16);
    if (value > 0x10ffff) this.fail('code point out of range', start);
    return value;
  }

  /** `\uXXXX`, combining a surrogate pair written as two escapes into one code point. */
  private unicodeEscape(start: number): number {
    const high = this.hex(4, start);
    if (high >= 0xd800 && high <= 0xdbff && this.peek() === 92 && this.peek(1) === 117) {
      const save = this.pos;
      this.pos += 2;
      const low = this.hex(4, start);
      if (low >= 0xdc00 && low <= 0xdfff) return 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
      this.pos = save;
    }
    return high;
  }

  private property(negated: boolean, start: number): CharSet {
    let name: string;
    if (this.peek() === 123) {
      const close = this.cps.indexOf(125, this.pos);
      if (close < 0) this.fail('unterminated \\p{…}', start);
      name = String.fromCodePoint(...this.cps.slice(this.pos + 1, close));
      this.pos = close + 1;
    } else {
      const cp = this.cps[this.pos++];
      if (cp === undefined) this.fail('incomplete \\p', start);
      name = String.fromCodePoint(cp);
    }
    let tester: RegExp;
    try {
      // single-code-point test: no backtracking over input is possible
      tester = new RegExp(`^\\p{${name}}$`, 'u');
    } catch {
      return this.fail(`unknown Unicode property '${name}'`, start);
    }
    return new CharSet([], negated, false, [(codePoint) => tester.test(String.fromCodePoint(codePoint))]);
  }

  private charClass(flags: RegexFlags): CharSet {
    const open = this.pos;
    this.pos++;
    const negated = this.eat(94 /* ^ */);
    const ranges: number[] = [];
    const tests: Array<(cp: number) => boolean> = [];
    let first = true;
    for (;;) {
      const cp = this.peek();
      if (cp === undefined) this.fail("missing ']'", open);
      if (cp === 93 && !first) {
        this.pos++;
        break;
      }
      first = false;
      if (cp === 91 && this.peek(1) === 58) {
        const posix = this.posixClass();
        if (posix) {
          addSet(posix, ranges, tests);
          continue;
        }
      }
      const lo = this.classAtom(flags);
      if (typeof lo !== 'number') {
        addSet(lo, ranges, tests);
        continue;
      }
      if (this.peek() === 45 /* - */ && this.peek(1) !== 93 && this.peek(1) !== undefined) {
        this.pos++;
        const hi = this.classAtom(flags);
        if (typeof hi !== 'number') this.fail('invalid range in character class');
        if (hi < lo) this.fail('character class range out of order');
        ranges.push(lo, hi);
      } else ranges.push(lo, lo);
    }
    return new CharSet(ranges, negated, flags.caseInsensitive ?? false, tests);
  }

  /** One class member: a code point, or a set (`\d`, `\p{…}`). */
  private classAtom(flags: RegexFlags): number | CharSet {
    const cp = this.cps[this.pos];
    if (cp !== 92) {
      this.pos++;
      return cp;
    }
    const next = this.cps[this.pos + 1];
    if (next === 98 /* b */) {
      this.pos += 2;
      return 8; // backspace inside a class
    }
    const set = this.escapeSet(flags);
    // a single escaped code point (`\n`, `\-`, `\u00e9`) can start a range; `\d` and `\p{…}` cannot
    const isSingle = set.ranges.length === 2 && set.ranges[0] === set.ranges[1] && !set.negated && set.tests.length === 0;
    return isSingle ? set.ranges[0] : set;
  }

  private posixClass(): CharSet | undefined {
    const rest = String.fromCodePoint(...this.cps.slice(this.pos, this.pos + 12));
    const match = /^\[:(\^?)([a-z]+):\]/.exec(rest);
    if (!match) return undefined;
    const ranges = POSIX[match[2]];
    if (!ranges) this.fail(`unknown POSIX class '${match[2]}'`);
    this.pos += match[0].length;
    return new CharSet(ranges, match[1] === '^');
  }
}

const POSIX: Record<string, number[]> = {
  alpha: [65, 90, 97, 122],
  digit: DIGIT_RANGES,
  alnum: [48, 57, 65, 90, 97, 122],
  upper: [65, 90],
  lower: [97, 122],
  space: [9, 13, 32, 32],
  blank: [9, 9, 32, 32],
  xdigit: [48, 57, 65, 70, 97, 102],
  word: WORD_RANGES,
  punct: [33, 47, 58, 64, 91, 96, 123, 126],
  cntrl: [0, 31, 127, 127],
  print: [32, 126],
  graph: [33, 126],
  ascii: [0, 127],
};

/** Merges a member set into a class under construction (a negated member becomes a test). */
function addSet(set: CharSet, ranges: number[], tests: Array<(cp: number) => boolean>): void {
  if (!set.negated && !set.caseInsensitive) {
    ranges.push(...set.ranges);
    tests.push(...set.tests);
  } else tests.push((cp) => set.has(cp));
}

/** `i-s` style flag specs inside `(?…)`: letters before `-` turn on, after it turn off. */
function applyFlagSpec(spec: string, flags: RegexFlags): RegexFlags | undefined {
  const [on, off = ''] = spec.split('-');
  const next = parseFlagLetters(on, flags);
  if (!next) return undefined;
  for (const letter of off) {
    if (letter === 'i') next.caseInsensitive = false;
    else if (letter === 's') next.dotAll = false;
    else if (letter === 'm') next.multiLine = false;
    else if (letter === 'x') next.extended = false;
    else if (letter !== 'u') return undefined;
  }
  return next;
}
