import type pg from 'pg';
import type { RunHeartbeat } from './store.js';

/**
 * The runs table of the PostgreSQL store (see `ResponseStore`'s runs): who owns each running or
 * queued response, heartbeats and cancellation requests, and the background queue. Writes that
 * also touch a response (starting, saving, settling, failing a stale run) stay with the store.
 */
export class PostgresRuns {
  /**
   * A run's upsert, `VALUES (id, owner, heartbeat_at, state, queued_at, request)` in between:
   * registering a run again hands it over, its cancellation request cleared.
   */
  readonly upsert: { head: string; tail: string };

  constructor(
    private readonly pool: pg.Pool,
    /** The qualified table name. */
    private readonly table: string,
  ) {
    this.upsert = {
      head: `INSERT INTO ${table} (id, owner, heartbeat_at, state, queued_at, request)`,
      tail: `ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, heartbeat_at = excluded.heartbeat_at, cancel_requested = FALSE,
         state = excluded.state, queued_at = excluded.queued_at, request = excluded.request`,
    };
  }

  async register(id: string, owner: string, queued?: { request: string }): Promise<void> {
    const now = Date.now();
    await this.pool.query(`${this.upsert.head} VALUES ($1, $2, $3, $4, $5, $6) ${this.upsert.tail}`, [id, owner, now, queued ? 'queued' : 'running', queued ? now : null, queued?.request ?? null]);
  }

  async heartbeat(owner: string, ids: readonly string[]): Promise<RunHeartbeat> {
    if (ids.length === 0) return { cancelled: [], lost: [] };
    const { rows } = await this.pool.query<{ id: string; cancel_requested: boolean }>(
      `UPDATE ${this.table} SET heartbeat_at = $3 WHERE id = ANY($2::text[]) AND owner = $1 RETURNING id, cancel_requested`,
      [owner, ids, Date.now()],
    );
    const held = new Map(rows.map((row) => [row.id, row.cancel_requested]));
    return { cancelled: ids.filter((id) => held.get(id) === true), lost: ids.filter((id) => !held.has(id)) };
  }

  async requestCancel(id: string): Promise<void> {
    await this.pool.query(`UPDATE ${this.table} SET cancel_requested = TRUE WHERE id = $1`, [id]);
  }

  async stale(before: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(`SELECT id FROM ${this.table} WHERE heartbeat_at < $1 AND state = 'running' ORDER BY heartbeat_at, id`, [before]);
    return rows.map((row) => row.id);
  }

  async claimQueued(owner: string, staleBefore: number): Promise<{ id: string; request: string | null } | undefined> {
    // SKIP LOCKED: replicas claiming at once take different runs instead of queueing on one row
    const { rows } = await this.pool.query<{ id: string; request: string | null }>(
      `WITH next AS (
         SELECT id, request FROM ${this.table} WHERE state = 'queued' AND (owner = $1 OR heartbeat_at < $2)
         ORDER BY queued_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
       )
       UPDATE ${this.table} r SET state = 'running', owner = $1, heartbeat_at = $3, request = NULL
       FROM next WHERE r.id = next.id RETURNING r.id, next.request`,
      [owner, staleBefore, Date.now()],
    );
    return rows[0];
  }

  async finish(id: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.table} WHERE id = $1`, [id]);
  }
}
