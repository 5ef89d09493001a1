import { COMMON_LARK } from './common-terminals.js';
import { GrammarDefinitionError } from './errors.js';
import type { LarkDefinition, LarkExpr, LarkGrammar, Position } from './lark-ast.js';
import { parseLark } from './lark-parser.js';
import { CharSet, literal, type RegexNode } from './regex-ast.js';
import { parseFlagLetters } from './regex-flags.js';
import { parseRegex } from './regex-parser.js';
import { CompiledRegex } from './regex-vm.js';

/** One terminal the recognizer scans for, matched with the linear-time regex engine. */
export interface Terminal {
  /** How an error names it: the terminal name, a quoted string, or `/regex/`. */
  display: string;
  regex: CompiledRegex;
}

/**
 * A Lark grammar lowered for the Earley recognizer: plain productions over nonterminals and
 * terminals (EBNF operators became helper nonterminals). Symbols are encoded as numbers:
 * a nonterminal is its index (≥ 0), terminal t is `-(t + 1)`.
 */
export interface CompiledGrammar {
  terminals: Terminal[];
  /** Terminals skipped between tokens (`%ignore`). */
  ignore: number[];
  nonterminalNames: string[];
  /** Per dotted position ("pd"): the symbol after the dot, or END. */
  nextSymbol: Int32Array;
  /** Per pd: the production's left-hand side. */
  lhs: Int32Array;
  /** Per nonterminal: the pd of each of its productions' first position. */
  productionsOf: number[][];
  /** The augmented start symbol; its single production is `start' → start`. */
  startSymbol: number;
  /** The pd of `start' → start •`. */
  acceptPd: number;
}

export const END = 0x7fffffff;

export function compileLark(source: string): CompiledGrammar {
  return new LarkCompiler(parseLark(source)).compile();
}

let commonDefinitions: Map<string, LarkDefinition> | undefined;

function common(): Map<string, LarkDefinition> {
  commonDefinitions ??= new Map(parseLark(COMMON_LARK).definitions.map((d) => [d.name, d]));
  return commonDefinitions;
}

type Scope = 'local' | 'common';

class LarkCompiler {
  private readonly local = new Map<string, LarkDefinition>();
  /** Local alias → common terminal name (`%import common.WS -> _WS`). */
  private readonly imported = new Map<string, string>();
  private readonly terminalNodes = new Map<string, RegexNode>();
  private readonly resolving = new Set<string>();
  private readonly terminals: Terminal[] = [];
  private readonly terminalIds = new Map<string, number>();
  private readonly nonterminals: string[] = [];
  private readonly nonterminalIds = new Map<string, number>();
  private readonly productions: Array<{ lhs: number; rhs: number[] }> = [];

  constructor(private readonly grammar: LarkGrammar) {}

  compile(): CompiledGrammar {
    for (const imp of this.grammar.imports) {
      if (imp.module !== 'common') throw new GrammarDefinitionError(`%import from '${imp.module}' is not supported (only 'common')`, imp.at.line, imp.at.column);
      const def = common().get(imp.name);
      if (!def || !def.isTerminal) throw new GrammarDefinitionError(`'common' has no terminal '${imp.name}'`, imp.at.line, imp.at.column);
      this.imported.set(imp.alias, imp.name);
    }
    for (const def of this.grammar.definitions) {
      if (this.local.has(def.name) || this.imported.has(def.name)) throw new GrammarDefinitionError(`'${def.name}' is defined twice`, def.at.line, def.at.column);
      this.local.set(def.name, def);
    }
    const start = this.local.get('start');
    if (!start || start.isTerminal) throw new GrammarDefinitionError("the grammar has no 'start' rule", 1, 1);

    const augmented = this.nonterminal("start'");
    this.productions.push({ lhs: augmented, rhs: [this.ruleSymbol('start', start.at)] });
    // rules are lowered on first reference, so unreachable ones are still checked below
    for (const def of this.grammar.definitions) {
      if (def.isTerminal) this.terminalNode(def.name, 'local', def.at);
      else this.ruleSymbol(def.name, def.at);
    }
    const ignore = this.grammar.ignore.map(({ expr, at }) => {
      const node = this.toRegex(expr, 'local');
      const display = expr.kind === 'symbol' ? expr.name : `%ignore at line ${at.line}`;
      return this.addTerminal(`ignore:${this.terminals.length}`, display, node, at);
    });
    return this.lower(augmented, ignore);
  }

  private lower(startSymbol: number, ignore: number[]): CompiledGrammar {
    const nextSymbol: number[] = [];
    const lhs: number[] = [];
    const productionsOf: number[][] = this.nonterminals.map(() => []);
    let acceptPd = -1;
    for (const production of this.productions) {
      productionsOf[production.lhs].push(nextSymbol.length);
      for (const symbol of production.rhs) {
        nextSymbol.push(symbol);
        lhs.push(production.lhs);
      }
      if (production.lhs === startSymbol) acceptPd = nextSymbol.length;
      nextSymbol.push(END);
      lhs.push(production.lhs);
    }
    return {
      terminals: this.terminals,
      ignore,
      nonterminalNames: this.nonterminals,
      nextSymbol: Int32Array.from(nextSymbol),
      lhs: Int32Array.from(lhs),
      productionsOf,
      startSymbol,
      acceptPd,
    };
  }

  private nonterminal(name: string): number {
    let id = this.nonterminalIds.get(name);
    if (id === undefined) {
      id = this.nonterminals.length;
      this.nonterminals.push(name);
      this.nonterminalIds.set(name, id);
    }
    return id;
  }

  /** The nonterminal for a named rule; its productions are added on first reference. */
  private ruleSymbol(name: string, at: Position): number {
    const existing = this.nonterminalIds.get(name);
    if (existing !== undefined) return existing;
    const def = this.local.get(name);
    if (!def || def.isTerminal) throw new GrammarDefinitionError(`undefined rule '${name}'`, at.line, at.column);
    const id = this.nonterminal(name);
    const alternatives = def.expr.kind === 'alt' ? def.expr.items : [def.expr];
    for (const alternative of alternatives) this.productions.push({ lhs: id, rhs: this.sequence(alternative) });
    return id;
  }

  /** The symbols of one production for an expression in a rule. */
  private sequence(expr: LarkExpr): number[] {
    if (expr.kind === 'seq') return expr.items.flatMap((item) => this.sequence(item));
    return [this.symbol(expr)];
  }

  /** One symbol standing for an expression in a rule (helper nonterminals for EBNF). */
  private symbol(expr: LarkExpr): number {
    switch (expr.kind) {
      case 'symbol':
        if (!/^_?[A-Z]/.test(expr.name)) return this.ruleSymbol(expr.name, expr.at);
        return this.namedTerminal(expr.name, expr.at);
      case 'string':
        return this.anonymousTerminal(`s:${expr.caseInsensitive ? 'i' : ''}:${expr.value}`, JSON.stringify(expr.value) + (expr.caseInsensitive ? 'i' : ''), expr, { line: 0, column: 0 });
      case 'regex':
        return this.anonymousTerminal(`r:${expr.flags}:${expr.source}`, `/${expr.source}/${expr.flags}`, expr, expr.at);
      case 'range':
        return this.anonymousTerminal(`g:${expr.from}:${expr.to}`, `${JSON.stringify(expr.from)}..${JSON.stringify(expr.to)}`, expr, expr.at);
      case 'seq':
      case 'alt': {
        const id = this.helper();
        for (const alternative of expr.kind === 'alt' ? expr.items : [expr]) this.productions.push({ lhs: id, rhs: this.sequence(alternative) });
        return id;
      }
      case 'repeat':
        return this.repeat(expr.expr, expr.min, expr.max);
    }
  }

  private helper(): number {
    return this.nonterminal(`__helper${this.nonterminals.length}`);
  }

  /** body{min,max} as left-recursive helper rules (what Earley handles best). */
  private repeat(body: LarkExpr, min: number, max: number): number {
    const item = this.symbol(body);
    const id = this.helper();
    const required = new Array<number>(min).fill(item);
    if (max === Infinity) {
      // X → item{min} | X item
      this.productions.push({ lhs: id, rhs: required });
      this.productions.push({ lhs: id, rhs: [id, item] });
      return id;
    }
    // X → item{min} O_k, O_k → ε | item O_{k-1}
    let optional = -1;
    for (let k = 0; k < max - min; k++) {
      const next = this.helper();
      this.productions.push({ lhs: next, rhs: [] });
      this.productions.push({ lhs: next, rhs: optional < 0 ? [item] : [item, optional] });
      optional = next;
    }
    this.productions.push({ lhs: id, rhs: optional < 0 ? required : [...required, optional] });
    return id;
  }

  private namedTerminal(name: string, at: Position): number {
    const existing = this.terminalIds.get(`n:${name}`);
    if (existing !== undefined) return -(existing + 1);
    const node = this.terminalNode(name, 'local', at);
    return -(this.addTerminal(`n:${name}`, name, node, at) + 1);
  }

  private anonymousTerminal(key: string, display: string, expr: LarkExpr, at: Position): number {
    const existing = this.terminalIds.get(key);
    if (existing !== undefined) return -(existing + 1);
    return -(this.addTerminal(key, display, this.toRegex(expr, 'local'), at) + 1);
  }

  private addTerminal(key: string, display: string, node: RegexNode, at: Position): number {
    let regex: CompiledRegex;
    try {
      regex = new CompiledRegex(node);
    } catch (err) {
      if (err instanceof GrammarDefinitionError && at.line > 0) throw new GrammarDefinitionError(`${display}: ${err.reason}`, at.line, at.column);
      throw err;
    }
    this.terminals.push({ display, regex });
    this.terminalIds.set(key, this.terminals.length - 1);
    return this.terminals.length - 1;
  }

  /** The regex a terminal definition stands for, with the terminals it references inlined. */
  private terminalNode(name: string, scope: Scope, at: Position): RegexNode {
    const key = `${scope}:${name}`;
    const cached = this.terminalNodes.get(key);
    if (cached) return cached;
    let def: LarkDefinition | undefined;
    let defScope = scope;
    if (scope === 'local') {
      def = this.local.get(name);
      const importedName = this.imported.get(name);
      if (!def && importedName !== undefined) {
        def = common().get(importedName);
        defScope = 'common';
      }
    } else def = common().get(name);
    if (!def || !def.isTerminal) throw new GrammarDefinitionError(`undefined terminal '${name}'`, at.line, at.column);
    if (this.resolving.has(key)) throw new GrammarDefinitionError(`terminal '${name}' refers to itself`, at.line, at.column);
    this.resolving.add(key);
    const node = this.toRegex(def.expr, defScope);
    this.resolving.delete(key);
    this.terminalNodes.set(key, node);
    return node;
  }

  /** A terminal-side expression as a regex; rules cannot appear inside terminals. */
  private toRegex(expr: LarkExpr, scope: Scope): RegexNode {
    switch (expr.kind) {
      case 'seq':
        return { kind: 'concat', items: expr.items.map((item) => this.toRegex(item, scope)) };
      case 'alt':
        return { kind: 'alt', items: expr.items.map((item) => this.toRegex(item, scope)) };
      case 'repeat':
        return { kind: 'repeat', node: this.toRegex(expr.expr, scope), min: expr.min, max: expr.max };
      case 'string':
        return literal(expr.value, expr.caseInsensitive);
      case 'range':
        return { kind: 'char', set: new CharSet([expr.from.codePointAt(0)!, expr.to.codePointAt(0)!]) };
      case 'regex': {
        const flags = parseFlagLetters(expr.flags);
        if (!flags) throw new GrammarDefinitionError(`unsupported regex flags '${expr.flags}'`, expr.at.line, expr.at.column);
        try {
          return parseRegex(expr.source, flags);
        } catch (err) {
          if (err instanceof GrammarDefinitionError) throw new GrammarDefinitionError(err.reason, expr.at.line, expr.at.column + 1 + (err.column - 1));
          throw err;
        }
      }
      case 'symbol':
        if (!/^_?[A-Z]/.test(expr.name)) throw new GrammarDefinitionError(`terminal definitions cannot refer to rule '${expr.name}'`, expr.at.line, expr.at.column);
        return this.terminalNode(expr.name, scope, expr.at);
    }
  }
}
