// Long previous_response_id chains for the benchmarks, made without a model: one stored turn's
// row cloned straight into the gateway's SQLite file (fresh response and item ids, linked by
// previous_response_id) — byte for byte what the gateway writes. Building a 1,000-deep chain
// through the gateway would send Σ history ≈ 2.5 GB upstream.
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';

/** Chains of each depth cloned from the stored response `templateId` (fresh ids); their tips by depth. */
export function cloneChains(file, templateId, depths) {
  const db = new Database(file);
  try {
    const row = db.prepare('SELECT * FROM responses WHERE id = ?').get(templateId);
    if (!row) throw new Error('growth: the template turn was not stored');
    const columns = Object.keys(row);
    const insert = db.prepare(`INSERT INTO responses (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`);
    const freshId = (id) => `${id.slice(0, id.indexOf('_') + 1)}${randomBytes(12).toString('hex')}`;
    const tips = {};
    db.transaction(() => {
      for (const depth of depths) {
        let previous = null;
        for (let k = 0; k < depth; k++) {
          const response = JSON.parse(row.response);
          const inputItems = JSON.parse(row.input_items);
          response.id = freshId(response.id);
          response.previous_response_id = previous;
          for (const item of [...inputItems, ...response.output]) if (typeof item.id === 'string') item.id = freshId(item.id);
          insert.run({ ...row, id: response.id, previous_response_id: previous, response: JSON.stringify(response), input_items: JSON.stringify(inputItems) });
          previous = response.id;
        }
        tips[depth] = previous;
      }
    })();
    return tips;
  } finally {
    db.close();
  }
}
