/** An API key as stored: never the key itself, only its hash. */
export interface StoredKey {
  name: string;
  /** Whose objects the key reaches (responses, conversations, files, …). */
  tenant: string;
  /** sha256 of the key, hex. */
  keyHash: string;
  /** Requests per minute (undefined = no limit). */
  rpm?: number;
  /** Turns running at once (undefined = no limit). */
  maxConcurrent?: number;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms; revoked keys stay listed, and keep authentication on. */
  revokedAt?: number;
}

/** The keys made with `switchyard keys create`, in the gateway's database (SQLite or PostgreSQL). */
export interface KeyStore {
  /** Adds a key; false when a key of that name exists already. */
  create(key: Omit<StoredKey, 'createdAt' | 'revokedAt'>): Promise<boolean>;
  /** Every key, revoked ones included, oldest first. */
  list(): Promise<StoredKey[]>;
  /** Revokes a key by name; false when there is no such key (or it was revoked already). */
  revoke(name: string): Promise<boolean>;
  close(): Promise<void>;
}

export interface KeyRow {
  name: string;
  tenant: string;
  key_hash: string;
  rpm: number | null;
  max_concurrent: number | null;
  created_at: number | string;
  revoked_at: number | string | null;
}

export function decodeKeyRow(row: KeyRow): StoredKey {
  return {
    name: row.name,
    tenant: row.tenant,
    keyHash: row.key_hash,
    ...(row.rpm !== null ? { rpm: row.rpm } : {}),
    ...(row.max_concurrent !== null ? { maxConcurrent: row.max_concurrent } : {}),
    createdAt: Number(row.created_at),
    ...(row.revoked_at !== null ? { revokedAt: Number(row.revoked_at) } : {}),
  };
}
