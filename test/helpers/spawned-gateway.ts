import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A gateway in a process of its own (`node dist/cli.js serve`), so a test can SIGKILL or SIGSTOP it. */
export interface SpawnedGateway {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** Resolves when the process has exited. */
  exited: Promise<void>;
  kill(signal: NodeJS.Signals): void;
}

/**
 * Starts `dist/cli.js serve` (built by `npm test`'s pretest) on port 0 with `config` written to
 * `dir/config.json`; resolves once it logs its URL. Its output is drained (never kept), so a busy
 * gateway cannot block on a full pipe.
 */
export async function spawnGateway(options: { dir: string; name: string; upstream: string; config: Record<string, unknown> }): Promise<SpawnedGateway> {
  const configFile = join(options.dir, `${options.name}.json`);
  writeFileSync(configFile, JSON.stringify(options.config));
  const cli = new URL('../../dist/cli.js', import.meta.url).pathname;
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--upstream', options.upstream, '--data-dir', join(options.dir, 'data'), '--config', configFile], {
    env: { ...process.env, SWITCHYARD_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    let found = false;
    child.stdout!.on('data', (chunk) => {
      if (found) return;
      out += chunk;
      const match = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (match) {
        found = true;
        out = '';
        resolve(match[1]);
      }
    });
    void exited.then(() => reject(new Error(`gateway ${options.name} exited before listening: ${out.slice(-2_000)}`)));
  });
  return {
    child,
    url,
    exited,
    kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}
