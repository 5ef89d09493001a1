import { GrammarDefinitionError } from './errors.js';
import { isTerminalName, type LarkExpr, type LarkGrammar } from './lark-ast.js';
import { describe, tokenize, type Token } from './lark-lexer.js';

/**
 * Parser for the Lark dialect OpenAI accepts for custom tools (LLGuidance's Lark subset):
 * rules (lowercase) and terminals (UPPERCASE), `?rule` / `!rule`, priorities (ignored), string
 * literals (with `i`), regex literals `/…/flags`, `"a".."z"` ranges, `?` `*` `+` `~ n` `~ n..m`,
 * `|`, `( … )`, `[ … ]`, `-> alias` (ignored), `%import common…`, `%ignore`, `//` comments.
 * The result is a syntax tree; grammar-compiler.ts turns it into something to recognize with.
 */
export function parseLark(source: string): LarkGrammar {
  return new LarkParser(tokenize(source)).parse();
}

class LarkParser {
  private pos = 0;
  private readonly grammar: LarkGrammar = { definitions: [], ignore: [], imports: [] };

  constructor(private readonly tokens: Token[]) {}

  parse(): LarkGrammar {
    while (this.peek().kind !== 'eof') this.statement();
    return this.grammar;
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.pos + offset, this.tokens.length - 1)];
  }

  private next(): Token {
    return this.tokens[Math.min(this.pos++, this.tokens.length - 1)];
  }

  private fail(reason: string, token = this.peek()): never {
    throw new GrammarDefinitionError(reason, token.at.line, token.at.column);
  }

  /** Valid LLGuidance syntax this recognizer does not implement. */
  private unsupported(reason: string, token: Token): never {
    throw new GrammarDefinitionError(reason, token.at.line, token.at.column, true);
  }

  private expectOp(op: string): Token {
    const token = this.next();
    if (token.kind !== 'op' || token.value !== op) this.fail(`expected '${op}', got ${describe(token)}`, token);
    return token;
  }

  /** Whether a new statement starts at the current token (definitions begin a line). */
  private atStatementStart(): boolean {
    const token = this.peek();
    if (token.kind === 'eof') return true;
    if (!token.lineStart) return false;
    if (token.kind === 'directive') return true;
    let k = 0;
    if (token.kind === 'op' && (token.value === '?' || token.value === '!')) k++;
    if (this.peek(k).kind !== 'name') return false;
    k++;
    if (this.peek(k).kind === 'op' && this.peek(k).value === '.' && this.peek(k + 1).kind === 'number') k += 2;
    return this.peek(k).kind === 'op' && this.peek(k).value === ':';
  }

  private statement(): void {
    const token = this.peek();
    if (token.kind === 'directive') return this.directive();
    if (token.kind === 'op' && (token.value === '?' || token.value === '!')) this.next(); // tree-shaping only
    const name = this.next();
    if (name.kind !== 'name') this.fail(`expected a rule or terminal definition, got ${describe(name)}`, name);
    if (this.peek().kind === 'op' && this.peek().value === '.') {
      this.next();
      if (this.next().kind !== 'number') this.fail('expected a priority number after \'.\'');
    }
    if (this.peek().kind === 'op' && this.peek().value === '{') this.fail('rule templates are not supported');
    this.expectOp(':');
    const expr = this.expansions();
    if (!this.atStatementStart()) this.fail(`unexpected ${describe(this.peek())}`);
    this.grammar.definitions.push({ name: name.value, isTerminal: isTerminalName(name.value), expr, at: name.at });
  }

  private directive(): void {
    const token = this.next();
    switch (token.value) {
      case 'ignore': {
        const expr = this.expansions();
        this.grammar.ignore.push({ expr, at: token.at });
        return;
      }
      case 'import':
        return this.importStatement(token);
      case 'declare':
        // declared terminals come from outside the grammar (e.g. a postlexer): nothing can match them
        while (!this.atStatementStart()) this.next();
        return;
      default:
        if (token.value === 'llguidance') this.unsupported('the %llguidance directive is not supported', token);
        this.fail(`the %${token.value} directive is not supported`, token);
    }
  }

  private importStatement(token: Token): void {
    const path: string[] = [];
    const first = this.next();
    if (first.kind !== 'name') this.fail('expected a module name after %import', first);
    path.push(first.value);
    while (this.peek().kind === 'op' && this.peek().value === '.' && !this.peek().lineStart) {
      this.next();
      const part = this.next();
      if (part.kind !== 'name') this.fail('expected a name in the import path', part);
      path.push(part.value);
    }
    if (this.peek().kind === 'op' && this.peek().value === '(' && !this.peek().lineStart) {
      // %import module (A, B, c)
      this.next();
      const module = path.join('.');
      for (;;) {
        const name = this.next();
        if (name.kind !== 'name') this.fail('expected a name in the import list', name);
        this.grammar.imports.push({ module, name: name.value, alias: name.value, at: name.at });
        const sep = this.next();
        if (sep.kind === 'op' && sep.value === ')') break;
        if (sep.kind !== 'op' || sep.value !== ',') this.fail("expected ',' or ')' in the import list", sep);
      }
      return;
    }
    if (path.length < 2) this.fail('expected %import module.NAME', token);
    const name = path.pop()!;
    let alias = name;
    if (this.peek().kind === 'op' && this.peek().value === '->' && !this.peek().lineStart) {
      this.next();
      const aliasToken = this.next();
      if (aliasToken.kind !== 'name') this.fail("expected a name after '->'", aliasToken);
      alias = aliasToken.value;
    }
    this.grammar.imports.push({ module: path.join('.'), name, alias, at: token.at });
  }

  private expansions(): LarkExpr {
    const alternatives = [this.alternative()];
    while (this.peek().kind === 'op' && this.peek().value === '|') {
      this.next();
      alternatives.push(this.alternative());
    }
    return alternatives.length === 1 ? alternatives[0] : { kind: 'alt', items: alternatives };
  }

  private alternative(): LarkExpr {
    const items: LarkExpr[] = [];
    for (;;) {
      if (this.atStatementStart()) break;
      const token = this.peek();
      if (token.kind === 'op' && (token.value === '|' || token.value === ')' || token.value === ']')) break;
      if (token.kind === 'op' && token.value === '->') {
        // an alias only names the tree node
        this.next();
        const alias = this.next();
        if (alias.kind !== 'name') this.fail("expected a name after '->'", alias);
        break;
      }
      items.push(this.item());
    }
    return items.length === 1 ? items[0] : { kind: 'seq', items };
  }

  private item(): LarkExpr {
    let expr = this.atom();
    for (;;) {
      const token = this.peek();
      if (token.kind !== 'op' || token.lineStart) return expr;
      if (token.value === '?') expr = { kind: 'repeat', expr, min: 0, max: 1 };
      else if (token.value === '*') expr = { kind: 'repeat', expr, min: 0, max: Infinity };
      else if (token.value === '+') expr = { kind: 'repeat', expr, min: 1, max: Infinity };
      else if (token.value === '~') {
        this.next();
        const min = this.count();
        let max = min;
        if (this.peek().kind === 'op' && this.peek().value === '..') {
          this.next();
          max = this.count();
        }
        if (max < min) this.fail('repetition range out of order');
        expr = { kind: 'repeat', expr, min, max };
        continue;
      } else return expr;
      this.next();
    }
  }

  private count(): number {
    const token = this.next();
    if (token.kind !== 'number' || Number(token.value) < 0) this.fail('expected a repetition count', token);
    const value = Number(token.value);
    if (value > 1000) this.fail('repetition count above 1000', token);
    return value;
  }

  private atom(): LarkExpr {
    const token = this.next();
    switch (token.kind) {
      case 'name':
        return { kind: 'symbol', name: token.value, at: token.at };
      case 'string': {
        if (this.peek().kind === 'op' && this.peek().value === '..') {
          this.next();
          const to = this.next();
          if (to.kind !== 'string') this.fail("expected a string after '..'", to);
          if ([...token.value].length !== 1 || [...to.value].length !== 1) this.fail('a range needs single-character strings', token);
          return { kind: 'range', from: token.value, to: to.value, at: token.at };
        }
        return { kind: 'string', value: token.value, caseInsensitive: token.flags === 'i' };
      }
      case 'regex':
        return { kind: 'regex', source: token.value, flags: token.flags, at: token.at };
      case 'op':
        if (token.value === '(' || token.value === '[') {
          const close = token.value === '(' ? ')' : ']';
          const inner = this.expansions();
          this.expectOp(close);
          return close === ')' ? inner : { kind: 'repeat', expr: inner, min: 0, max: 1 };
        }
        if (token.value === '<' || token.value === '&' || token.value === '{') this.unsupported(`'${token.value}' (an LLGuidance extension) is not supported`, token);
        break;
      case 'directive':
        if (token.value === 'json' || token.value === 'regex') this.unsupported(`%${token.value} (an LLGuidance extension) is not supported`, token);
        this.fail(`%${token.value} is not supported inside a rule`, token);
    }
    return this.fail(`unexpected ${describe(token)}`, token);
  }
}
