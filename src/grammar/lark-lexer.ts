import { GrammarDefinitionError } from './errors.js';
import type { Position } from './lark-ast.js';

// The tokens of a Lark grammar: names, string and regex literals, numbers, operators, `%directives`.

export type TokenKind = 'name' | 'string' | 'regex' | 'number' | 'op' | 'directive' | 'eof';

export interface Token {
  kind: TokenKind;
  text: string;
  /** For strings: the decoded value; for regexes: the source; for directives: the name. */
  value: string;
  /** `i` after a string; flag letters after a regex. */
  flags: string;
  at: Position;
  /** First token on its line (a new statement may begin here). */
  lineStart: boolean;
}

/** The grammar text as tokens, ending with an `eof` token; a character no token starts with fails. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  let lineBegin = 0;
  let sawTokenOnLine = false;
  const fail = (reason: string, at = i): never => {
    throw new GrammarDefinitionError(reason, line, at - lineBegin + 1);
  };
  while (i < source.length) {
    const ch = source[i];
    if (ch === '\n') {
      i++;
      line++;
      lineBegin = i;
      sawTokenOnLine = false;
      continue;
    }
    if (ch === ' ' || ch === '\t' || ch === '\r' || ch === '\f') {
      i++;
      continue;
    }
    if (ch === '/' && source[i + 1] === '/') {
      while (i < source.length && source[i] !== '\n') i++;
      continue;
    }
    // Lark also accepts `#` comments at the start of a line
    if (ch === '#' && !sawTokenOnLine) {
      while (i < source.length && source[i] !== '\n') i++;
      continue;
    }
    const at = { line, column: i - lineBegin + 1 };
    const start = i;
    const push = (kind: TokenKind, value: string, flags = '') => {
      tokens.push({ kind, text: source.slice(start, i), value, flags, at, lineStart: !sawTokenOnLine });
      sawTokenOnLine = true;
    };
    if (/[A-Za-z_]/.test(ch)) {
      while (i < source.length && /[A-Za-z0-9_]/.test(source[i])) i++;
      push('name', source.slice(start, i));
    } else if (/[0-9]/.test(ch) || (ch === '-' && /[0-9]/.test(source[i + 1] ?? ''))) {
      i++;
      while (i < source.length && /[0-9]/.test(source[i])) i++;
      push('number', source.slice(start, i));
    } else if (ch === '"' || ch === "'") {
      i++;
      let raw = '';
      while (i < source.length && source[i] !== ch) {
        if (source[i] === '\n') fail('unterminated string literal', start);
        if (source[i] === '\\') raw += source[i++];
        raw += source[i++];
      }
      if (i >= source.length) fail('unterminated string literal', start);
      i++;
      const value = decodeStringEscapes(raw, (reason) => fail(reason, start));
      let flags = '';
      if (source[i] === 'i' && !/[A-Za-z0-9_]/.test(source[i + 1] ?? '')) flags = source[i++];
      push('string', value, flags);
    } else if (ch === '/') {
      i++;
      let body = '';
      while (i < source.length && source[i] !== '/') {
        if (source[i] === '\n') fail('unterminated regex literal', start);
        if (source[i] === '\\') {
          // `\/` is an escaped delimiter; every other escape belongs to the regex
          if (source[i + 1] === '/') {
            body += '/';
            i += 2;
            continue;
          }
          body += source[i++];
        }
        body += source[i++];
      }
      if (i >= source.length) fail('unterminated regex literal', start);
      i++;
      let flags = '';
      while (/[imslux]/.test(source[i] ?? '')) flags += source[i++];
      push('regex', body, flags);
    } else if (ch === '%') {
      i++;
      while (i < source.length && /[a-z_]/.test(source[i])) i++;
      push('directive', source.slice(start + 1, i));
    } else {
      const two = source.slice(i, i + 2);
      if (two === '->' || two === '..') {
        i += 2;
        push('op', two);
      } else if (':|()[]?*+!~.,{}<>&'.includes(ch)) {
        i++;
        push('op', ch);
      } else fail(`unexpected character '${ch}'`);
    }
  }
  tokens.push({ kind: 'eof', text: '', value: '', flags: '', at: { line, column: i - lineBegin + 1 }, lineStart: true });
  return tokens;
}

/** Python-style escapes inside Lark string literals. */
function decodeStringEscapes(raw: string, fail: (reason: string) => never): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] !== '\\') {
      out += raw[i];
      continue;
    }
    const next = raw[++i];
    switch (next) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '0':
        out += '\0';
        break;
      case 'x':
      case 'u':
      case 'U': {
        const count = next === 'x' ? 2 : next === 'u' ? 4 : 8;
        const digits = raw.slice(i + 1, i + 1 + count);
        if (digits.length !== count || !/^[0-9a-fA-F]+$/.test(digits)) fail(`invalid \\${next} escape in string literal`);
        const value = parseInt(digits, 16);
        if (value > 0x10ffff) fail('code point out of range in string literal');
        out += String.fromCodePoint(value);
        i += count;
        break;
      }
      default:
        // `\"`, `\\`, `\'`; an unknown escape keeps its backslash (as Python does)
        out += next === '"' || next === "'" || next === '\\' ? next : `\\${next}`;
    }
  }
  return out;
}

/** A token as an error message names it. */
export function describe(token: Token): string {
  if (token.kind === 'eof') return 'end of grammar';
  return `'${token.text}'`;
}
