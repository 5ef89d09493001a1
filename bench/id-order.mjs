// Why ids start with their minting millisecond (src/util/ids.ts): the gateway's `responses` and
// `background_runs` tables and statements (as src/store/sqlite-schema.ts and sqlite.ts make them),
// stored turns written as the gateway writes them — each turn's run and running response in one
// group commit, its settled response and the run's removal in the next — with random ids vs
// time-first ids. Wall time and process CPU per stored turn, alternating.
//
//   node bench/id-order.mjs            (no build needed; BENCH_ID_TURNS, default 60,000, per side and round)
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const TURNS = Number(process.env.BENCH_ID_TURNS ?? 60_000);
const GROUP = 32;
const RESPONSE = JSON.stringify({ object: 'response', output: [{ type: 'message', content: [{ type: 'output_text', text: 'x'.repeat(900) }] }] });
const INPUT = JSON.stringify([{ role: 'user', content: 'hello' }]);

const randomId = () => `resp_${randomBytes(24).toString('hex')}`;
const timeFirstId = () => `resp_${Date.now().toString(16).padStart(12, '0')}${randomBytes(18).toString('hex')}`;

function run(name, newId) {
  const dir = mkdtempSync(join(tmpdir(), `switchyard-bench-ids-${name}-`));
  const db = new Database(join(dir, 'db.sqlite'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(`CREATE TABLE responses (id TEXT PRIMARY KEY, previous_response_id TEXT, status TEXT NOT NULL, created_at INTEGER NOT NULL, response TEXT NOT NULL, input_items TEXT NOT NULL, owner TEXT NOT NULL DEFAULT 'default');
      CREATE INDEX responses_by_created_at ON responses (created_at);
      CREATE TABLE background_runs (id TEXT PRIMARY KEY, owner TEXT NOT NULL, heartbeat_at INTEGER NOT NULL, cancel_requested INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL DEFAULT 'running', queued_at INTEGER, request TEXT);
      CREATE INDEX background_runs_queue ON background_runs (state, queued_at, id);`);
    const upsert = db.prepare(`INSERT INTO responses (id, previous_response_id, status, created_at, response, input_items, owner) VALUES (?, NULL, ?, ?, ?, ?, 'default')
      ON CONFLICT(id) DO UPDATE SET status = excluded.status, response = excluded.response, input_items = excluded.input_items`);
    const insertRun = db.prepare("INSERT OR REPLACE INTO background_runs (id, owner, heartbeat_at, state, queued_at, request) VALUES (?, 'gw', ?, 'running', NULL, NULL)");
    const ownsRun = db.prepare("SELECT 1 FROM background_runs WHERE id = ? AND owner = 'gw'");
    const deleteRun = db.prepare('DELETE FROM background_runs WHERE id = ?');
    const commit = db.transaction((work) => work());
    let settling = [];
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let done = 0; done < TURNS; done += GROUP) {
      const starting = Array.from({ length: GROUP }, newId);
      const now = Date.now();
      commit.immediate(() => {
        for (const id of starting) {
          insertRun.run(id, now);
          upsert.run(id, 'in_progress', now, RESPONSE, INPUT);
        }
        for (const id of settling) {
          if (ownsRun.get(id)) upsert.run(id, 'completed', now, RESPONSE, INPUT);
          deleteRun.run(id);
        }
      });
      settling = starting;
    }
    const wallUs = Number(process.hrtime.bigint() - t0) / 1000 / TURNS;
    const used = process.cpuUsage(cpu0);
    return { wallUs, cpuUs: (used.user + used.system) / TURNS };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`${TURNS} stored turns per side and round, group commits of ${GROUP}, node ${process.version}`);
for (let round = 0; round < 2; round++) {
  for (const [name, newId] of round % 2 === 0 ? [['random', randomId], ['time-first', timeFirstId]] : [['time-first', timeFirstId], ['random', randomId]]) {
    const r = run(name, newId);
    console.log(`  ${name.padEnd(10)} ${r.wallUs.toFixed(1)} µs wall, ${r.cpuUs.toFixed(1)} µs CPU per stored turn`);
  }
}
