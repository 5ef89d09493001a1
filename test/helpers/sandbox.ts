import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from '../../src/sandbox/limits.js';
import { BoxPool } from '../../src/sandbox/pool.js';
import { preflight } from '../../src/sandbox/preflight.js';
import { prepareRuntime } from '../../src/sandbox/runtime.js';

export const SANDBOX_PYTHON = '/usr/bin/python3';

/** Why sandbox tests cannot run here (undefined = they can). */
export const sandboxSkipReason: string | undefined = (() => {
  const result = preflight('bwrap', SANDBOX_PYTHON);
  return result.ok ? undefined : `sandbox unavailable: ${result.problem}`;
})();

/**
 * A folder the boxes' unprivileged uids can reach (mkdtemp makes 0700 folders; the boxes run as
 * other uids when the tests run as root, so the folder is made traversable).
 */
export function sandboxDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-sandbox-'));
  chmodSync(dir, 0o711);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export function testPool(dir: string, options: { size?: number; limits?: Partial<SandboxLimits>; maxBoxes?: number } = {}): BoxPool {
  return new BoxPool(
    {
      bwrap: 'bwrap',
      python: SANDBOX_PYTHON,
      poolDir: join(dir, 'pool'),
      size: options.size ?? 0,
      maxBoxes: options.maxBoxes ?? 8,
      uidBase: 210_000 + (process.pid % 1000) * 20,
      startTimeoutMs: 60_000,
      limits: { ...DEFAULT_SANDBOX_LIMITS, ...options.limits },
    },
    () => prepareRuntime(join(dir, 'runtime')),
  );
}
