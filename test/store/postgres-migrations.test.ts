// Replicas starting together on a schema that does not exist yet: every store of the gateway
// (responses, files, containers, API keys) migrates the schema at once in each of them, and none
// may fail — a lock per store let two replicas migrating different stores deadlock on the
// catalog ("deadlock detected" at start-up, seen in CI). PostgreSQL skips say why when absent.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresKeyStore } from '../../src/auth/postgres-key-store.js';
import { PostgresContainerStore } from '../../src/containers/postgres-containers.js';
import { PostgresFileSearchStore } from '../../src/files/postgres-store.js';
import { createPool, migrate, PostgresResponseStore } from '../../src/store/postgres.js';
import { MIGRATION_LOCK } from '../../src/store/postgres-pool.js';
import { dropSchemas, PG_URL, postgresAbsent, probePostgres } from '../helpers/postgres.js';

const pgUnavailable = await probePostgres(PG_URL);
const schemas: string[] = [];
afterAll(async () => {
  if (!pgUnavailable) await dropSchemas(schemas);
});

describe('PostgreSQL migrations of replicas starting together', () => {
  if (pgUnavailable) {
    postgresAbsent(pgUnavailable);
    return;
  }

  it('every store of three replicas opens on a fresh schema, ten times over', async () => {
    for (let round = 0; round < 10; round++) {
      const schema = `switchyard_test_${randomBytes(6).toString('hex')}`;
      schemas.push(schema);
      const replica = async () => {
        const keysPool = createPool(PG_URL, { max: 2 });
        const [responses, files, containers] = await Promise.all([
          PostgresResponseStore.open(PG_URL, { schema, max: 2 }),
          PostgresFileSearchStore.open(PG_URL, { schema, max: 2 }),
          PostgresContainerStore.open(PG_URL, { schema, max: 2 }),
          PostgresKeyStore.open(keysPool, schema),
        ]);
        await Promise.all([responses.close(), files.close(), containers.close(), keysPool.end()]);
        return 'opened';
      };
      expect(await Promise.allSettled([replica(), replica(), replica()])).toEqual([0, 1, 2].map(() => ({ status: 'fulfilled', value: 'opened' })));
    }
  });

  it('runs a migration again when PostgreSQL aborts it in a deadlock, and opens', async () => {
    const schema = `switchyard_test_${randomBytes(6).toString('hex')}`;
    schemas.push(schema);
    const pool = createPool(PG_URL, { max: 4 });
    const other = await pool.connect();
    try {
      await migrate(pool, schema);
      // another transaction holds the table the migration indexes, then waits for the migration's
      // lock: a cycle, which the migration (waiting first) detects after deadlock_timeout and loses
      await other.query('BEGIN');
      await other.query(`LOCK TABLE ${schema}.responses IN ACCESS EXCLUSIVE MODE`);
      const migrating = migrate(pool, schema);
      const outcome = migrating.then(() => 'migrated', (error: { code?: string }) => `failed: ${error.code}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await other.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [MIGRATION_LOCK, schema]);
      await other.query('COMMIT');
      expect(await outcome).toBe('migrated');
    } finally {
      other.release();
      await pool.end();
    }
  });
});
