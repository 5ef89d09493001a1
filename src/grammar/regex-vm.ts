import { GrammarDefinitionError, WorkBudget } from './errors.js';
import { isWordChar, literalCodePoints, type Assertion, type CharSet, type RegexNode } from './regex-ast.js';

/**
 * Thompson NFA + Pike VM (RE2's approach): the program is simulated over all states at once,
 * each input code point is read once and each state is visited at most once per position, so a
 * match costs O(input × program) whatever the pattern — `(a*)*b` on a million `a`s included.
 * No captures are tracked: callers only need to know where matches end.
 */

const enum Op {
  Char,
  Split,
  Jump,
  Match,
  Assert,
}

/** Programs above this many instructions (e.g. nested large `{m,n}`) are refused. */
const MAX_PROGRAM = 200_000;

export class CompiledRegex {
  private readonly op: Op[] = [];
  private readonly arg1: number[] = [];
  private readonly arg2: number[] = [];
  private readonly sets: CharSet[] = [];
  private readonly assertions: Assertion[] = [];
  /** Set when the whole pattern is a plain literal: matched by comparison, no VM. */
  private readonly literal: number[] | undefined;
  // scratch, reused between runs (single-threaded)
  private readonly mark: Int32Array;
  private generation = 0;
  private lastPosition = 0;
  private current: Int32Array;
  private next: Int32Array;
  private readonly stack: Int32Array;

  constructor(node: RegexNode) {
    this.literal = literalCodePoints(node);
    this.emit(node);
    this.push(Op.Match, 0, 0);
    const size = this.op.length;
    this.mark = new Int32Array(size).fill(-1);
    this.current = new Int32Array(size);
    this.next = new Int32Array(size);
    this.stack = new Int32Array(size * 2 + 4);
  }

  get size(): number {
    return this.op.length;
  }

  /** Whether the whole input matches. */
  fullMatch(input: ArrayLike<number>, budget = new WorkBudget(Infinity)): boolean {
    return this.run(input, 0, budget, true) === input.length;
  }

  /** The end of the longest match starting at `start`, or -1 if none. */
  longestMatch(input: ArrayLike<number>, start: number, budget: WorkBudget): number {
    if (this.literal) return this.literalMatch(input, start, budget);
    return this.run(input, start, budget, false);
  }

  /**
   * How far a match attempt from `start` got: the last position where some thread was still
   * alive (for error messages on a failed full match).
   */
  reach(input: ArrayLike<number>, start: number, budget: WorkBudget = new WorkBudget(Infinity)): number {
    this.run(input, start, budget, false);
    return this.lastPosition;
  }

  /** Every position where a match starting at `start` ends, ascending. */
  matchEnds(input: ArrayLike<number>, start: number, budget: WorkBudget = new WorkBudget(Infinity)): number[] {
    const ends: number[] = [];
    this.run(input, start, budget, false, ends);
    return ends;
  }

  private literalMatch(input: ArrayLike<number>, start: number, budget: WorkBudget): number {
    const lit = this.literal!;
    if (start + lit.length > input.length) return -1;
    budget.spend(1);
    for (let i = 0; i < lit.length; i++) if (input[start + i] !== lit[i]) return -1;
    return start + lit.length;
  }

  private run(input: ArrayLike<number>, start: number, budget: WorkBudget, toEnd: boolean, ends?: number[]): number {
    this.generation++;
    let count = this.addThreads(this.current, 0, 0, input, start);
    let lastEnd = -1;
    let pos = start;
    for (;;) {
      budget.spend(count + 1);
      let matched = false;
      let nextCount = 0;
      const cp = pos < input.length ? input[pos] : -1;
      const list = this.current;
      this.generation++;
      for (let t = 0; t < count; t++) {
        const pc = list[t];
        const op = this.op[pc];
        if (op === Op.Match) matched = true;
        else if (op === Op.Char && cp >= 0 && this.sets[this.arg1[pc]].has(cp)) {
          nextCount = this.addThreads(this.next, nextCount, this.arg2[pc], input, pos + 1);
        }
      }
      if (matched) {
        lastEnd = pos;
        ends?.push(pos);
      }
      if (nextCount === 0 || cp < 0) {
        this.lastPosition = pos;
        break;
      }
      // a full match needs every code point: no need to stop early on a match
      [this.current, this.next] = [this.next, this.current];
      count = nextCount;
      pos++;
    }
    if (toEnd && lastEnd !== input.length) return -1;
    return lastEnd;
  }

  /** Adds `pc` and everything reachable by ε-moves at `pos` to `list` (each state once). */
  private addThreads(list: Int32Array, count: number, pc: number, input: ArrayLike<number>, pos: number): number {
    const mark = this.mark;
    const gen = this.generation;
    const stack = this.stack;
    let sp = 0;
    stack[sp++] = pc;
    while (sp > 0) {
      const at = stack[--sp];
      if (mark[at] === gen) continue;
      mark[at] = gen;
      switch (this.op[at]) {
        case Op.Jump:
          stack[sp++] = this.arg1[at];
          break;
        case Op.Split:
          // order is irrelevant without captures; both branches are explored
          stack[sp++] = this.arg2[at];
          stack[sp++] = this.arg1[at];
          break;
        case Op.Assert:
          if (holds(this.assertions[this.arg1[at]], input, pos)) stack[sp++] = this.arg2[at];
          break;
        default:
          list[count++] = at;
      }
    }
    return count;
  }

  private push(op: Op, a: number, b: number): number {
    if (this.op.length >= MAX_PROGRAM) throw new GrammarDefinitionError(`regex too large (more than ${MAX_PROGRAM} states after expanding repetitions)`, 1, 1);
    this.op.push(op);
    this.arg1.push(a);
    this.arg2.push(b);
    return this.op.length - 1;
  }

  private emit(node: RegexNode): void {
    switch (node.kind) {
      case 'empty':
        return;
      case 'char':
        this.sets.push(node.set);
        this.push(Op.Char, this.sets.length - 1, this.op.length + 1);
        return;
      case 'assert':
        this.assertions.push(node.assertion);
        this.push(Op.Assert, this.assertions.length - 1, this.op.length + 1);
        return;
      case 'concat':
        for (const item of node.items) this.emit(item);
        return;
      case 'alt': {
        // split L1, next ; L1: a ; jump end ; next: split L2, ... ; last: z
        const jumps: number[] = [];
        for (let i = 0; i < node.items.length; i++) {
          if (i < node.items.length - 1) {
            const split = this.push(Op.Split, this.op.length + 1, -1);
            this.emit(node.items[i]);
            jumps.push(this.push(Op.Jump, -1, 0));
            this.arg2[split] = this.op.length;
          } else this.emit(node.items[i]);
        }
        for (const jump of jumps) this.arg1[jump] = this.op.length;
        return;
      }
      case 'repeat': {
        const { min, max } = node;
        for (let i = 0; i < min; i++) this.emit(node.node);
        if (max === Infinity) {
          // L: split body, out ; body ; jump L
          const split = this.push(Op.Split, this.op.length + 1, -1);
          this.emit(node.node);
          this.push(Op.Jump, split, 0);
          this.arg2[split] = this.op.length;
        } else {
          const splits: number[] = [];
          for (let i = min; i < max; i++) {
            splits.push(this.push(Op.Split, this.op.length + 1, -1));
            this.emit(node.node);
          }
          for (const split of splits) this.arg2[split] = this.op.length;
        }
        return;
      }
    }
  }
}

function holds(assertion: Assertion, input: ArrayLike<number>, pos: number): boolean {
  switch (assertion) {
    case 'text_start':
      return pos === 0;
    case 'text_end':
      return pos === input.length;
    case 'line_start':
      return pos === 0 || input[pos - 1] === 10;
    case 'line_end':
      return pos === input.length || input[pos] === 10;
    case 'word_boundary':
    case 'not_word_boundary': {
      const before = pos > 0 && isWordChar(input[pos - 1]);
      const after = pos < input.length && isWordChar(input[pos]);
      return (before !== after) === (assertion === 'word_boundary');
    }
  }
}

/** Code points of a string (the unit every matcher works in). */
export function codePoints(text: string): Uint32Array {
  const out = new Uint32Array(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.codePointAt(i)!;
    out[n++] = c;
    if (c > 0xffff) i++;
  }
  return n === text.length ? out : out.slice(0, n);
}
