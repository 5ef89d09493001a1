import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ChunkingStrategy } from '../files/store.js';
import type { ExtractReply } from './extract-worker.js';

export interface ExtractedChunk {
  text: string;
  tokens: number;
}

/** A failure reported by the worker (code as in OpenAI's `last_error`). */
export class WorkerTaskError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/**
 * The compiled worker script. Under the test runner this module is TypeScript source, which a
 * worker thread cannot load; it then uses the build output (`npm test` builds first).
 */
function workerScript(): URL {
  const own = new URL('./extract-worker.js', import.meta.url);
  if (!import.meta.url.endsWith('.ts')) return own;
  const built = new URL('../../dist/retrieval/extract-worker.js', import.meta.url);
  if (!existsSync(fileURLToPath(built))) throw new Error('dist/retrieval/extract-worker.js is missing: run `npm run build` first');
  return built;
}

interface Slot {
  worker: Worker;
  busy: boolean;
}

interface Task {
  id: number;
  bytes: ArrayBuffer;
  filename: string;
  chunking: ChunkingStrategy;
  resolve(chunks: ExtractedChunk[]): void;
  reject(err: Error): void;
}

/**
 * A small pool of worker threads for text extraction and chunking. A worker that crashes is
 * replaced; its task fails (the file's `last_error`), the others go on.
 */
export class ExtractionPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Task[] = [];
  private readonly running = new Map<number, { task: Task; slot: Slot }>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly size: number) {}

  run(bytes: Buffer, filename: string, chunking: ChunkingStrategy): Promise<ExtractedChunk[]> {
    if (this.closed) return Promise.reject(new Error('the extraction pool is closed'));
    // a private copy, transferred (not cloned) to the worker
    const copy = new Uint8Array(bytes.byteLength);
    copy.set(bytes);
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, bytes: copy.buffer, filename, chunking, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.busy);
      if (!slot && this.slots.length < this.size) slot = this.spawn();
      if (!slot) return;
      const task = this.queue.shift()!;
      slot.busy = true;
      this.running.set(task.id, { task, slot });
      slot.worker.postMessage({ id: task.id, bytes: task.bytes, filename: task.filename, chunking: task.chunking }, [task.bytes]);
    }
  }

  private spawn(): Slot {
    const worker = new Worker(workerScript());
    const slot: Slot = { worker, busy: false };
    worker.unref();
    worker.on('message', (reply: ExtractReply) => {
      const entry = this.running.get(reply.id);
      if (!entry) return;
      this.running.delete(reply.id);
      slot.busy = false;
      if ('error' in reply) entry.task.reject(new WorkerTaskError(reply.error.code, reply.error.message));
      else entry.task.resolve(reply.chunks);
      this.pump();
    });
    worker.on('error', (err) => this.lose(slot, err));
    worker.on('exit', (code) => this.lose(slot, new Error(`the extraction worker exited (code ${code})`)));
    this.slots.push(slot);
    return slot;
  }

  private lose(slot: Slot, err: Error): void {
    const index = this.slots.indexOf(slot);
    if (index === -1) return;
    this.slots.splice(index, 1);
    for (const [id, entry] of this.running) {
      if (entry.slot !== slot) continue;
      this.running.delete(id);
      entry.task.reject(new WorkerTaskError('server_error', err.message));
    }
    if (!this.closed) this.pump();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.queue.splice(0)) task.reject(new Error('the extraction pool is closed'));
    const slots = this.slots.splice(0);
    for (const [, entry] of this.running) entry.task.reject(new Error('the extraction pool is closed'));
    this.running.clear();
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }
}
