import pg from 'pg';
import { expect, it } from 'vitest';

// PostgreSQL runs on the development machines and in CI; tests that need it say why they skip
// when it is absent (SWITCHYARD_TEST_POSTGRES_URL overrides the address; SWITCHYARD_REQUIRE_POSTGRES=1
// turns the skip into a failure, as CI does).

export const PG_URL = process.env.SWITCHYARD_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REQUIRE_PG = process.env.SWITCHYARD_REQUIRE_POSTGRES === '1';

/** Undefined when PostgreSQL answers within 2 s, else why not. */
export async function probePostgres(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no answer within 2 s')), 2000);
    });
    await Promise.race([client.connect().then(() => client.query('SELECT 1')), timeout]);
    return undefined;
  } catch (error) {
    return `PostgreSQL not reachable at ${url.replace(/\/\/[^@/]*@/, '//***@')}: ${(error as Error).message}`;
  } finally {
    clearTimeout(timer);
    void client.end().catch(() => undefined);
  }
}

/**
 * Stands in for a block whose PostgreSQL is absent (call it inside the block's describe, then
 * return): with SWITCHYARD_REQUIRE_POSTGRES=1 (CI) a failing test that says why; elsewhere a
 * skipped test whose title says why ("skipped, needs PostgreSQL: <probe's reason>").
 */
export function postgresAbsent(reason: string): void {
  if (REQUIRE_PG) it('PostgreSQL is reachable (SWITCHYARD_REQUIRE_POSTGRES=1)', () => expect.fail(reason));
  else it.skip(`skipped, needs PostgreSQL: ${reason}`, () => undefined);
}

/** Drops the test schemas a file created (nothing to do when PostgreSQL was not used). */
export async function dropSchemas(schemas: readonly string[]): Promise<void> {
  if (schemas.length === 0) return;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}
