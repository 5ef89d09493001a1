// Group commit of the embedded store (src/store/sqlite-batches.ts): writes of one loop turn share
// one transaction, each in its own savepoint; a caller hears of its write only after the commit,
// and one write's failure rolls back only that write.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteWriteBatches } from '../../src/store/sqlite-batches.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function open(): { writer: Database.Database; reader: Database.Database; batches: SqliteWriteBatches } {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-batches-'));
  const writer = new Database(join(dir, 'db'));
  writer.pragma('journal_mode = WAL');
  writer.exec('CREATE TABLE t (id TEXT PRIMARY KEY)');
  // another connection: it sees only what was committed
  const reader = new Database(join(dir, 'db'));
  return { writer, reader, batches: new SqliteWriteBatches(writer) };
}

const ids = (db: Database.Database): string[] => (db.prepare('SELECT id FROM t ORDER BY id').pluck().all() as string[]);

describe('SqliteWriteBatches', () => {
  it('writes of one loop turn commit together; each caller resolves after the commit, a failing write alone is rolled back', async () => {
    const { writer, reader, batches } = open();
    const insert = writer.prepare('INSERT INTO t (id) VALUES (?)');
    const seenAtResolve: string[][] = [];
    const a = batches.run(() => insert.run('a')).then(() => seenAtResolve.push(ids(reader)));
    const b = batches.run(() => {
      insert.run('b');
      throw new Error('b failed after writing');
    });
    const c = batches.run(() => {
      insert.run('c');
      return 'c done';
    });
    // nothing is written before the batch runs
    expect(ids(reader)).toEqual([]);
    await expect(b).rejects.toThrow('b failed after writing');
    await expect(c).resolves.toBe('c done');
    await a;
    expect(seenAtResolve).toEqual([['a', 'c']]);
    expect(ids(reader)).toEqual(['a', 'c']);
    reader.close();
    writer.close();
  });

  it('a lone write fails alone and a failed commit rejects every write of the batch', async () => {
    const { writer, reader, batches } = open();
    const insert = writer.prepare('INSERT INTO t (id) VALUES (?)');
    await expect(batches.run(() => insert.run('x'))).resolves.toBeDefined();
    await expect(batches.run(() => insert.run('x'))).rejects.toThrow(/UNIQUE/);
    // the reader holds a write lock: the batch cannot commit (busy), both writes are refused
    writer.pragma('busy_timeout = 0');
    reader.exec('BEGIN IMMEDIATE');
    const both = [batches.run(() => insert.run('y')), batches.run(() => insert.run('z'))];
    for (const write of both) await expect(write).rejects.toThrow(/locked|busy/i);
    reader.exec('ROLLBACK');
    expect(ids(reader)).toEqual(['x']);
    reader.close();
    writer.close();
  });

  it('flush() commits what is pending at once (before the connection closes)', async () => {
    const { writer, reader, batches } = open();
    const pending = batches.run(() => writer.prepare('INSERT INTO t (id) VALUES (?)').run('late'));
    batches.flush();
    expect(ids(reader)).toEqual(['late']);
    writer.close();
    await expect(pending).resolves.toBeDefined();
    reader.close();
  });
});
