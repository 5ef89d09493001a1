// `npm start`'s prestart: compile only when a source file is newer than the build, so a start
// with a current build is instant (and a production image, which has no src/, never compiles).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const built = join(root, 'dist', 'cli.js');
const sources = join(root, 'src');

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

if (!existsSync(sources)) process.exit(0);
const configs = ['tsconfig.json', 'tsconfig.build.json', 'package.json'].map((f) => join(root, f)).filter(existsSync);
const sourceTime = Math.max(newest(sources), ...configs.map((f) => statSync(f).mtimeMs));
if (existsSync(built) && statSync(built).mtimeMs >= sourceTime) process.exit(0);
console.error('switchyard: sources changed since the last build; compiling…');
execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
