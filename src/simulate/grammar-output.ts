// What the simulator says under vLLM's `structured_outputs` (`grammar` in Lark, or `regex`):
// output that matches, as constrained decoding guarantees. A scripted text that matches is used as
// is; otherwise (no script, or a script the grammar forbids) the shortest sentence of the grammar,
// the way a model under a grammar mask could only have produced something valid. Pure: no I/O.

import { COMMON_LARK } from '../grammar/common-terminals.js';
import { FormatChecker, GrammarDefinitionError } from '../grammar/index.js';
import type { LarkExpr } from '../grammar/lark-ast.js';
import { parseLark } from '../grammar/lark-parser.js';
import type { RegexNode } from '../grammar/regex-ast.js';
import { parseFlagLetters } from '../grammar/regex-flags.js';
import { parseRegex } from '../grammar/regex-parser.js';

export interface SimGrammar {
  syntax: 'lark' | 'regex';
  definition: string;
}

/** The text to answer with, or an error message (vLLM answers an invalid grammar with a 400). */
export function constrainedText(grammar: SimGrammar, scripted: string | null): { text: string } | { error: string } {
  let checker: FormatChecker;
  try {
    checker = FormatChecker.compile(grammar.syntax, grammar.definition);
  } catch (err) {
    if (err instanceof GrammarDefinitionError) return { error: `Invalid ${grammar.syntax === 'lark' ? 'grammar' : 'regex'} specification: ${err.message}` };
    throw err;
  }
  if (scripted !== null && checker.check(scripted) === undefined) return { text: scripted };
  const shortest = grammar.syntax === 'regex' ? shortestRegex(parseRegex(grammar.definition)) : shortestLark(grammar.definition);
  if (shortest === undefined || checker.check(shortest) !== undefined) return { error: 'The simulator cannot generate a sentence of this grammar.' };
  return { text: shortest };
}

/** The shortest sentence of a Lark grammar's `start` rule (a fixpoint over all definitions, so recursion is fine). */
function shortestLark(source: string): string | undefined {
  const grammar = parseLark(source);
  const definitions = new Map(grammar.definitions.map((d) => [d.name, d.expr]));
  const common = new Map(parseLark(COMMON_LARK).definitions.map((d) => [d.name, d.expr]));
  for (const imp of grammar.imports) {
    const expr = common.get(imp.name);
    if (expr) definitions.set(imp.alias, expr);
  }
  // every common terminal, for the ones the imported ones refer to
  for (const [name, expr] of common) if (!definitions.has(name)) definitions.set(name, expr);
  const best = new Map<string, string>();
  const gen = (expr: LarkExpr): string | undefined => {
    switch (expr.kind) {
      case 'string':
        return expr.value;
      case 'range':
        return expr.from;
      case 'regex':
        return shortestRegex(parseRegex(expr.source, parseFlagLetters(expr.flags) ?? {}));
      case 'symbol':
        return best.get(expr.name);
      case 'seq':
        return shortestSequence(expr.items, gen);
      case 'alt':
        return shortestOf(expr.items.map(gen));
      case 'repeat':
        return shortestRepeat(expr.min, () => gen(expr.expr));
    }
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (const [name, expr] of definitions) {
      const candidate = gen(expr);
      const current = best.get(name);
      if (candidate !== undefined && (current === undefined || [...candidate].length < [...current].length)) {
        best.set(name, candidate);
        changed = true;
      }
    }
  }
  return best.get('start');
}

function shortestRegex(node: RegexNode): string | undefined {
  switch (node.kind) {
    case 'empty':
    case 'assert':
      return '';
    case 'char': {
      const set = node.set;
      if (!set.negated && set.ranges.length >= 2) return String.fromCodePoint(set.ranges[0]);
      for (const candidate of 'a0 xZ_-.') if (set.has(candidate.codePointAt(0)!)) return candidate;
      for (let cp = 0x21; cp < 0x3000; cp++) if (set.has(cp)) return String.fromCodePoint(cp);
      return undefined;
    }
    case 'concat':
      return shortestSequence(node.items, shortestRegex);
    case 'alt':
      return shortestOf(node.items.map(shortestRegex));
    case 'repeat':
      return shortestRepeat(node.min, () => shortestRegex(node.node));
  }
}

/** The shortest sentences of a sequence's parts, joined; undefined when a part has none (yet). */
function shortestSequence<T>(items: readonly T[], shortest: (item: T) => string | undefined): string | undefined {
  let out = '';
  for (const item of items) {
    const part = shortest(item);
    if (part === undefined) return undefined;
    out += part;
  }
  return out;
}

/** At least `min` repetitions of the repeated part's shortest sentence. */
function shortestRepeat(min: number, shortest: () => string | undefined): string | undefined {
  if (min === 0) return '';
  return shortest()?.repeat(min);
}

function shortestOf(options: Array<string | undefined>): string | undefined {
  let best: string | undefined;
  for (const option of options) if (option !== undefined && (best === undefined || [...option].length < [...best].length)) best = option;
  return best;
}
