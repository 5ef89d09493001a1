import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { isatty } from 'node:tty';

/** Signals passed on to the agent: whoever stops the launcher stops the agent. */
const FORWARDED: NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGINT'];

/**
 * Runs the agent CLI in the foreground (the terminal is its: stdin, stdout and stderr inherited)
 * and resolves with its exit status — `128 + n` when a signal ended it, as shells report it.
 * Signals sent to the launcher are forwarded; Ctrl-C from a terminal already reaches the agent
 * (same process group), so SIGINT is only forwarded when stdin is not a terminal. If the launcher
 * itself exits first, the agent is killed rather than left behind.
 */
export function runChild(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    // asked of the file descriptor: touching process.stdin would open a reader on the agent's terminal
    const terminal = isatty(0);
    const child = spawn(command, args, { stdio: 'inherit', env });
    const handlers = new Map<NodeJS.Signals, () => void>();
    for (const signal of FORWARDED) {
      const handler = () => {
        if (signal === 'SIGINT' && terminal) return;
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      };
      handlers.set(signal, handler);
      process.on(signal, handler);
    }
    const killOnExit = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    process.on('exit', killOnExit);
    const cleanUp = () => {
      for (const [signal, handler] of handlers) process.off(signal, handler);
      process.off('exit', killOnExit);
    };
    child.once('error', (err) => {
      cleanUp();
      reject(err);
    });
    child.once('exit', (code, signal) => {
      cleanUp();
      resolve(code ?? 128 + (signal ? (constants.signals[signal] ?? 1) : 1));
    });
  });
}
