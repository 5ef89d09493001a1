import type pg from 'pg';

export type Verdict = 'ok' | 'unknown' | 'used' | 'mismatch';

/**
 * Single-use approvals in PostgreSQL (see `ResponseStore.recordApproval`): bound to a digest of
 * what was approved, used once atomically across replicas.
 */
export class PostgresApprovals {
  constructor(
    private readonly pool: pg.Pool,
    /** The qualified table name. */
    private readonly table: string,
  ) {}

  async record(id: string, digest: string, owner: string): Promise<void> {
    await this.pool.query(`INSERT INTO ${this.table} (id, digest, created_at, owner) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`, [id, digest, Date.now(), owner]);
  }

  async check(id: string, digest: string, owner: string): Promise<Verdict> {
    const { rows } = await this.pool.query<{ digest: string; used: boolean }>(`SELECT digest, used_at IS NOT NULL AS used FROM ${this.table} WHERE id = $1 AND owner = $2`, [id, owner]);
    if (rows.length === 0) return 'unknown';
    if (rows[0].digest !== digest) return 'mismatch';
    return rows[0].used ? 'used' : 'ok';
  }

  async consume(id: string, digest: string, owner: string): Promise<Verdict> {
    // One statement: the UPDATE takes the row lock and rechecks `used_at IS NULL` after a
    // concurrent consumer commits, so exactly one caller wins; the SELECT (the statement's
    // snapshot) tells the losers why.
    const { rows } = await this.pool.query<{ consumed: boolean; digest: string | null }>(
      `WITH consumed AS (
         UPDATE ${this.table} SET used_at = $3 WHERE id = $1 AND digest = $2 AND owner = $4 AND used_at IS NULL RETURNING id
       )
       SELECT EXISTS (SELECT 1 FROM consumed) AS consumed, (SELECT digest FROM ${this.table} WHERE id = $1 AND owner = $4) AS digest`,
      [id, digest, Date.now(), owner],
    );
    const row = rows[0];
    if (row.consumed) return 'ok';
    if (row.digest === null) return 'unknown';
    return row.digest !== digest ? 'mismatch' : 'used';
  }
}
