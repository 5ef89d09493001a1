import { WorkBudget, lineColumn } from './errors.js';
import { END, type CompiledGrammar } from './grammar-compiler.js';

/** Why an input was not accepted: where parsing stopped and what could have come next. */
export interface Mismatch {
  /** Code-point offset where the input stopped fitting the grammar. */
  offset: number;
  line: number;
  column: number;
  /** Terminals (names, quoted strings, /regexes/) acceptable at that point. */
  expected: string[];
  /** One line for the model: position, expectation, what was found, and a snippet. */
  message: string;
}

/** Items in one Earley set (all items that end at the same input position). */
class EarleySet {
  readonly pds: number[] = [];
  readonly origins: number[] = [];
  readonly keys = new Set<number>();
  /** Nonterminal → indices of items whose dot is before it (for completion). */
  readonly waiting = new Map<number, number[]>();
  readonly predicted = new Set<number>();
  /** Nonterminals completed with origin here: items added later that wait on them advance at once. */
  readonly completedEmpty = new Set<number>();
}

/**
 * Scannerless Earley recognition over regex terminals. At each position reached, every terminal
 * an item expects is matched from there with the linear-time regex engine, taking that
 * terminal's longest match (as Lark's and LLGuidance's lexers do); `%ignore` terminals are
 * skipped between tokens. Work is counted against a budget so a pathological grammar/input
 * pair fails safe instead of hanging.
 */
export function recognize(grammar: CompiledGrammar, input: Uint32Array, budget: WorkBudget): Mismatch | undefined {
  const n = input.length;
  const stride = n + 1;
  const sets: Array<EarleySet | undefined> = new Array(n + 1);
  const { nextSymbol, lhs, productionsOf } = grammar;

  const add = (position: number, pd: number, origin: number) => {
    const set = (sets[position] ??= new EarleySet());
    const key = pd * stride + origin;
    if (set.keys.has(key)) return;
    set.keys.add(key);
    set.pds.push(pd);
    set.origins.push(origin);
    const symbol = nextSymbol[pd];
    if (symbol >= 0 && symbol !== END) {
      let list = set.waiting.get(symbol);
      if (!list) set.waiting.set(symbol, (list = []));
      list.push(set.pds.length - 1);
    }
  };

  const ignoreEnds = new Map<number, number[]>();
  /** `position` and every position reachable from it by skipping ignored terminals. */
  const afterIgnored = (position: number): number[] => {
    if (grammar.ignore.length === 0) return [position];
    let ends = ignoreEnds.get(position);
    if (ends) return ends;
    ends = [position];
    const seen = new Set(ends);
    for (let k = 0; k < ends.length; k++) {
      for (const t of grammar.ignore) {
        const end = grammar.terminals[t].regex.longestMatch(input, ends[k], budget);
        if (end > ends[k] && !seen.has(end)) {
          seen.add(end);
          ends.push(end);
        }
      }
    }
    ignoreEnds.set(position, ends);
    return ends;
  };

  for (const start of afterIgnored(0)) for (const pd of productionsOf[grammar.startSymbol]) add(start, pd, 0);

  let furthest = 0;
  for (let i = 0; i <= n; i++) {
    const set = sets[i];
    if (!set) continue;
    furthest = i;
    const scanned = new Map<number, number>();
    for (let k = 0; k < set.pds.length; k++) {
      budget.spend(1);
      const pd = set.pds[k];
      const origin = set.origins[k];
      const symbol = nextSymbol[pd];
      if (symbol === END) {
        const done = lhs[pd];
        if (origin === i) set.completedEmpty.add(done);
        const from = sets[origin]!;
        const waiters = from.waiting.get(done);
        // re-read the length: completing an empty rule may add waiters to this very set
        if (waiters) {
          for (let w = 0; w < waiters.length; w++) add(i, from.pds[waiters[w]] + 1, from.origins[waiters[w]]);
          // completions are where ambiguous grammars spend their (cubic) time: count each one
          budget.spend(waiters.length);
        }
      } else if (symbol >= 0) {
        if (!set.predicted.has(symbol)) {
          set.predicted.add(symbol);
          for (const first of productionsOf[symbol]) add(i, first, i);
        }
        if (set.completedEmpty.has(symbol)) add(i, pd + 1, origin);
      } else {
        const terminal = -symbol - 1;
        let end = scanned.get(terminal);
        if (end === undefined) {
          end = grammar.terminals[terminal].regex.longestMatch(input, i, budget);
          scanned.set(terminal, end);
        }
        if (end >= 0) for (const position of afterIgnored(end)) add(position, pd + 1, origin);
      }
    }
  }

  const last = sets[n];
  if (last && last.keys.has(grammar.acceptPd * stride + 0)) return undefined;
  return mismatch(grammar, input, sets[furthest], furthest);
}

function mismatch(grammar: CompiledGrammar, input: Uint32Array, set: EarleySet | undefined, offset: number): Mismatch {
  const expected = new Set<string>();
  if (set) {
    for (const pd of set.pds) {
      const symbol = grammar.nextSymbol[pd];
      if (symbol < 0) expected.add(grammar.terminals[-symbol - 1].display);
    }
  }
  const list = [...expected].sort();
  const { line, column } = lineColumn(input, offset);
  const atEnd = offset >= input.length;
  const found = atEnd ? 'the end of the input' : JSON.stringify(preview(input, offset));
  const expectation = list.length === 0 ? 'the end of the input' : list.length === 1 ? list[0] : `one of ${list.join(', ')}`;
  const message = `line ${line}, column ${column}: expected ${expectation}; found ${found}\n${snippet(input, offset, line, column)}`;
  return { offset, line, column, expected: list, message };
}

/** Up to 20 code points of the rest of the line from `offset`. */
function preview(input: Uint32Array, offset: number): string {
  let end = offset;
  while (end < input.length && end - offset < 20 && input[end] !== 10) end++;
  if (end === offset && input[offset] === 10) end++;
  return String.fromCodePoint(...input.subarray(offset, end));
}

/** The offending line (clipped to 80 code points around the column) with a caret under it. */
function snippet(input: Uint32Array, offset: number, line: number, column: number): string {
  const lineStart = offset - (column - 1);
  let lineEnd = lineStart;
  while (lineEnd < input.length && input[lineEnd] !== 10) lineEnd++;
  const from = Math.max(lineStart, offset - 60);
  const to = Math.min(lineEnd, from + 80);
  const text = String.fromCodePoint(...input.subarray(from, to));
  const gutter = `${line} | `;
  return `${gutter}${text}\n${' '.repeat(gutter.length + (offset - from))}^`;
}
