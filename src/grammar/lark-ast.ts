// The syntax tree of a Lark grammar (lark-parser.ts builds it; grammar-compiler.ts compiles it).

/** Where in the grammar text (1-based). */
export interface Position {
  line: number;
  column: number;
}

export type LarkExpr =
  | { kind: 'seq'; items: LarkExpr[] }
  | { kind: 'alt'; items: LarkExpr[] }
  | { kind: 'repeat'; expr: LarkExpr; min: number; max: number }
  | { kind: 'symbol'; name: string; at: Position }
  | { kind: 'string'; value: string; caseInsensitive: boolean }
  | { kind: 'regex'; source: string; flags: string; at: Position }
  | { kind: 'range'; from: string; to: string; at: Position };

export interface LarkDefinition {
  name: string;
  isTerminal: boolean;
  expr: LarkExpr;
  at: Position;
}

export interface LarkGrammar {
  definitions: LarkDefinition[];
  /** Expressions named by `%ignore`. */
  ignore: Array<{ expr: LarkExpr; at: Position }>;
  /** `%import common.X [-> Y]`: local name → common name. */
  imports: Array<{ module: string; name: string; alias: string; at: Position }>;
}

/** Terminals are UPPERCASE (`_` may lead), rules lowercase. */
export function isTerminalName(name: string): boolean {
  return /^_?[A-Z]/.test(name);
}
