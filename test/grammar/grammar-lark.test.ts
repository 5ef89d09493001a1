import { describe, expect, it } from 'vitest';
import { FormatCache } from '../../src/grammar/cache.js';
import { GrammarDefinitionError } from '../../src/grammar/errors.js';
import { FormatChecker } from '../../src/grammar/format-checker.js';

const lark = (definition: string) => FormatChecker.compile('lark', definition);
const accepts = (definition: string, input: string) => lark(definition).check(input) === undefined;

describe('Lark grammars: what the dialect accepts', () => {
  it('rules, string terminals, alternation, grouping and EBNF operators', () => {
    const g = lark(`
      start: greeting ("," name)* "!"?
      greeting: "hello" | "hi"
      name: NAME
      NAME: /[a-z]+/
    `);
    expect(g.check('hello,bob,alice!')).toBeUndefined();
    expect(g.check('hi')).toBeUndefined();
    expect(g.check('hey')).toBeDefined();
    expect(g.check('hello,,bob')).toBeDefined();
  });

  it('alternatives continued on following lines with |', () => {
    const g = lark('start: "a"\n     | "b" "c"\n     | d\nd: "d"');
    expect(g.check('a')).toBeUndefined();
    expect(g.check('bc')).toBeUndefined();
    expect(g.check('d')).toBeUndefined();
    expect(g.check('b')).toBeDefined();
  });

  it('[optional], +, ~ n and ~ n..m repetition', () => {
    expect(accepts('start: "a" ["b"] "c"+', 'ac')).toBe(true);
    expect(accepts('start: "a" ["b"] "c"+', 'abccc')).toBe(true);
    expect(accepts('start: "a" ["b"] "c"+', 'ab')).toBe(false);
    expect(accepts('start: "x" ~ 3', 'xxx')).toBe(true);
    expect(accepts('start: "x" ~ 3', 'xx')).toBe(false);
    expect(accepts('start: "x" ~ 2..4', 'xxxx')).toBe(true);
    expect(accepts('start: "x" ~ 2..4', 'xxxxx')).toBe(false);
  });

  it('?rule and !rule modifiers, priorities and -> aliases are accepted and do not change the language', () => {
    const g = lark(`
      ?start: sum
      !sum: product ("+" product)* -> total
      ?product.2: NUMBER
      %import common.NUMBER
    `);
    expect(g.check('1+2.5+3e4')).toBeUndefined();
    expect(g.check('1+')).toBeDefined();
  });

  it('string literals with escapes and the i flag; regex literals with flags', () => {
    expect(accepts('start: "select"i " " /[a-z]+/i', 'SeLeCt FOO')).toBe(true);
    expect(accepts('start: "select" " " /[a-z]+/', 'SELECT foo')).toBe(false);
    expect(accepts('start: "say \\"hi\\"\\n" /a.b/s', 'say "hi"\na\nb')).toBe(true);
    expect(accepts('start: /a\\/b/', 'a/b')).toBe(true);
    expect(accepts('start: "\\u00e9" "\\\\"', 'é\\')).toBe(true);
  });

  it('terminals that reference other terminals, and "a".."z" ranges', () => {
    const g = lark(`
      start: IDENT ("." IDENT)*
      IDENT: FIRST REST*
      FIRST: "a".."z" | "_"
      REST: FIRST | DIGIT
      DIGIT: "0".."9"
    `);
    expect(g.check('foo.bar_1.x9')).toBeUndefined();
    expect(g.check('foo.9x')).toBeDefined();
  });

  it('%import common terminals (single, aliased, list) and %ignore', () => {
    const g = lark(`
      start: pair ("," pair)*
      pair: ESCAPED_STRING ":" value
      value: SIGNED_NUMBER | ESCAPED_STRING | CNAME
      %import common.ESCAPED_STRING
      %import common.SIGNED_NUMBER
      %import common (CNAME, WS)
      %ignore WS
    `);
    expect(g.check('"a": 1 , "b\\"q": -2.5e3,\n"c" : true_1')).toBeUndefined();
    expect(g.check('"a": 1 "b": 2')).toBeDefined();
    expect(accepts('start: NL WORD\n%import common.NEWLINE -> NL\n%import common.WORD', '\r\n\nabc')).toBe(true);
    expect(accepts('start: INT "x" HEXDIGIT+ WS_INLINE LETTER\n%import common (INT, HEXDIGIT, WS_INLINE, LETTER)', '42xfF0 \tq')).toBe(true);
  });

  it('%ignore with comments and a regex; // comments in the grammar', () => {
    const g = lark(`
      // a list of words
      start: WORD+ // one or more
      %import common.WORD
      %ignore /[ \\t\\n]+/
      %ignore /#[^\\n]*/
    `);
    expect(g.check('  one two # a comment\n three  ')).toBeUndefined();
    expect(g.check('one 2')).toBeDefined();
  });

  it('nullable rules, left and right recursion, and ambiguity', () => {
    expect(accepts('start: a b\na: "x"*\nb: "y"?', '')).toBe(true);
    expect(accepts('start: a b\na: "x"*\nb: "y"?', 'xxy')).toBe(true);
    expect(accepts('start: e\ne: e "+" e | "n"', 'n+n+n+n')).toBe(true);
    expect(accepts('start: l\nl: "(" l ")" l |', '(()(()))()')).toBe(true);
    expect(accepts('start: l\nl: "(" l ")" l |', '(()')).toBe(false);
    expect(accepts('start: a a\na: | "x"', 'x')).toBe(true);
  });

  it('terminals take their longest match (as Lark and LLGuidance lexers do)', () => {
    // /a+/ always eats every "a": "aa" "a" can never split as the grammar would need
    expect(accepts('start: A "a"\nA: /a+/', 'aaa')).toBe(false);
    // a rule-level split works, since rules are not lexed greedily
    expect(accepts('start: a "a"\na: "a"+', 'aaa')).toBe(true);
    // different terminals at one position each take their own longest match
    expect(accepts('start: ("@@" | "@@ " /.+/) "\\n"', '@@ ctx\n')).toBe(true);
    expect(accepts('start: ("@@" | "@@ " /.+/) "\\n"', '@@\n')).toBe(true);
  });
});

describe('Lark grammars: errors', () => {
  it('a rejected input says where parsing stopped, what was expected, and shows the line', () => {
    const g = lark('start: "let " NAME " = " INT ";"\nNAME: /[a-z]+/\n%import common.INT');
    const result = g.check('let x = y;')!;
    expect(result).toMatchObject({ line: 1, column: 9, expected: ['INT'] });
    expect(result.message).toBe('line 1, column 9: expected INT; found "y;"\n1 | let x = y;\n            ^');
  });

  it('reports the end of input, and multi-line positions', () => {
    const g = lark('start: ("a" "\\n")+ "end"');
    expect(g.check('a\na\n')!.message).toMatch(/^line 3, column 1: expected one of "a", "end"; found the end of the input/);
    expect(g.check('a\nb\n')).toMatchObject({ line: 2, column: 1 });
    expect(g.check('a\nend!')!.message).toMatch(/^line 2, column 4: expected the end of the input; found "!"/);
  });

  it.each([
    ['start: foo', 1, 8, "undefined rule 'foo'"],
    ['start: FOO', 1, 8, "undefined terminal 'FOO'"],
    ['rule: "x"', 1, 1, "no 'start' rule"],
    ['start: "x"\nstart: "y"', 2, 1, 'defined twice'],
    ['start: "x" )', 1, 12, "unexpected ')'"],
    ['start: ("x"', 1, 12, "expected ')'"],
    ['start: "x\nfoo', 1, 8, 'unterminated string literal'],
    ['start: A\nA: A "x"', 2, 4, 'refers to itself'],
    ['start: A\nA: "x" b\nb: "y"', 2, 8, "cannot refer to rule 'b'"],
    ['start: X\n%import common.NOPE', 2, 1, "no terminal 'NOPE'"],
    ['start: X\n%import python.NAME', 2, 1, "from 'python' is not supported"],
    ['start: "x"\n%override start: "y"', 2, 1, '%override directive is not supported'],
    ['start: /(?=a)a/', 1, 9, 'lookaround'],
    ['start: /a/z', 1, 11, "undefined rule 'z'"],
    ['start: "a" @', 1, 12, "unexpected character '@'"],
    ['start: %json {}', 1, 8, '%json (an LLGuidance extension) is not supported'],
    ['start: <[123]>', 1, 8, 'LLGuidance extension'],
    ['start: "x" ~ 5..2', 1, 18, 'out of order'],
  ])('%j → line %i, column %i: %s', (definition, line, column, message) => {
    try {
      lark(definition);
      expect.unreachable('should not compile');
    } catch (err) {
      expect(err).toBeInstanceOf(GrammarDefinitionError);
      expect((err as GrammarDefinitionError).message).toContain(message);
      expect({ line: (err as GrammarDefinitionError).line, column: (err as GrammarDefinitionError).column }).toEqual({ line, column });
    }
  });

  it('LLGuidance extensions are marked unsupported (not invalid); Lark-only features are invalid', () => {
    const unsupported = (definition: string) => {
      try {
        lark(definition);
      } catch (err) {
        return (err as GrammarDefinitionError).unsupported;
      }
      return undefined;
    };
    expect(unsupported('start: %json {"type": "object"}')).toBe(true);
    expect(unsupported('start: <[128010]> "x"')).toBe(true);
    expect(unsupported('start: "x"\n%llguidance {}')).toBe(true);
    expect(unsupported('start: missing')).toBe(false);
    expect(unsupported('start: "x"\n%override start: "y"')).toBe(false);
  });

  it('pathological grammar/input pairs hit the work budget instead of hanging', () => {
    // highly ambiguous: every split of the input is a parse (Catalan-many), Earley is cubic here
    const g = lark('start: e\ne: e e | "a"');
    const result = g.check('a'.repeat(3_000), 200_000);
    expect(result?.message).toMatch(/could not be checked: the check needed more than 200000 steps/);
  });

  it('the default budget scales with the input and stops a pathological pair on its own', () => {
    const g = lark('start: e\ne: e e | "a"');
    expect(g.check('a'.repeat(600))?.message).toMatch(/could not be checked: the check needed more than 500000 steps/);
    expect(g.check('a'.repeat(20))).toBeUndefined();
  });
});

describe('compiled formats cache', () => {
  it('compiles a definition once, evicts the least recently used', () => {
    const cache = new FormatCache(2);
    const a = cache.get('lark', 'start: "a"');
    expect(cache.get('lark', 'start: "a"')).toBe(a);
    cache.get('regex', 'b');
    cache.get('lark', 'start: "a"'); // a is now the most recent
    cache.get('regex', 'c'); // evicts 'b'
    expect(cache.size).toBe(2);
    expect(cache.get('lark', 'start: "a"')).toBe(a);
    expect(() => cache.get('regex', '(')).toThrow(GrammarDefinitionError);
    expect(cache.size).toBe(2);
  });
});
