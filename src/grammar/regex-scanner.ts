import { GrammarDefinitionError, lineColumn } from './errors.js';
import { CharSet, DIGIT_RANGES, SPACE_RANGES, WORD_RANGES } from './regex-ast.js';
import type { RegexFlags } from './regex-flags.js';

/**
 * The lexical side of the regex parser: a cursor over the pattern's code points, and the pieces
 * of a pattern that stand for one set of code points — escapes (`\d`, `\x{…}`, `\p{…}`) and
 * character classes (`[a-z]`, `[[:alpha:]]`). The structure (groups, repeats) is `RegexParser`'s.
 */
export class RegexScanner {
  protected readonly cps: number[];
  protected pos = 0;

  constructor(protected readonly source: string) {
    this.cps = Array.from(source, (ch) => ch.codePointAt(0)!);
  }

  protected fail(reason: string, at = this.pos): never {
    const { column } = lineColumn(this.cps, at);
    throw new GrammarDefinitionError(`invalid regex /${this.source}/: ${reason} at offset ${at}`, 1, column);
  }

  protected peek(offset = 0): number | undefined {
    return this.cps[this.pos + offset];
  }

  protected eat(cp: number): boolean {
    if (this.cps[this.pos] !== cp) return false;
    this.pos++;
    return true;
  }

  /** A backslash escape that stands for a set of code points (inside or outside a class). */
  protected escapeSet(flags: RegexFlags): CharSet {
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

  protected charClass(flags: RegexFlags): CharSet {
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
