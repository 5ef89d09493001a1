import { chmodSync, copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ETC_GROUP, ETC_PASSWD } from './command.js';
import { compileSeccompDenyList } from './seccomp.js';

/** The read-only files every box binds: the driver, the synthetic /etc/passwd and /etc/group, the seccomp program. */
export interface SandboxRuntime {
  driverFile: string;
  etcDir: string;
  seccompFile: string | undefined;
}

/** The driver ships as a Python file beside this module's source (dist/ resolves it in src/). */
function driverSource(): string {
  for (const candidate of ['./driver.py', '../../src/sandbox/driver.py']) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error('sandbox: driver.py not found beside the sandbox module');
}

/** Writes the runtime files into `dir` (readable by the boxes' unprivileged users). */
export function prepareRuntime(dir: string): SandboxRuntime {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chmodSync(dir, 0o755);
  const driverFile = join(dir, 'driver.py');
  copyFileSync(driverSource(), driverFile);
  chmodSync(driverFile, 0o644);
  writeFileSync(join(dir, 'passwd'), ETC_PASSWD, { mode: 0o644 });
  writeFileSync(join(dir, 'group'), ETC_GROUP, { mode: 0o644 });
  const program = compileSeccompDenyList();
  let seccompFile: string | undefined;
  if (program) {
    seccompFile = join(dir, 'seccomp.bpf');
    writeFileSync(seccompFile, program, { mode: 0o644 });
  }
  return { driverFile, etcDir: dir, seccompFile };
}
