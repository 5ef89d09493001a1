import { randomUUID } from 'node:crypto';
import { lchown, lstat, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Box } from './box.js';
import type { SandboxLimits } from './limits.js';
import type { SandboxRuntime } from './runtime.js';

export interface PoolSettings {
  bwrap: string;
  python: string;
  /** Parent of the pool's pre-made working folders (same file system as the containers' folders). */
  poolDir: string;
  /** Pre-started boxes kept ready (default limits only). */
  size: number;
  /** Live boxes at most (pool + containers): each gets its own host uid. */
  maxBoxes: number;
  /** First host uid of the boxes when the gateway is root (box n runs as uidBase + n). */
  uidBase: number;
  startTimeoutMs: number;
  limits: SandboxLimits;
}

export interface PoolStats {
  /** Boxes handed out pre-started. */
  hits: number;
  /** Boxes started on demand (pool empty, other limits, or an existing folder). */
  misses: number;
  ready: number;
  live: number;
}

/** No box slot is free: every slot runs a container's code. */
export class NoBoxAvailable extends Error {}

/**
 * Starts boxes and keeps a few ready. A ready box owns a fresh working folder; handing it to a
 * new container renames that folder to the container's (the bind mount follows the folder), so
 * the container gets a box that has already imported numpy, pandas and matplotlib.
 */
export class BoxPool {
  private readonly ready: Array<{ box: Box; slot: number }> = [];
  private readonly usedSlots = new Set<number>();
  private readonly boxSlots = new Map<Box, number>();
  private filling = 0;
  private closed = false;
  private readonly stats = { hits: 0, misses: 0 };
  private readonly asRoot = process.getuid?.() === 0;

  private preparedRuntime: SandboxRuntime | undefined;

  /** `runtime` is called once, before the first box starts: a gateway that never runs code writes nothing. */
  constructor(private readonly settings: PoolSettings, private readonly prepareRuntime: () => SandboxRuntime) {}

  /** Starts pre-started boxes up to the pool size (in the background; failures are logged by the caller). */
  fill(): Promise<void> {
    const wanted = Math.max(0, this.settings.size - this.ready.length - this.filling);
    const starts: Promise<void>[] = [];
    for (let i = 0; i < wanted && this.freeSlot() !== undefined; i++) {
      this.filling++;
      starts.push(
        this.startFresh(this.settings.limits)
          .then((started) => {
            if (this.closed) return this.release(started.box);
            this.ready.push(started);
          })
          .finally(() => this.filling--),
      );
    }
    return Promise.all(starts).then(() => undefined);
  }

  /**
   * A box whose working folder is `workdir`. A new folder (it does not exist yet) takes a ready box
   * when the memory cap matches; otherwise a box is started on demand over the folder.
   */
  async acquire(workdir: string, memoryBytes: number): Promise<Box> {
    const exists = await lstat(workdir).then(() => true, () => false);
    if (!exists) {
      const index = this.ready.findIndex((r) => r.box.alive && r.box.memoryBytes === memoryBytes);
      if (index >= 0) {
        const [{ box }] = this.ready.splice(index, 1);
        await rename(box.workdir, workdir);
        this.stats.hits++;
        void this.fill().catch(() => undefined);
        box.movedTo(workdir);
        return box;
      }
      await mkdir(workdir, { recursive: true, mode: 0o755 });
    }
    this.stats.misses++;
    const slot = this.takeSlot();
    try {
      await this.chownTree(workdir, this.uidOf(slot));
      const box = await Box.start(this.boxOptions(workdir, { ...this.settings.limits, memoryBytes }, slot));
      this.boxSlots.set(box, slot);
      return box;
    } catch (err) {
      this.usedSlots.delete(slot);
      throw err;
    }
  }

  /** Stops a box and frees its slot once its processes are gone. */
  async release(box: Box): Promise<void> {
    box.kill('the container was stopped');
    await box.closed();
    const slot = this.boxSlots.get(box);
    this.boxSlots.delete(box);
    if (slot === undefined) return;
    // the pid namespace empties just after bwrap exits: the slot (its uid) is reused only once it has
    const uid = this.uidOf(slot);
    if (uid !== undefined) await waitUntilGone(uid);
    this.usedSlots.delete(slot);
  }

  snapshot(): PoolStats {
    return { ...this.stats, ready: this.ready.length, live: this.boxSlots.size };
  }

  get freeSlots(): number {
    return this.settings.maxBoxes - this.usedSlots.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.boxSlots.keys()].map((box) => this.release(box)));
    this.ready.length = 0;
    await rm(this.settings.poolDir, { recursive: true, force: true }).catch(() => undefined);
  }

  private async startFresh(limits: SandboxLimits): Promise<{ box: Box; slot: number }> {
    const slot = this.takeSlot();
    const workdir = join(this.settings.poolDir, randomUUID());
    try {
      await mkdir(workdir, { recursive: true, mode: 0o755 });
      await this.chownTree(workdir, this.uidOf(slot));
      const box = await Box.start(this.boxOptions(workdir, limits, slot));
      this.boxSlots.set(box, slot);
      return { box, slot };
    } catch (err) {
      this.usedSlots.delete(slot);
      await rm(workdir, { recursive: true, force: true }).catch(() => undefined);
      throw err;
    }
  }

  private boxOptions(workdir: string, limits: SandboxLimits, slot: number) {
    const runtime = (this.preparedRuntime ??= this.prepareRuntime());
    return {
      bwrap: this.settings.bwrap,
      python: this.settings.python,
      driverFile: runtime.driverFile,
      etcDir: runtime.etcDir,
      seccompFile: runtime.seccompFile,
      seccomp: runtime.seccompFile !== undefined,
      workdir,
      limits,
      hostUid: this.uidOf(slot),
      startTimeoutMs: this.settings.startTimeoutMs,
    };
  }

  /** Each box its own host uid (root only): its process count and files are its own. */
  private uidOf(slot: number): number | undefined {
    return this.asRoot ? this.settings.uidBase + slot : undefined;
  }

  private freeSlot(): number | undefined {
    for (let slot = 0; slot < this.settings.maxBoxes; slot++) if (!this.usedSlots.has(slot)) return slot;
    return undefined;
  }

  private takeSlot(): number {
    const slot = this.freeSlot();
    if (slot === undefined) throw new NoBoxAvailable(`all ${this.settings.maxBoxes} sandbox slots are in use`);
    this.usedSlots.add(slot);
    return slot;
  }

  private async chownTree(path: string, uid: number | undefined): Promise<void> {
    if (uid === undefined) return;
    // lchown: a box may have planted symlinks in its folder; never follow them as root
    await lchown(path, uid, uid);
    const entries = await readdir(path, { withFileTypes: true });
    for (const entry of entries) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) await this.chownTree(child, uid);
      else await lchown(child, uid, uid).catch(() => undefined);
    }
  }
}

/** Waits (up to 5 s) until no host process runs as `uid`. */
async function waitUntilGone(uid: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline && (await processesOf(uid)) > 0) await new Promise((resolve) => setTimeout(resolve, 20));
}

async function processesOf(uid: number): Promise<number> {
  let count = 0;
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  await Promise.all(
    pids.map(async (pid) => {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      if (/^Uid:\s+(\d+)/m.exec(status)?.[1] === String(uid)) count++;
    }),
  );
  return count;
}
