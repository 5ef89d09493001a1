import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * The real agent CLIs, pinned in test/clients/package.json and installed by
 * `npm run clients:install`. Tests that need them skip (saying this) when they are missing.
 */
const bin = (name: string) => new URL(`../clients/node_modules/.bin/${name}`, import.meta.url).pathname;
export const CODEX_BIN = bin('codex');
export const CLAUDE_BIN = bin('claude');
export const codexInstalled = existsSync(CODEX_BIN);
export const claudeInstalled = existsSync(CLAUDE_BIN);
export const NOT_INSTALLED = 'the agent CLIs are not installed: run `npm run clients:install` (pinned in test/clients/package.json)';

export const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;

export interface RunResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `node dist/cli.js …args` to completion (killed after `timeoutMs`), stdin closed. */
export function runSwitchyard(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.once('error', reject);
    child.once('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}
