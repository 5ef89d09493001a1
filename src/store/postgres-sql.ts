// SQL text helpers shared by every PostgreSQL store (no I/O).

/** A double-quoted SQL identifier. */
export function quoteIdent(name: string): string {
  if (name.length === 0 || name.includes('\0')) throw new Error(`invalid PostgreSQL schema name: ${JSON.stringify(name)}`);
  return `"${name.replace(/"/g, '""')}"`;
}

/** A single-quoted SQL string literal. */
export function quoteLiteral(value: string): string {
  if (value.includes('\0')) throw new Error(`invalid SQL literal: ${JSON.stringify(value)}`);
  return `'${value.replace(/'/g, "''")}'`;
}
