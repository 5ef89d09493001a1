/** The tenant every container belongs to until API keys and tenants exist. */
export const DEFAULT_TENANT = 'default';

/** A container's metadata (its files live on disk, in its working folder). */
export interface ContainerRecord {
  id: string;
  owner: string;
  name: string;
  /** Unix seconds. */
  createdAt: number;
  lastActiveAt: number;
  /** Idle minutes after which the container expires (anchor: last activity). */
  expiresAfterMinutes: number;
  /** As requested: `1g`, `4g`, … (the box's memory cap follows it, at least 512 MiB). */
  memoryLimit: string;
}

/** One file in a container's working folder, with a stable id. */
export interface ContainerFileRecord {
  id: string;
  containerId: string;
  /** The path as code in the container sees it (`/mnt/data/report.csv`). */
  path: string;
  bytes: number;
  createdAt: number;
  /** `user`: uploaded through the API; `assistant`: written by code. */
  source: 'user' | 'assistant';
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
}

export interface PageOptions {
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
}

/**
 * Container metadata behind one interface: SQLite (embedded default) and PostgreSQL (replicas),
 * the same conformance test over both. Every read is scoped to an owner (tenant).
 */
export interface ContainerStore {
  create(record: ContainerRecord): Promise<void>;
  get(id: string, owner: string): Promise<ContainerRecord | undefined>;
  list(owner: string, options: PageOptions): Promise<Page<ContainerRecord>>;
  touch(id: string, lastActiveAt: number): Promise<void>;
  /** Deletes the container and its file records; false when it did not exist. */
  delete(id: string): Promise<boolean>;
  /** Containers idle past their expiry at `now` (unix seconds), any owner. */
  expired(now: number, limit: number): Promise<ContainerRecord[]>;

  /** Inserts a file record, or updates size (and keeps id and source) when the path is known. Returns the stored record. */
  putFile(file: ContainerFileRecord): Promise<ContainerFileRecord>;
  getFile(containerId: string, fileId: string): Promise<ContainerFileRecord | undefined>;
  listFiles(containerId: string, options: PageOptions): Promise<Page<ContainerFileRecord>>;
  /** Every file record of a container (for syncing with the folder). */
  allFiles(containerId: string): Promise<ContainerFileRecord[]>;
  deleteFile(containerId: string, fileId: string): Promise<boolean>;
  close(): Promise<void>;
}
