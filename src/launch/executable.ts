import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/**
 * The agent CLI to run: `override` (an environment variable naming a path) when set, else the
 * first executable `name` on `PATH`. Undefined when there is none.
 */
export function findExecutable(name: string, env: NodeJS.ProcessEnv, override?: string): string | undefined {
  if (override) return isExecutable(override) ? override : undefined;
  if (isAbsolute(name)) return isExecutable(name) ? name : undefined;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isExecutable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
