// SQL text helpers shared by every PostgreSQL store (no I/O).

/** A double-quoted SQL identifier. */
export function quoteIdent(name: string): string {
  if (name.length === 0 || name.includes('\0')) throw new Error(`invalid PostgreSQL schema name: ${JSON.stringify(name)}`);
  return `"${name.replace(/"/g, '""')}"`;
}
