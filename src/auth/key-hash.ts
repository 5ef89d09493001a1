import { createHash, randomBytes } from 'node:crypto';

/** Prefix of the keys `switchyard keys create` makes (recognisable in a leaked-secret scan). */
export const KEY_PREFIX = 'sk-swyd-';

/** A new random API key (256 bits). */
export function newApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** The stored form of a key: sha256, hex. Keys are random, so a fast hash is enough (no salt, no KDF). */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A configured `keyHash` (`sha256:<hex>` or bare hex) in the stored form; undefined when malformed. */
export function normalizeKeyHash(text: string): string | undefined {
  const hex = text.startsWith('sha256:') ? text.slice(7) : text;
  return /^[0-9a-fA-F]{64}$/.test(hex) ? hex.toLowerCase() : undefined;
}
