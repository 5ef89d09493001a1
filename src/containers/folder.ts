import { constants } from 'node:fs';
import { lchown, lstat, open, readdir, readlink, realpath, unlink, type FileHandle } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { WORKDIR_IN_BOX } from '../sandbox/command.js';

/**
 * File operations on a container's working folder, done by the gateway (possibly as root) in a
 * folder that code in the box controls. The box may plant symlinks, FIFOs or swap folders for
 * links: nothing here follows a link, every opened descriptor is checked to really lie inside
 * the folder, and only regular files count.
 */

export interface FolderEntry {
  /** As the box sees it: `/mnt/data/sub/file.csv`. */
  boxPath: string;
  bytes: number;
  mtimeMs: number;
}

const MAX_DEPTH = 8;
const MAX_ENTRIES = 10_000;

/** Regular files under the folder (symlinks and special files skipped), at most 10,000. */
export async function scanFolder(workdir: string): Promise<Map<string, FolderEntry>> {
  const found = new Map<string, FolderEntry>();
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH || found.size >= MAX_ENTRIES) return;
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (found.size >= MAX_ENTRIES) return;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path, depth + 1);
      else if (entry.isFile()) {
        const stat = await lstat(path).catch(() => undefined);
        if (!stat?.isFile()) continue;
        const boxPath = toBoxPath(workdir, path);
        found.set(boxPath, { boxPath, bytes: stat.size, mtimeMs: stat.mtimeMs });
      }
    }
  };
  await walk(workdir, 0);
  return found;
}

/** `/mnt/data/a/b.csv` → the host path, or undefined when it would leave the folder. */
export function hostPath(workdir: string, boxPath: string): string | undefined {
  if (!boxPath.startsWith(`${WORKDIR_IN_BOX}/`)) return undefined;
  const rel = boxPath.slice(WORKDIR_IN_BOX.length + 1);
  if (rel.split('/').some((part) => part === '' || part === '.' || part === '..') || rel.includes('\0')) return undefined;
  return join(workdir, rel);
}

export function toBoxPath(workdir: string, host: string): string {
  return `${WORKDIR_IN_BOX}/${relative(workdir, host).split(sep).join('/')}`;
}

/** Opens a file of the folder for reading: a regular file that really lies inside it, or undefined. */
export async function openInside(workdir: string, boxPath: string): Promise<{ handle: FileHandle; bytes: number } | undefined> {
  const host = hostPath(workdir, boxPath);
  if (!host) return undefined;
  let handle: FileHandle;
  try {
    // O_NONBLOCK: a FIFO planted under the name must not hang the gateway
    handle = await open(host, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = await handle.stat();
    if (stat.isFile() && (await descriptorInside(handle, workdir))) return { handle, bytes: stat.size };
  } catch {
    // fall through: not a file we serve
  }
  await handle.close();
  return undefined;
}

/** Writes an uploaded file (a plain name, no folders) into the folder, owned like the folder. */
export async function writeInside(workdir: string, name: string, data: Uint8Array): Promise<string | undefined> {
  if (!isPlainName(name)) return undefined;
  const host = join(workdir, name);
  let handle: FileHandle;
  try {
    handle = await open(host, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644);
  } catch {
    return undefined;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile() || !(await descriptorInside(handle, workdir))) return undefined;
    await handle.writeFile(data);
    const owner = await lstat(workdir);
    await lchown(host, owner.uid, owner.gid).catch(() => undefined);
    return toBoxPath(workdir, host);
  } finally {
    await handle.close();
  }
}

/** Removes one file of the folder (never through a linked folder). */
export async function removeInside(workdir: string, boxPath: string): Promise<void> {
  const host = hostPath(workdir, boxPath);
  if (!host) return;
  const parent = await realpath(join(host, '..')).catch(() => undefined);
  const root = await realpath(workdir).catch(() => undefined);
  if (!parent || !root || !(parent === root || parent.startsWith(`${root}${sep}`))) return;
  await unlink(host).catch(() => undefined);
}

/** A file name an upload may use: no folders, no dot names, no control characters, not too long. */
export function isPlainName(name: string): boolean {
  return name.length > 0 && name.length <= 255 && !name.includes('/') && name !== '.' && name !== '..' && !/[\u0000-\u001f]/.test(name);
}

/** Where the descriptor really points (the kernel's view): inside the folder? */
async function descriptorInside(handle: FileHandle, workdir: string): Promise<boolean> {
  const [target, root] = await Promise.all([readlink(`/proc/self/fd/${handle.fd}`), realpath(workdir)]);
  return target.startsWith(`${root}${sep}`);
}
