/** Everything that bounds one sandbox box; the operator's `codeInterpreter` config fills it. */
export interface SandboxLimits {
  /** Address-space cap of every process in the box (RLIMIT_AS). */
  memoryBytes: number;
  /** Processes and threads of the box's user (RLIMIT_NPROC): a fork bomb stops here. */
  maxProcesses: number;
  /** Largest file the box may write (RLIMIT_FSIZE). */
  maxFileBytes: number;
  /** CPU seconds over the box's whole life (RLIMIT_CPU); an exhausted box is replaced. */
  cpuSeconds: number;
  /** Open descriptors per process (RLIMIT_NOFILE). */
  maxOpenFiles: number;
  /** Size of the box's private `/tmp` (tmpfs). */
  tmpBytes: number;
  /** Size of the working folder (`/mnt/data`, on disk): watched while code runs, the box is killed past it. */
  workdirBytes: number;
  /** Logs returned per run; the rest is dropped and the dropped amount stated. */
  maxLogBytes: number;
  /** Longest line kept in the logs (characters). */
  maxLineChars: number;
  /** Figures returned per run, and the largest PNG. */
  maxImages: number;
  maxImageBytes: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  memoryBytes: 1024 * 1024 * 1024,
  maxProcesses: 64,
  maxFileBytes: 256 * 1024 * 1024,
  cpuSeconds: 3600,
  maxOpenFiles: 256,
  tmpBytes: 64 * 1024 * 1024,
  workdirBytes: 512 * 1024 * 1024,
  maxLogBytes: 1024 * 1024,
  maxLineChars: 16_384,
  maxImages: 8,
  maxImageBytes: 4 * 1024 * 1024,
};

/** The smallest memory cap a container gets (`memory_limit` below it is raised to it). */
export const MIN_MEMORY_BYTES = 512 * 1024 * 1024;

/** The largest reply frame the gateway accepts: logs (JSON escapes a control character in 6 bytes) + base64 images + headroom. A larger one kills the box. */
export function maxReplyBytes(limits: SandboxLimits): number {
  return limits.maxLogBytes * 6 + Math.ceil((limits.maxImages * limits.maxImageBytes * 4) / 3) + 64 * 1024;
}
