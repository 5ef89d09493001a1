import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Box, RunResult } from '../sandbox/box.js';
import { MIN_MEMORY_BYTES } from '../sandbox/limits.js';
import { NoBoxAvailable, type BoxPool } from '../sandbox/pool.js';
import { openInside, removeInside, scanFolder, writeInside, type FolderEntry } from './folder.js';
import { DEFAULT_TENANT, type ContainerFileRecord, type ContainerRecord, type ContainerStore, type Page, type PageOptions } from './store.js';

/**
 * Where input `file_ids` come from: the Files API, when the gateway has one. Until then
 * containers refuse `file_ids` with a clear `400` (see ContainerService.create).
 */
export interface FileSource {
  read(fileId: string, owner: string): Promise<{ filename: string; data: Uint8Array } | undefined>;
}

export interface ContainerServiceSettings {
  /** Parent of the containers' working folders. */
  dir: string;
  runTimeoutMs: number;
  expiresAfterMinutes: number;
  maxMemoryBytes: number;
}

export interface NewContainer {
  owner?: string;
  name: string;
  memoryLimit?: string;
  expiresAfterMinutes?: number;
  fileIds?: string[];
  /** Use this id (an `auto` container reserved by a request); a fresh one otherwise. */
  id?: string;
}

/** A run in a container: what the code printed and drew, and the files it created or changed. */
export interface ContainerRun {
  result: RunResult;
  files: ContainerFileRecord[];
}

/** A client-visible failure of a container operation (the routes map it to 400/404). */
export class ContainerError extends Error {
  constructor(message: string, readonly kind: 'not_found' | 'invalid' | 'unavailable', readonly param: string | null = null) {
    super(message);
  }
}

const MEMORY_LIMIT = /^(\d{1,6})([mg])$/i;
const SWEEP_INTERVAL_MS = 60_000;

/** `memory_limit` (`1g`, `4g`, `512m`, …) → the box's memory cap: at least 512 MiB, at most the operator's cap. */
export function memoryBytesOf(limit: string, maxBytes: number): number {
  const match = MEMORY_LIMIT.exec(limit);
  if (!match) throw new ContainerError(`Invalid 'memory_limit': expected a size such as '1g' or '4g', got '${limit}'.`, 'invalid', 'memory_limit');
  const bytes = Number(match[1]) * (match[2].toLowerCase() === 'g' ? 1024 ** 3 : 1024 ** 2);
  return Math.min(Math.max(bytes, MIN_MEMORY_BYTES), Math.max(maxBytes, MIN_MEMORY_BYTES));
}

/** Container ids this gateway makes; anything else never names a folder. */
const CONTAINER_ID = /^cntr_[A-Za-z0-9]{1,64}$/;

export function isContainerId(id: string): boolean {
  return CONTAINER_ID.test(id);
}

export function newContainerId(): string {
  return `cntr_${randomBytes(16).toString('hex')}`;
}

/**
 * Containers: metadata in the store, files in a working folder on disk, a sandbox box per
 * active container (started from the pool). One run at a time per container; idle containers
 * expire (box stopped, folder and records removed).
 */
export class ContainerService {
  private readonly boxes = new Map<string, { box: Box; lastUsed: number; running: boolean }>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: ContainerStore,
    private readonly pool: BoxPool,
    private readonly settings: ContainerServiceSettings,
    private readonly log: Logger,
    /** The Files API, when present: input `file_ids` are copied in from it. */
    private readonly files?: FileSource,
  ) {}

  /** Expires idle containers every minute (an unref'd timer). */
  startSweeping(): void {
    this.sweeper = setInterval(() => void this.sweep().catch((err) => this.log.warn({ err }, 'containers: sweep failed')), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  async create(request: NewContainer): Promise<ContainerRecord> {
    const memoryLimit = request.memoryLimit ?? '1g';
    memoryBytesOf(memoryLimit, this.settings.maxMemoryBytes);
    const fileIds = request.fileIds ?? [];
    if (fileIds.length > 0 && !this.files) {
      throw new ContainerError("'file_ids' needs the Files API, which this gateway does not have yet; upload files with POST /v1/containers/{id}/files instead.", 'invalid', 'file_ids');
    }
    const now = Math.floor(Date.now() / 1000);
    const record: ContainerRecord = {
      id: request.id ?? newContainerId(),
      owner: request.owner ?? DEFAULT_TENANT,
      name: request.name,
      createdAt: now,
      lastActiveAt: now,
      expiresAfterMinutes: request.expiresAfterMinutes ?? this.settings.expiresAfterMinutes,
      memoryLimit,
    };
    const copied: Array<{ filename: string; data: Uint8Array }> = [];
    for (const [i, fileId] of fileIds.entries()) {
      const file = await this.files!.read(fileId, record.owner);
      if (!file) throw new ContainerError(`File '${fileId}' not found.`, 'invalid', `file_ids[${i}]`);
      copied.push(file);
    }
    await this.store.create(record);
    for (const file of copied) await this.addFile(record, file.filename, file.data);
    return record;
  }

  /** Whether input `file_ids` can be copied in (a Files API is wired). */
  get acceptsFileIds(): boolean {
    return this.files !== undefined;
  }

  get(id: string, owner = DEFAULT_TENANT): Promise<ContainerRecord | undefined> {
    return this.store.get(id, owner);
  }

  list(owner: string, options: PageOptions): Promise<Page<ContainerRecord>> {
    return this.store.list(owner, options);
  }

  async delete(id: string, owner = DEFAULT_TENANT): Promise<boolean> {
    const record = await this.store.get(id, owner);
    if (!record) return false;
    await this.destroy(record.id);
    return true;
  }

  /** The container an `auto` declaration uses: `id` when it still exists for this owner, else a new one under that id or a fresh id. */
  async ensureAuto(id: string, owner: string, memoryLimit: string | undefined, fileIds: string[] | undefined): Promise<ContainerRecord> {
    if (!isContainerId(id)) throw new ContainerError(`Container '${id}' not found.`, 'not_found', 'container');
    const existing = await this.store.get(id, owner);
    if (existing) return existing;
    return this.create({ id, owner, name: 'auto', memoryLimit, fileIds });
  }

  /** Runs code in the container (queued behind its running code); its new and changed files get records. */
  run(containerId: string, code: string, signal: AbortSignal, owner = DEFAULT_TENANT): Promise<ContainerRun> {
    const previous = this.queues.get(containerId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.runNow(containerId, code, signal, owner));
    const settled = next.catch(() => undefined);
    this.queues.set(containerId, settled);
    void settled.then(() => {
      if (this.queues.get(containerId) === settled) this.queues.delete(containerId);
    });
    return next;
  }

  // ---------- files ----------

  async addFile(record: ContainerRecord, name: string, data: Uint8Array): Promise<ContainerFileRecord> {
    const workdir = this.workdirOf(record.id);
    await mkdir(workdir, { recursive: true, mode: 0o755 });
    const boxPath = await writeInside(workdir, name, data);
    if (!boxPath) throw new ContainerError(`Could not write '${name}': a plain file name is expected, and no link or special file of that name may be in the container.`, 'invalid', 'file');
    await this.store.touch(record.id, Math.floor(Date.now() / 1000));
    return this.store.putFile({ id: newFileId(), containerId: record.id, path: boxPath, bytes: data.byteLength, createdAt: Math.floor(Date.now() / 1000), source: 'user' });
  }

  /** The container's file records, first brought in line with its folder (files the code wrote appear, deleted ones go). */
  async listFiles(record: ContainerRecord, options: PageOptions): Promise<Page<ContainerFileRecord>> {
    if (!this.isRunning(record.id)) await this.syncFiles(record.id, undefined);
    return this.store.listFiles(record.id, options);
  }

  getFile(record: ContainerRecord, fileId: string): Promise<ContainerFileRecord | undefined> {
    return this.store.getFile(record.id, fileId);
  }

  /** Opens a file's content for streaming (undefined when the file is gone or is not a regular file inside the folder). */
  openFile(record: ContainerRecord, file: ContainerFileRecord): ReturnType<typeof openInside> {
    return openInside(this.workdirOf(record.id), file.path);
  }

  async deleteFile(record: ContainerRecord, fileId: string): Promise<boolean> {
    const file = await this.store.getFile(record.id, fileId);
    if (!file) return false;
    await removeInside(this.workdirOf(record.id), file.path);
    return this.store.deleteFile(record.id, fileId);
  }

  poolStats() {
    return this.pool.snapshot();
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.all([...this.boxes.values()].map(({ box }) => this.pool.release(box)));
    this.boxes.clear();
    await this.pool.close();
  }

  /** Deletes expired containers (box, folder, records). */
  async sweep(now = Math.floor(Date.now() / 1000)): Promise<number> {
    const expired = await this.store.expired(now, 100);
    for (const record of expired) if (!this.isRunning(record.id)) await this.destroy(record.id);
    return expired.length;
  }

  // ---------- internals ----------

  private workdirOf(id: string): string {
    // ids can arrive from clients (history items, paths): never a path of their choosing
    if (!isContainerId(id)) throw new ContainerError(`Container '${id}' not found.`, 'not_found', 'container');
    return join(this.settings.dir, 'containers', id);
  }

  private isRunning(id: string): boolean {
    return this.boxes.get(id)?.running === true;
  }

  private async runNow(containerId: string, code: string, signal: AbortSignal, owner: string): Promise<ContainerRun> {
    const record = isContainerId(containerId) ? await this.store.get(containerId, owner) : undefined;
    if (!record) throw new ContainerError(`Container '${containerId}' not found (it may have expired).`, 'not_found', 'container');
    if (signal.aborted) throw signal.reason;
    const entry = await this.boxFor(record);
    const before = await scanFolder(entry.box.workdir);
    entry.running = true;
    let result: RunResult;
    try {
      result = await entry.box.run(code, this.settings.runTimeoutMs, signal);
    } finally {
      entry.running = false;
      entry.lastUsed = Date.now();
    }
    if (!entry.box.alive) {
      // the next run starts a fresh box over the same folder
      this.boxes.delete(record.id);
      void this.pool.release(entry.box);
    }
    await this.store.touch(record.id, Math.floor(Date.now() / 1000));
    const files = await this.syncFiles(record.id, before);
    return { result, files };
  }

  private async boxFor(record: ContainerRecord): Promise<{ box: Box; lastUsed: number; running: boolean }> {
    const known = this.boxes.get(record.id);
    if (known?.box.alive) return known;
    if (known) {
      this.boxes.delete(record.id);
      void this.pool.release(known.box);
    }
    const memoryBytes = memoryBytesOf(record.memoryLimit, this.settings.maxMemoryBytes);
    let box: Box;
    try {
      box = await this.pool.acquire(this.workdirOf(record.id), memoryBytes);
    } catch (err) {
      if (!(err instanceof NoBoxAvailable) || !(await this.evictIdleBox())) throw err;
      box = await this.pool.acquire(this.workdirOf(record.id), memoryBytes);
    }
    const entry = { box, lastUsed: Date.now(), running: false };
    this.boxes.set(record.id, entry);
    // the pool fills after the first use (or at start-up, when configured)
    void this.pool.fill().catch((err) => this.log.warn({ err }, 'containers: could not pre-start a sandbox'));
    return entry;
  }

  /** Frees a slot by stopping the least recently used idle box (its container and files stay). */
  private async evictIdleBox(): Promise<boolean> {
    let oldest: [string, { box: Box; lastUsed: number; running: boolean }] | undefined;
    for (const candidate of this.boxes) if (!candidate[1].running && (!oldest || candidate[1].lastUsed < oldest[1].lastUsed)) oldest = candidate;
    if (!oldest) return false;
    this.boxes.delete(oldest[0]);
    await this.pool.release(oldest[1].box);
    return true;
  }

  /**
   * Brings the file records in line with the folder. With `before` (a scan taken before a run),
   * returns the files the run created or changed.
   */
  private async syncFiles(containerId: string, before: Map<string, FolderEntry> | undefined): Promise<ContainerFileRecord[]> {
    const now = await scanFolder(this.workdirOf(containerId));
    const records = await this.store.allFiles(containerId);
    const known = new Map(records.map((r) => [r.path, r]));
    for (const record of records) if (!now.has(record.path)) await this.store.deleteFile(containerId, record.id);
    const changed: ContainerFileRecord[] = [];
    for (const entry of now.values()) {
      const record = known.get(entry.boxPath);
      const previous = before?.get(entry.boxPath);
      const touched = before !== undefined && (!previous || previous.mtimeMs !== entry.mtimeMs || previous.bytes !== entry.bytes);
      if (record && record.bytes === entry.bytes && !touched) continue;
      const stored = await this.store.putFile({ id: newFileId(), containerId, path: entry.boxPath, bytes: entry.bytes, createdAt: Math.floor(Date.now() / 1000), source: 'assistant' });
      if (touched) changed.push(stored);
    }
    return changed;
  }

  private async destroy(id: string): Promise<void> {
    const entry = this.boxes.get(id);
    this.boxes.delete(id);
    if (entry) await this.pool.release(entry.box);
    // fs.rm never follows the symlinks a box may have planted
    await rm(this.workdirOf(id), { recursive: true, force: true });
    await this.store.delete(id);
  }
}

function newFileId(): string {
  return `cfile_${randomBytes(16).toString('hex')}`;
}
