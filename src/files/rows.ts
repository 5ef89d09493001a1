import type { Attributes, BatchRecord, ChunkingStrategy, ExpiresAfter, FileRecord, StoreFileRecord, StoreFileStatus, StoredVectors, VectorStoreRecord } from './store.js';

/**
 * Row ↔ record mapping shared by the SQLite and PostgreSQL stores (both keep JSON as text and
 * times as integer seconds, so one mapping serves both).
 */

export interface FileRow {
  id: string;
  owner: string;
  filename: string;
  purpose: string;
  bytes: number | string;
  created_at: number | string;
  expires_at: number | string | null;
}

export const fileFromRow = (r: FileRow): FileRecord => ({
  id: r.id,
  owner: r.owner,
  filename: r.filename,
  purpose: r.purpose,
  bytes: Number(r.bytes),
  createdAt: Number(r.created_at),
  expiresAt: r.expires_at === null ? null : Number(r.expires_at),
});

export interface StoreRow {
  id: string;
  owner: string;
  name: string | null;
  created_at: number | string;
  last_active_at: number | string;
  metadata: string;
  expires_after: string | null;
  keyword_only_reason: string | null;
}

export const storeFromRow = (r: StoreRow): VectorStoreRecord => ({
  id: r.id,
  owner: r.owner,
  name: r.name,
  createdAt: Number(r.created_at),
  lastActiveAt: Number(r.last_active_at),
  metadata: JSON.parse(r.metadata) as Record<string, string>,
  expiresAfter: r.expires_after === null ? null : (JSON.parse(r.expires_after) as ExpiresAfter),
  keywordOnlyReason: r.keyword_only_reason,
});

export interface StoreFileRow {
  store_id: string;
  file_id: string;
  owner: string;
  batch_id: string | null;
  status: string;
  created_at: number | string;
  attributes: string;
  chunking: string;
  usage_bytes: number | string;
  last_error: string | null;
}

export const storeFileFromRow = (r: StoreFileRow): StoreFileRecord => ({
  storeId: r.store_id,
  fileId: r.file_id,
  owner: r.owner,
  batchId: r.batch_id,
  status: r.status as StoreFileStatus,
  createdAt: Number(r.created_at),
  attributes: JSON.parse(r.attributes) as Attributes,
  chunking: JSON.parse(r.chunking) as ChunkingStrategy,
  usageBytes: Number(r.usage_bytes),
  lastError: r.last_error === null ? null : (JSON.parse(r.last_error) as StoreFileRecord['lastError']),
});

export interface BatchRow {
  id: string;
  store_id: string;
  owner: string;
  created_at: number | string;
  cancelled: number | boolean;
}

export const batchFromRow = (r: BatchRow): BatchRecord => ({
  id: r.id,
  storeId: r.store_id,
  owner: r.owner,
  createdAt: Number(r.created_at),
  cancelled: r.cancelled === true || r.cancelled === 1,
});

/** A float32 embedding as the bytes stored in a BLOB / bytea column (little-endian, as in memory). */
export function vectorBytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** Rows of `(id, file, float32 bytes)` packed into one matrix for the exact scan. */
export function packVectors(rows: Array<{ id: number; fileId: string; bytes: Buffer | Uint8Array }>): StoredVectors {
  const dimensions = rows.length > 0 ? rows[0].bytes.byteLength / 4 : 0;
  const matrix = new Float32Array(rows.length * dimensions);
  const chunkIds = new Int32Array(rows.length);
  const fileIds: string[] = [];
  let n = 0;
  for (const row of rows) {
    // a store embedded with two models (a config change) keeps only the first width comparable
    if (row.bytes.byteLength !== dimensions * 4) continue;
    const bytes = Uint8Array.from(row.bytes);
    matrix.set(new Float32Array(bytes.buffer, 0, dimensions), n * dimensions);
    chunkIds[n] = row.id;
    fileIds.push(row.fileId);
    n++;
  }
  return { chunkIds: chunkIds.subarray(0, n), fileIds, matrix: matrix.subarray(0, n * dimensions), dimensions };
}
