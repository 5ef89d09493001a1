import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from '../sandbox/limits.js';

/** `codeInterpreter` in the config: the sandbox, its pool, and the containers' life. */
export interface CodeInterpreterConfig {
  /** false: `code_interpreter` is not offered (omitted from the model, as any unconfigured hosted tool). */
  enabled: boolean;
  bwrap: string;
  /** The system Python with numpy, pandas and matplotlib (Debian's; not a pyenv or venv one). */
  python: string;
  /** Where containers' working folders live; null = `<dataDir>/containers`. Must be traversable by the boxes' uids. */
  dir: string | null;
  /** Pre-started boxes kept ready. */
  poolSize: number;
  /** Fill the pool at start-up (else after the first code_interpreter call). */
  warmAtStartup: boolean;
  /** Live boxes at most (each its own uid when the gateway runs as root). */
  maxBoxes: number;
  /** Host uid of box 0 when the gateway is root (box n runs as uidBase + n). */
  uidBase: number;
  startTimeoutMs: number;
  /** Soft timeout of one code run (Python state kept); the box is killed 2 s later. */
  runTimeoutMs: number;
  /** Default idle minutes before a container expires. */
  expiresAfterMinutes: number;
  /** Largest `memory_limit` honoured (a larger one is lowered to it). */
  maxMemoryBytes: number;
  /** Largest file uploaded into a container. */
  maxUploadBytes: number;
  limits: SandboxLimits;
}

export const DEFAULT_CODE_INTERPRETER_CONFIG: CodeInterpreterConfig = {
  enabled: true,
  bwrap: 'bwrap',
  python: '/usr/bin/python3',
  dir: null,
  poolSize: 2,
  warmAtStartup: false,
  maxBoxes: 16,
  uidBase: 200_000,
  startTimeoutMs: 60_000,
  runTimeoutMs: 30_000,
  expiresAfterMinutes: 20,
  maxMemoryBytes: 16 * 1024 * 1024 * 1024,
  maxUploadBytes: 64 * 1024 * 1024,
  limits: DEFAULT_SANDBOX_LIMITS,
};
