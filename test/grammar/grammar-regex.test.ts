import { describe, expect, it } from 'vitest';
import { GrammarDefinitionError } from '../../src/grammar/errors.js';
import { FormatChecker } from '../../src/grammar/format-checker.js';
import { parseRegex } from '../../src/grammar/regex-parser.js';
import { CompiledRegex, codePoints } from '../../src/grammar/regex-vm.js';
import { WorkBudget } from '../../src/grammar/errors.js';

const full = (pattern: string, input: string, flags = {}) => new CompiledRegex(parseRegex(pattern, flags)).fullMatch(codePoints(input));

describe('regex engine: syntax', () => {
  it.each([
    ['abc', 'abc', true],
    ['abc', 'abd', false],
    ['a|bc', 'bc', true],
    ['(?:ab)+', 'ababab', true],
    ['(ab)+', 'aba', false],
    ['a*', '', true],
    ['a+', '', false],
    ['colou?r', 'color', true],
    ['a{3}', 'aaa', true],
    ['a{3}', 'aaaa', false],
    ['a{2,}', 'aaaaa', true],
    ['a{2,}', 'a', false],
    ['a{1,3}', 'aaa', true],
    ['a{1,3}', 'aaaa', false],
    ['a{,2}', 'aa', true],
    ['a{1,3}?b*?', 'aabb', true],
    ['x{', 'x{', true],
    ['\\d+-\\d{4}', '555-1234', true],
    ['\\D\\W\\S', 'a!x', true],
    ['\\w+', 'abc_123', true],
    ['\\s', '\t', true],
    ['[a-c]+', 'abcab', true],
    ['[^a-c]', 'd', true],
    ['[^a-c]', 'b', false],
    ['[]a]', ']', true],
    ['[a-]', '-', true],
    ['[\\d.]+', '3.14', true],
    ['[\\u0041-\\u005a]+', 'ABZ', true],
    ['[\\x00-\\x1f]', '\t', true],
    ['[\\x00-\\x1f]', ' ', false],
    ['[^\\n]*', 'no newline here', true],
    ['[[:alpha:]]+', 'abcXYZ', true],
    ['\\n\\t\\\\\\/', '\n\t\\/', true],
    ['\\u00e9', 'é', true],
    ['\\ud83d\\ude80', '🚀', true],
    ['\\x{1F680}', '🚀', true],
    ['.', '🚀', true],
    ['.', '\n', false],
    ['(?s).', '\n', true],
    ['(?i)hello', 'HeLLo', true],
    ['(?i:a)b', 'Ab', true],
    ['(?i:a)b', 'AB', false],
    ['[a-z]+', 'ÉCOLE', false],
    ['\\p{L}+', 'Ünïcödé', true],
    ['\\P{L}', '1', true],
    ['^abc$', 'abc', true],
    ['(?P<name>ab)c', 'abc', true],
    ['(?<name>ab)c', 'abc', true],
    ['\\bfoo\\b', 'foo', true],
    ['(?x) a b # comment\n c', 'abc', true],
    ['((a)|b)*', 'abba', true],
    ['', '', true],
  ])('/%s/ full-matches %j: %s', (pattern, input, expected) => {
    expect(full(pattern, input)).toBe(expected);
  });

  it('flags i and s apply from the caller (Lark /…/is)', () => {
    expect(full('abc.', 'ABC\n', { caseInsensitive: true, dotAll: true })).toBe(true);
    expect(full('abc.', 'ABC\n', { caseInsensitive: true })).toBe(false);
  });

  it('^ and $ are line anchors with m', () => {
    const re = new CompiledRegex(parseRegex('a$\\n^b', { multiLine: true }));
    expect(re.fullMatch(codePoints('a\nb'))).toBe(true);
    expect(full('a$\\n^b', 'a\nb')).toBe(false);
  });

  it.each([
    ['(ab', "missing ')'"],
    ['ab)', "unmatched ')'"],
    ['[ab', "missing ']'"],
    ['*a', 'nothing to repeat'],
    ['(?=a)', 'lookaround'],
    ['(?<!a)b', 'lookaround'],
    ['(a)\\1', 'backreferences'],
    ['a{2000}', 'above 1000'],
    ['a{3,1}', 'out of order'],
    ['[z-a]', 'out of order'],
    ['\\q', 'unknown escape'],
    ['\\p{NotAProperty}', 'unknown Unicode property'],
  ])('rejects /%s/ with a clear error (%s)', (pattern, message) => {
    expect(() => parseRegex(pattern)).toThrow(GrammarDefinitionError);
    expect(() => parseRegex(pattern)).toThrow(message);
  });

  it('refuses programs that expand too far instead of exhausting memory', () => {
    expect(() => new CompiledRegex(parseRegex('((a{1000}){1000}){1000}'))).toThrow(/too large/);
  });
});

describe('regex engine: lexer API', () => {
  it('longest match and every match end from an offset', () => {
    const re = new CompiledRegex(parseRegex('a+|ab'));
    const input = codePoints('xaaab');
    expect(re.longestMatch(input, 1, new WorkBudget(Infinity))).toBe(4);
    expect(re.matchEnds(input, 1)).toEqual([2, 3, 4]);
    expect(re.longestMatch(input, 0, new WorkBudget(Infinity))).toBe(-1);
    expect(re.longestMatch(codePoints('ab'), 0, new WorkBudget(Infinity))).toBe(2);
  });

  it('works in code points, not UTF-16 units', () => {
    const re = new CompiledRegex(parseRegex('.{2}'));
    expect(re.fullMatch(codePoints('🚀é'))).toBe(true);
    expect(re.fullMatch(codePoints('🚀'))).toBe(false);
  });
});

describe('regex engine: linear time (counted steps, not wall time)', () => {
  const steps = (pattern: string, input: string) => FormatChecker.countSteps(FormatChecker.compile('regex', pattern), input);

  it.each(['(a*)*b', '(a|aa)*c', '(a|a)*b', '(a+)+$b', '(.*a){12}x'])('%s against a×n grows linearly with n', (pattern) => {
    const small = steps(pattern, 'a'.repeat(10_000));
    const large = steps(pattern, 'a'.repeat(100_000));
    // each code point costs at most (program size) steps: a tenfold input costs about tenfold work
    const size = new CompiledRegex(parseRegex(pattern)).size;
    expect(large).toBeLessThanOrEqual(100_000 * (size + 2) + 10);
    expect(large / small).toBeGreaterThan(8);
    expect(large / small).toBeLessThan(12);
  });

  it('(a*)*b on 100,000 "a"s is rejected within the budget, with the position', () => {
    const checker = FormatChecker.compile('regex', '(a*)*b');
    const result = checker.check('a'.repeat(100_000));
    expect(result).toBeDefined();
    expect(result!.message).toMatch(/line 1, column 100001: the input ends before the pattern is complete/);
    expect(FormatChecker.countSteps(checker, 'a'.repeat(100_000))).toBeLessThan(1_000_000);
  });

  it('a check that exceeds its work budget fails safe with a clear error', () => {
    const checker = FormatChecker.compile('regex', '(a|aa)*c');
    const result = checker.check('a'.repeat(50_000), 10_000);
    expect(result?.message).toMatch(/could not be checked: the check needed more than 10000 steps/);
  });

  it('regex formats: full match only, with the position where matching stopped', () => {
    const checker = FormatChecker.compile('regex', '\\d{3}-\\d{4}');
    expect(checker.check('555-1234')).toBeUndefined();
    expect(checker.check('555-1234 extra')?.message).toMatch(/^line 1, column 9: the input stops matching the pattern here \(found " extra"\)/);
    expect(checker.check('55x-1234')?.column).toBe(3);
  });
});
