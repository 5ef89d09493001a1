import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Bytes under a folder (files only, symlinks not followed). A folder that vanished counts 0. */
export async function folderBytes(folder: string): Promise<number> {
  let total = 0;
  let entries;
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) total += await folderBytes(path);
    else if (entry.isFile()) total += await lstat(path).then((s) => s.size, () => 0);
  }
  return total;
}
