import type { ContainerFileRecord, ContainerRecord } from './store.js';

/** Table rows of both stores (same columns in SQLite and PostgreSQL). */
export interface ContainerRow {
  id: string;
  owner: string;
  name: string;
  created_at: number | string;
  last_active_at: number | string;
  expires_after_minutes: number;
  memory_limit: string;
}

export interface FileRow {
  id: string;
  container_id: string;
  path: string;
  bytes: number | string;
  created_at: number | string;
  source: 'user' | 'assistant';
}

export function toContainer(row: ContainerRow): ContainerRecord {
  return {
    id: row.id,
    owner: row.owner,
    name: row.name,
    createdAt: Number(row.created_at),
    lastActiveAt: Number(row.last_active_at),
    expiresAfterMinutes: Number(row.expires_after_minutes),
    memoryLimit: row.memory_limit,
  };
}

export function toFile(row: FileRow): ContainerFileRecord {
  return { id: row.id, containerId: row.container_id, path: row.path, bytes: Number(row.bytes), createdAt: Number(row.created_at), source: row.source };
}
