import { randomBytes } from 'node:crypto';

/**
 * Opaque ids with OpenAI's prefixes (`resp_…`, `msg_…`). Random bytes are drawn in batches:
 * one syscall per 256 ids keeps id minting off the hot path's profile.
 */
const BATCH = 24 * 256;
let pool = randomBytes(BATCH);
let offset = 0;

export function newId(prefix: string): string {
  if (offset + 24 > BATCH) {
    pool = randomBytes(BATCH);
    offset = 0;
  }
  const id = pool.toString('hex', offset, offset + 24);
  offset += 24;
  return `${prefix}_${id}`;
}
