import { existsSync, lstatSync, readdirSync, readlinkSync } from 'node:fs';
import type { SandboxLimits } from './limits.js';

/** Where the driver sits inside the box (a read-only bind). */
export const DRIVER_PATH_IN_BOX = '/sandbox/driver.py';
/** The working folder as code in the box sees it. */
export const WORKDIR_IN_BOX = '/mnt/data';
/** The descriptor bwrap reads the seccomp program from (the fourth stdio slot of the spawn). */
export const SECCOMP_FD = 3;

/** The box's user inside its user namespace (not root: a uid with no privileges there either). */
const UID_IN_BOX = 1000;

/** What bwrap needs from /etc: the loader cache, library alternatives (BLAS), fonts, matplotlib's and Python's config. */
const ETC_READ_ONLY = ['ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'alternatives', 'fonts', 'matplotlibrc', 'localtime', 'mime.types'];

export interface BoxCommandOptions {
  bwrap: string;
  python: string;
  driverFile: string;
  /** A folder holding the box's synthetic passwd / group (see writeEtcFiles). */
  etcDir: string;
  workdir: string;
  limits: SandboxLimits;
  /** Run bwrap as this host uid (the gateway runs as root); undefined = the gateway's own uid. */
  hostUid: number | undefined;
  seccomp: boolean;
}

/**
 * The argv that starts one box: `prlimit` (memory, processes, file size, CPU, descriptors, no
 * core dumps) → `setpriv` (an unprivileged host uid, no capabilities; only when the gateway is
 * root) → `bwrap` (new user/pid/ipc/uts/net/cgroup namespaces, cleared environment, read-only
 * system folders, size-capped tmpfs, read-only root and /dev) → the Python driver.
 */
export function boxCommand(options: BoxCommandOptions): string[] {
  const { limits } = options;
  const prlimit = [
    'prlimit',
    `--as=${limits.memoryBytes}`,
    `--nproc=${limits.maxProcesses}`,
    `--fsize=${limits.maxFileBytes}`,
    `--cpu=${limits.cpuSeconds}`,
    `--nofile=${limits.maxOpenFiles}`,
    '--core=0',
    '--',
  ];
  const setpriv = options.hostUid === undefined ? [] : ['setpriv', `--reuid=${options.hostUid}`, `--regid=${options.hostUid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--'];
  const bwrap = [
    options.bwrap,
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    '--uid', String(UID_IN_BOX),
    '--gid', String(UID_IN_BOX),
    '--hostname', 'sandbox',
    '--ro-bind', '/usr', '/usr',
    ...mergedUsrLinks(),
    '--proc', '/proc',
    '--dev', '/dev',
    '--size', String(limits.tmpBytes), '--tmpfs', '/tmp',
    '--size', String(16 * 1024 * 1024), '--tmpfs', '/dev/shm',
    '--bind', options.workdir, WORKDIR_IN_BOX,
    '--ro-bind', options.driverFile, DRIVER_PATH_IN_BOX,
    ...ETC_READ_ONLY.flatMap((name) => ['--ro-bind-try', `/etc/${name}`, `/etc/${name}`]),
    ...pythonEtc().flatMap((path) => ['--ro-bind', path, path]),
    '--ro-bind', `${options.etcDir}/passwd`, '/etc/passwd',
    '--ro-bind', `${options.etcDir}/group`, '/etc/group',
    '--remount-ro', '/dev',
    '--remount-ro', '/',
    '--chdir', WORKDIR_IN_BOX,
    '--setenv', 'HOME', '/tmp',
    '--setenv', 'PATH', '/usr/local/bin:/usr/bin:/bin',
    '--setenv', 'LANG', 'C.UTF-8',
    '--setenv', 'MPLCONFIGDIR', '/tmp/.matplotlib',
    '--setenv', 'MPLBACKEND', 'Agg',
    // one thread per BLAS call: threads count against the process cap and the memory cap
    '--setenv', 'OPENBLAS_NUM_THREADS', '1',
    '--setenv', 'OMP_NUM_THREADS', '1',
    '--setenv', 'PYTHONDONTWRITEBYTECODE', '1',
    ...(options.seccomp ? ['--seccomp', String(SECCOMP_FD)] : []),
    '--',
    options.python,
    '-I',
    DRIVER_PATH_IN_BOX,
    JSON.stringify({
      max_log_bytes: limits.maxLogBytes,
      max_line_chars: limits.maxLineChars,
      max_images: limits.maxImages,
      max_image_bytes: limits.maxImageBytes,
    }),
  ];
  return [...prlimit, ...setpriv, ...bwrap];
}

/** The synthetic account files: the box's user exists (some libraries ask), nobody else does. */
export const ETC_PASSWD = `root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${UID_IN_BOX}:${UID_IN_BOX}:sandbox:/tmp:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`;
export const ETC_GROUP = `root:x:0:\nsandbox:x:${UID_IN_BOX}:\nnogroup:x:65534:\n`;

let usrLinks: string[] | undefined;
/** /bin, /lib, /lib64, /sbin: symlinks into /usr on merged-/usr systems, else read-only binds. */
function mergedUsrLinks(): string[] {
  if (usrLinks) return usrLinks;
  const out: string[] = [];
  for (const name of ['bin', 'sbin', 'lib', 'lib64', 'lib32']) {
    const path = `/${name}`;
    if (!existsSync(path)) continue;
    if (lstatSync(path).isSymbolicLink()) out.push('--symlink', readlinkSync(path), path);
    else out.push('--ro-bind', path, path);
  }
  return (usrLinks = out);
}

let pythonEtcPaths: string[] | undefined;
/** Debian's /etc/python3 and /etc/python3.X (sitecustomize, the distribution's site config). */
function pythonEtc(): string[] {
  if (pythonEtcPaths) return pythonEtcPaths;
  try {
    pythonEtcPaths = readdirSync('/etc').filter((name) => /^python3(\.\d+)?$/.test(name)).map((name) => `/etc/${name}`);
  } catch {
    pythonEtcPaths = [];
  }
  return pythonEtcPaths;
}
