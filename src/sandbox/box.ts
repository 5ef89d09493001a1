import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { boxCommand, type BoxCommandOptions } from './command.js';
import { folderBytes } from './folder-size.js';
import { maxReplyBytes } from './limits.js';

export interface BoxOptions extends BoxCommandOptions {
  /** The compiled seccomp program (a file), when the machine has one. */
  seccompFile: string | undefined;
  /** How long the box may take to start and import numpy/pandas/matplotlib. */
  startTimeoutMs: number;
}

/** One run's result, as the driver reported it (or as the gateway concluded after killing the box). */
export interface RunResult {
  /** `killed`: the box was stopped (hard timeout, a cap, a crash); its Python state is gone. */
  status: 'ok' | 'error' | 'timeout' | 'killed';
  logs: string;
  /** PNG figures, base64. */
  images: string[];
  droppedBytes: number;
}

/** Why a box stopped: shown to the model when a run ends with it. */
export class BoxStopped extends Error {}

/** How often the working folder's size is checked while code runs. */
const QUOTA_POLL_MS = 500;
/** Extra time after the soft timeout before the box is killed. */
export const HARD_KILL_GRACE_MS = 2_000;

interface Waiter {
  resolve(reply: Record<string, unknown>): void;
  reject(err: Error): void;
}

/**
 * One sandboxed, long-lived Python kernel. Requests and replies are length-prefixed JSON frames on
 * the driver's stdin / stdout. Replies are untrusted: a frame over the cap, one that does not
 * parse, or one nobody asked for kills the box.
 */
export class Box {
  private folder: string;
  readonly memoryBytes: number;
  readonly startedAt = Date.now();
  private readonly child: ChildProcess;
  private buffered: Buffer = Buffer.alloc(0);
  private waiter: Waiter | undefined;
  private stopReason: string | undefined;
  private stderrTail = '';
  private busy = false;
  private readonly exited: Promise<void>;
  private readonly maxFrame: number;

  private constructor(private readonly options: BoxOptions) {
    this.folder = options.workdir;
    this.memoryBytes = options.limits.memoryBytes;
    this.maxFrame = maxReplyBytes(options.limits);
    const argv = boxCommand(options);
    const seccompFd = options.seccomp && options.seccompFile ? openSync(options.seccompFile, 'r') : undefined;
    try {
      // the gateway's environment (keys, database URLs) never reaches bwrap, let alone the box
      this.child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe', seccompFd ?? 'ignore'], env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' } });
    } finally {
      if (seccompFd !== undefined) closeSync(seccompFd);
    }
    this.exited = new Promise((resolve) => this.child.once('close', () => resolve()));
    this.child.once('error', (err) => this.stop(`the sandbox could not start: ${err.message}`));
    this.child.once('exit', (code, signal) => this.stop(this.stopReason ?? `the sandbox exited (${signal ?? `code ${code}`})${this.stderrTail ? `: ${this.stderrTail.trim().slice(-500)}` : ''}`));
    this.child.stdout!.on('data', (chunk: Buffer) => this.onData(chunk));
    this.child.stderr!.on('data', (chunk: Buffer) => {
      // bwrap's and Python's own start-up errors only (user output goes elsewhere): keep a short tail
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-4_000);
    });
    this.child.stdin!.on('error', () => undefined);
  }

  /** Starts a box and waits until its kernel has imported the libraries. */
  static async start(options: BoxOptions): Promise<Box> {
    const box = new Box(options);
    const timer = setTimeout(() => box.kill(`the sandbox did not start within ${options.startTimeoutMs} ms`), options.startTimeoutMs);
    try {
      const ready = await box.nextReply();
      if (ready.ready !== true) throw new BoxStopped('the sandbox sent an unexpected greeting');
      return box;
    } catch (err) {
      box.kill('start failed');
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The working folder on the host (bound at /mnt/data). */
  get workdir(): string {
    return this.folder;
  }

  /** The working folder was renamed on the host (a pooled box handed to a container): the bind follows it. */
  movedTo(workdir: string): void {
    this.folder = workdir;
  }

  get alive(): boolean {
    return this.stopReason === undefined;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * Runs one cell. The driver interrupts it at `timeoutMs` (Python state kept); if it has not
   * answered `HARD_KILL_GRACE_MS` later, or a cap is exceeded, the box is killed.
   */
  async run(code: string, timeoutMs: number, signal?: AbortSignal): Promise<RunResult> {
    if (!this.alive) throw new BoxStopped(this.stopReason);
    if (this.busy) throw new Error('box is busy: one run at a time');
    this.busy = true;
    const hardKill = setTimeout(() => this.kill(`the code did not stop within ${Math.round(timeoutMs / 1000)} s (+${HARD_KILL_GRACE_MS / 1000} s grace): the sandbox was killed and its Python state lost`), timeoutMs + HARD_KILL_GRACE_MS);
    const onAbort = () => this.kill('the call was cancelled: the sandbox was stopped and its Python state lost');
    signal?.addEventListener('abort', onAbort, { once: true });
    let quotaCheck: NodeJS.Timeout | undefined;
    const checkQuota = async () => {
      if ((await folderBytes(this.workdir)) > this.options.limits.workdirBytes) {
        this.kill(`the working folder grew past its ${this.options.limits.workdirBytes} bytes: the sandbox was killed and its Python state lost`);
      }
    };
    quotaCheck = setInterval(() => void checkQuota().catch(() => undefined), QUOTA_POLL_MS);
    try {
      const reply = this.nextReply();
      this.send({ op: 'exec', code, timeout: timeoutMs / 1000 });
      const answer = await reply;
      await checkQuota();
      if (!this.alive) throw new BoxStopped(this.stopReason);
      return {
        status: answer.status === 'ok' || answer.status === 'error' || answer.status === 'timeout' ? answer.status : 'error',
        logs: typeof answer.logs === 'string' ? answer.logs : '',
        images: Array.isArray(answer.images) ? answer.images.filter((i): i is string => typeof i === 'string') : [],
        droppedBytes: typeof answer.dropped_bytes === 'number' ? answer.dropped_bytes : 0,
      };
    } catch (err) {
      if (err instanceof BoxStopped) return { status: 'killed', logs: err.message, images: [], droppedBytes: 0 };
      throw err;
    } finally {
      clearTimeout(hardKill);
      clearInterval(quotaCheck);
      signal?.removeEventListener('abort', onAbort);
      this.busy = false;
    }
  }

  /** Kills the whole box (bwrap's pid 1 dies with its parent; the pid namespace takes every process with it). */
  kill(reason: string): void {
    if (this.stopReason === undefined) this.stopReason = reason;
    this.child.kill('SIGKILL');
    this.stop(reason);
  }

  /** Resolves when the box's processes are gone. */
  async closed(): Promise<void> {
    await this.exited;
  }

  private stop(reason: string): void {
    if (this.stopReason === undefined) this.stopReason = reason;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(new BoxStopped(this.stopReason));
  }

  private send(message: Record<string, unknown>): void {
    const body = Buffer.from(JSON.stringify(message), 'utf8');
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length);
    this.child.stdin!.write(Buffer.concat([header, body]));
  }

  private nextReply(): Promise<Record<string, unknown>> {
    if (!this.alive) return Promise.reject(new BoxStopped(this.stopReason));
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  private onData(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    while (this.buffered.length >= 4) {
      const length = this.buffered.readUInt32BE(0);
      if (length > this.maxFrame) return this.kill(`the sandbox sent a reply over ${this.maxFrame} bytes`);
      if (this.buffered.length < 4 + length) return;
      const body = this.buffered.subarray(4, 4 + length);
      this.buffered = this.buffered.subarray(4 + length);
      let reply: unknown;
      try {
        reply = JSON.parse(body.toString('utf8'));
      } catch {
        return this.kill('the sandbox sent a reply that is not JSON');
      }
      const waiter = this.waiter;
      if (!waiter || typeof reply !== 'object' || reply === null || Array.isArray(reply)) return this.kill('the sandbox sent a reply nobody asked for');
      this.waiter = undefined;
      waiter.resolve(reply as Record<string, unknown>);
    }
  }
}
