import type { Config } from './schema.js';
import { maskUrlPassword } from './describe.js';

/** A startup failure said in one line, with what to change. */
export class StartupError extends Error {}

/** The store could not be opened (database unreachable, wrong credentials, unwritable data folder). */
export function storeStartupError(err: unknown, config: Config): StartupError {
  const code = String((err as { code?: unknown }).code ?? '');
  const detail = (err as Error).message?.split('\n')[0] ?? String(err);
  if (config.store.kind === 'postgres') {
    const where = maskUrlPassword(config.store.url ?? '');
    const fix = 'check store.url / SWITCHYARD_DATABASE_URL';
    if (code === '3D000') return new StartupError(`the database in ${where} does not exist (${detail}): create it or ${fix}`);
    if (code === '28P01' || code === '28000') return new StartupError(`PostgreSQL refused the credentials in ${where} (${detail}): ${fix}`);
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new StartupError(`cannot resolve the database host in ${where}: ${fix}`);
    if (code === 'ECONNREFUSED' || code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || /timeout/i.test(detail)) {
      return new StartupError(`cannot reach PostgreSQL at ${where} (${code || detail}): is it running? ${fix}`);
    }
    return new StartupError(`cannot open the PostgreSQL store at ${where}: ${detail} (${fix})`);
  }
  return new StartupError(`cannot open the SQLite store in ${config.dataDir}: ${detail} (check --data-dir / SWITCHYARD_DATA_DIR: it must be a writable folder)`);
}

/** `listen` failed. */
export function listenStartupError(err: unknown, host: string, port: number): StartupError {
  const code = (err as { code?: unknown }).code;
  if (code === 'EADDRINUSE') return new StartupError(`port ${port} on ${host} is already in use: stop the other process or choose another port with --port / SWITCHYARD_PORT`);
  if (code === 'EACCES' || code === 'EPERM') return new StartupError(`not allowed to listen on ${host}:${port} (ports below 1024 need privileges): choose another port with --port`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new StartupError(`${host} is not an address of this machine: check --host / SWITCHYARD_HOST`);
  return new StartupError(`cannot listen on ${host}:${port}: ${(err as Error).message}`);
}
