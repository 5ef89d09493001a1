import { CharSet, type RegexNode } from './regex-ast.js';
import { applyFlagSpec, type RegexFlags } from './regex-flags.js';
import { RegexScanner } from './regex-scanner.js';

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

class RegexParser extends RegexScanner {
  parse(flags: RegexFlags): RegexNode {
    const node = this.alternation(flags);
    if (this.pos < this.cps.length) this.fail(this.peek() === 41 ? "unmatched ')'" : 'unexpected character');
    return node;
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
}
