import { spawnSync } from 'node:child_process';

export interface PreflightResult {
  ok: boolean;
  /** Why code_interpreter is unavailable (shown to clients in the `400`). */
  problem?: string;
  /** The seccomp filter cannot be used here (the box still runs under namespaces and rlimits). */
  warnings: string[];
}

const REQUIRED_MODULES = ['numpy', 'pandas', 'matplotlib'];
const cache = new Map<string, PreflightResult>();

/**
 * Can boxes run here? bubblewrap must be able to create its namespaces (user namespaces may be
 * restricted), prlimit (and setpriv, when the gateway is root) must exist, and the system Python
 * must have numpy, pandas and matplotlib. Cached per process: it runs once, at start-up.
 */
export function preflight(bwrap: string, python: string): PreflightResult {
  const key = `${bwrap}\u0000${python}`;
  const cached = cache.get(key);
  if (cached) return cached;
  const result = check(bwrap, python);
  cache.set(key, result);
  return result;
}

const INSTALL_HINT = 'install them with: apt-get install -y bubblewrap python3-numpy python3-pandas python3-matplotlib';

function check(bwrap: string, python: string): PreflightResult {
  const warnings: string[] = [];
  const env = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' };
  const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { env, encoding: 'utf8', timeout: 20_000 });
  const version = run(bwrap, ['--version']);
  if (version.error || version.status !== 0) return { ok: false, problem: `bubblewrap ('${bwrap}') is not installed; ${INSTALL_HINT}`, warnings };
  for (const tool of process.getuid?.() === 0 ? ['prlimit', 'setpriv'] : ['prlimit']) {
    const probe = run(tool, ['--version']);
    if (probe.error || probe.status !== 0) return { ok: false, problem: `'${tool}' (util-linux) is not installed`, warnings };
  }
  const namespaces = run(bwrap, ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', 'true']);
  if (namespaces.error || namespaces.status !== 0) {
    return { ok: false, problem: `bubblewrap cannot create its namespaces here (${(namespaces.stderr || String(namespaces.error ?? '')).trim().slice(0, 300)}); user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces, or an AppArmor restriction)`, warnings };
  }
  const modules = run(python, ['-I', '-c', `import importlib.util as u, sys; missing = [m for m in ${JSON.stringify(REQUIRED_MODULES)} if u.find_spec(m) is None]; print(' '.join(missing)); sys.exit(1 if missing else 0)`]);
  if (modules.error) return { ok: false, problem: `the sandbox Python ('${python}') is not installed; ${INSTALL_HINT}`, warnings };
  if (modules.status !== 0) return { ok: false, problem: `the sandbox Python ('${python}') lacks ${modules.stdout.trim() || 'its libraries'}; ${INSTALL_HINT}`, warnings };
  if (process.arch !== 'x64') warnings.push(`no seccomp syscall table for ${process.arch}: boxes run under namespaces and rlimits only`);
  return { ok: true, warnings };
}
