import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../util/logger.js';
import { hashApiKey, normalizeKeyHash } from './key-hash.js';
import type { KeyStore } from './key-store.js';

/** An accepted API key as the gateway uses it. */
export interface ApiKey {
  name: string;
  tenant: string;
  /** Requests per minute (undefined = no limit). */
  rpm?: number;
  /** Turns running at once (undefined = no limit). */
  maxConcurrent?: number;
}

/** A key from the config file (`auth.keys[]`): the key itself or its sha256. */
export interface ConfiguredKey {
  name: string;
  key?: string;
  keyHash?: string;
  tenant?: string;
  rpm?: number;
  maxConcurrent?: number;
}

interface Entry {
  digest: Buffer;
  key: ApiKey;
}

/**
 * Every accepted key by its sha256: checking a request is one hash and one map lookup. The keys
 * made with `switchyard keys create` are reloaded from the store every `refreshMs`, so a created
 * or revoked key takes effect on a running gateway (every replica) within that time.
 *
 * Authentication is on as soon as any key exists — in the config or in the store, revoked ones
 * included: revoking the last key must not open the gateway.
 */
export class KeyRing {
  private byHash = new Map<string, Entry>();
  private storeHasKeys = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly configured: Map<string, Entry>;

  constructor(
    configKeys: readonly ConfiguredKey[],
    private readonly store: KeyStore | undefined,
    private readonly log: Logger,
  ) {
    this.configured = new Map();
    for (const k of configKeys) {
      const hex = k.key !== undefined ? hashApiKey(k.key) : normalizeKeyHash(k.keyHash ?? '');
      if (!hex) throw new Error(`auth.keys '${k.name}': keyHash must be 64 hex digits (sha256)`);
      this.configured.set(hex, { digest: Buffer.from(hex, 'hex'), key: { name: k.name, tenant: k.tenant ?? k.name, rpm: k.rpm, maxConcurrent: k.maxConcurrent } });
    }
    this.byHash = new Map(this.configured);
  }

  /** Whether clients must present a key. */
  get enabled(): boolean {
    return this.configured.size > 0 || this.storeHasKeys;
  }

  /** Loads the store's keys; then keeps reloading them every `refreshMs`. */
  async start(refreshMs: number): Promise<void> {
    await this.refresh();
    if (!this.store) return;
    this.timer = setInterval(() => {
      this.refresh().catch((err: unknown) => this.log.warn({ err }, 'reloading API keys failed; the last loaded keys stay in use'));
    }, refreshMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  async refresh(): Promise<void> {
    if (!this.store) return;
    const stored = await this.store.list();
    const next = new Map(this.configured);
    for (const k of stored) {
      if (k.revokedAt !== undefined) continue;
      next.set(k.keyHash, { digest: Buffer.from(k.keyHash, 'hex'), key: { name: k.name, tenant: k.tenant, rpm: k.rpm, maxConcurrent: k.maxConcurrent } });
    }
    this.storeHasKeys = stored.length > 0;
    this.byHash = next;
  }

  /** The key a client presented, if it is accepted. */
  authenticate(presented: string): ApiKey | undefined {
    const digest = createHash('sha256').update(presented, 'utf8').digest();
    const entry = this.byHash.get(digest.toString('hex'));
    // found by its digest; the digests compared in constant time all the same
    return entry && timingSafeEqual(entry.digest, digest) ? entry.key : undefined;
  }
}
