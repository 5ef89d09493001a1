import { recognize, type Mismatch } from './earley.js';
import { WorkBudget, WorkLimitError, lineColumn } from './errors.js';
import { compileLark, type CompiledGrammar } from './grammar-compiler.js';
import { parseRegex } from './regex-parser.js';
import { CompiledRegex, codePoints } from './regex-vm.js';

export type GrammarSyntax = 'lark' | 'regex';

/** The outcome of checking one input: undefined when it matches. */
export type CheckResult = Mismatch | undefined;

/**
 * Work allowed per check (regex threads + Earley items + completions). Realistic grammars need
 * a few to a few dozen steps per code point (apply_patch: about 4); the budget scales with the
 * input but is capped, because a check runs on the event loop: a pathological grammar/input
 * pair is stopped after at most ~10M steps (about a second) instead of stalling the gateway.
 */
const STEPS_PER_CODE_POINT = 500;
const MIN_STEPS = 500_000;
const MAX_STEPS = 10_000_000;

/** A compiled custom-tool format: checks whole inputs, never throws on model output. */
export class FormatChecker {
  private constructor(
    readonly syntax: GrammarSyntax,
    private readonly grammar: CompiledGrammar | undefined,
    private readonly regex: CompiledRegex | undefined,
  ) {}

  /** Compiles a definition; throws GrammarDefinitionError (with line/column) if it is invalid. */
  static compile(syntax: GrammarSyntax, definition: string): FormatChecker {
    if (syntax === 'lark') return new FormatChecker(syntax, compileLark(definition), undefined);
    return new FormatChecker(syntax, undefined, new CompiledRegex(parseRegex(definition)));
  }

  /** Checks `input`; `stepLimit` overrides the default budget (tests). */
  check(input: string, stepLimit?: number): CheckResult {
    const cps = codePoints(input);
    const budget = new WorkBudget(stepLimit ?? Math.min(MAX_STEPS, Math.max(MIN_STEPS, cps.length * STEPS_PER_CODE_POINT)));
    try {
      if (this.grammar) return recognize(this.grammar, cps, budget);
      return this.regex!.fullMatch(cps, budget) ? undefined : regexMismatch(this.regex!, cps, budget);
    } catch (err) {
      if (!(err instanceof WorkLimitError)) throw err;
      return { offset: 0, line: 1, column: 1, expected: [], message: `the input could not be checked: ${err.message}` };
    }
  }

  /** Steps a check used, for tests and the benchmark (work, not wall time). */
  static countSteps(checker: FormatChecker, input: string): number {
    const cps = codePoints(input);
    const budget = new WorkBudget(Infinity);
    if (checker.grammar) recognize(checker.grammar, cps, budget);
    else checker.regex!.fullMatch(cps, budget);
    return budget.steps;
  }
}

/** Where a full regex match broke down: how far any match attempt got. */
function regexMismatch(regex: CompiledRegex, cps: Uint32Array, budget: WorkBudget): Mismatch {
  const offset = regex.reach(cps, 0, budget);
  const { line, column } = lineColumn(cps, offset);
  const what =
    offset >= cps.length
      ? 'the input ends before the pattern is complete'
      : `the input stops matching the pattern here (found ${JSON.stringify(String.fromCodePoint(...cps.subarray(offset, offset + 20)))})`;
  return { offset, line, column, expected: [], message: `line ${line}, column ${column}: ${what}; the whole input must match the regex` };
}
