import type Database from 'better-sqlite3';

/**
 * Creates every table of the gateway in a SQLite file when missing, then applies the column
 * migrations of later versions (SQLite has no `ADD COLUMN IF NOT EXISTS`: the columns present are
 * read first). Idempotent: each store calls it on the connection it is given.
 */
export function migrateSqlite(db: Database.Database): void {
  db.transaction(() => migrateNow(db)).immediate();
}

function migrateNow(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS responses (
      id TEXT PRIMARY KEY,
      previous_response_id TEXT,
      status TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      response TEXT NOT NULL,
      input_items TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS background_runs (
      id TEXT PRIMARY KEY,
      owner TEXT NOT NULL,
      heartbeat_at INTEGER NOT NULL,
      cancel_requested INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS response_events (
      response_id TEXT NOT NULL,
      sequence INTEGER NOT NULL,
      event TEXT NOT NULL,
      PRIMARY KEY (response_id, sequence)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS gateway_call_records (
      item_id TEXT PRIMARY KEY,
      response_id TEXT NOT NULL,
      record TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS gateway_call_records_by_response ON gateway_call_records (response_id);
    CREATE TABLE IF NOT EXISTS approvals (
      id TEXT PRIMARY KEY,
      digest TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      used_at INTEGER
    );
    CREATE TABLE IF NOT EXISTS conversations (
      id TEXT PRIMARY KEY,
      created_at INTEGER NOT NULL,
      metadata TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS conversation_items (
      conversation_id TEXT NOT NULL,
      position INTEGER NOT NULL,
      item_id TEXT NOT NULL,
      item TEXT NOT NULL,
      PRIMARY KEY (conversation_id, position)
    );
    CREATE INDEX IF NOT EXISTS conversation_items_by_item_id ON conversation_items (conversation_id, item_id);
    CREATE TABLE IF NOT EXISTS conversation_locks (
      conversation_id TEXT PRIMARY KEY,
      owner TEXT NOT NULL,
      until_ms INTEGER NOT NULL
    );
  `);
  // v2: every stored run (foreground too) is a row of background_runs; background runs queue first
  addColumns(db, 'background_runs', {
    state: "TEXT NOT NULL DEFAULT 'running'",
    queued_at: 'INTEGER',
    request: 'TEXT',
  });
  db.exec('CREATE INDEX IF NOT EXISTS background_runs_queue ON background_runs (state, queued_at, id)');
  // v3: retention prunes by age — responses by their created_at, conversation items by when they were added
  if (addColumns(db, 'conversation_items', { created_at: 'INTEGER' }).length > 0) {
    // items stored before: as old as their conversation (the closest age known)
    db.exec('UPDATE conversation_items SET created_at = (SELECT created_at FROM conversations WHERE id = conversation_id) WHERE created_at IS NULL');
  }
  // v4: every stored object belongs to a tenant (an API key's); rows from before are the default tenant's
  for (const table of ['responses', 'conversations', 'approvals', 'gateway_call_records']) addColumns(db, table, { owner: "TEXT NOT NULL DEFAULT 'default'" });
  db.exec(`
    CREATE INDEX IF NOT EXISTS responses_by_created_at ON responses (created_at);
    CREATE INDEX IF NOT EXISTS conversation_items_by_created_at ON conversation_items (created_at);
    CREATE INDEX IF NOT EXISTS approvals_by_created_at ON approvals (created_at);
  `);
  // v5: a counter every deletion of responses bumps, so cached chains know when to re-read (chain-cache.ts)
  db.exec(`
    CREATE TABLE IF NOT EXISTS store_epochs (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    INSERT OR IGNORE INTO store_epochs (name, value) VALUES ('deletions', 0);
  `);
}

/** Adds the columns missing from `table`; returns the names added. */
function addColumns(db: Database.Database, table: string, columns: Record<string, string>): string[] {
  const present = new Set((db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name));
  const added: string[] = [];
  for (const [name, definition] of Object.entries(columns)) {
    if (present.has(name)) continue;
    db.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${definition}`);
    added.push(name);
  }
  return added;
}
