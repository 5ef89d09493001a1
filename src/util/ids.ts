import { randomBytes } from 'node:crypto';

/** Random bytes per id: 144 bits, unguessable. */
const RANDOM_BYTES = 18;
/** Hex digits per id's random part. */
const RANDOM_HEX = RANDOM_BYTES * 2;
/**
 * Random bytes are drawn in batches, hex-encoded at once: one syscall and one encoding per 256
 * ids keeps id minting off the hot path's profile (an id is then a slice of the batch's text).
 */
const BATCH_HEX = RANDOM_HEX * 256;
let pool = '';
let offset = BATCH_HEX;
let lastMs = -1;
let msHex = '';

/**
 * Opaque ids with OpenAI's prefixes (`resp_…`, `msg_…`): 48 hex digits, the first 12 the
 * millisecond of minting and the other 36 random. Time first, so ids minted one after another sort
 * together: a store's primary-key index (SQLite, PostgreSQL) takes each new response, item or
 * conversation at its right edge instead of on a random page, and a group commit writes a few
 * index pages instead of one per row (`bench/README.md`: about half the SQLite time per stored
 * turn once the table holds tens of thousands of rows).
 */
export function newId(prefix: string): string {
  if (offset === BATCH_HEX) {
    pool = randomBytes(BATCH_HEX / 2).toString('hex');
    offset = 0;
  }
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    msHex = now.toString(16).padStart(12, '0');
  }
  const random = pool.slice(offset, offset + RANDOM_HEX);
  offset += RANDOM_HEX;
  return `${prefix}_${msHex}${random}`;
}
