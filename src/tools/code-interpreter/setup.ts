import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { ExecutionFactory } from '../handler.js';
import { HARD_KILL_GRACE_MS } from '../../sandbox/box.js';
import { BoxPool } from '../../sandbox/pool.js';
import { preflight, type PreflightResult } from '../../sandbox/preflight.js';
import { prepareRuntime } from '../../sandbox/runtime.js';
import { PostgresResponseStore } from '../../store/postgres.js';
import type { ResponseStore } from '../../store/store.js';
import { codeInterpreterExecutionFactory } from './execution.js';
import type { CodeInterpreterConfig } from '../../containers/config.js';
import { PostgresContainerStore } from '../../containers/postgres-containers.js';
import { ContainerService, type FileSource } from '../../containers/service.js';
import { SqliteContainerStore } from '../../containers/sqlite-containers.js';

export interface CodeInterpreter {
  service: ContainerService;
  execution: ExecutionFactory;
  preflight: PreflightResult;
  close(): Promise<void>;
}

/**
 * The code_interpreter side of the gateway: the preflight (run once; a failure leaves the
 * Containers API up and makes `code_interpreter` a `400`), the container store beside the
 * responses (SQLite file or the same PostgreSQL pool), the box pool and the container service.
 */
export async function setUpCodeInterpreter(
  config: CodeInterpreterConfig,
  dataDir: string,
  responses: ResponseStore,
  log: Logger,
  options: { perCallTimeoutMs?: number; files?: FileSource } = {},
): Promise<CodeInterpreter> {
  const dir = resolve(config.dir ?? join(dataDir, 'containers'));
  const check = withFolderCheck(preflight(config.bwrap, config.python), dir);
  if (!check.ok) log.warn({ problem: check.problem }, 'code_interpreter unavailable: requests declaring it are refused with 400');
  for (const warning of check.warnings) log.warn(warning);
  const store =
    responses instanceof PostgresResponseStore ? await PostgresContainerStore.fromPool(responses.pool, responses.schema) : new SqliteContainerStore(dataDir);
  const pool = new BoxPool(
    {
      bwrap: config.bwrap,
      python: config.python,
      poolDir: join(dir, 'pool'),
      size: config.poolSize,
      maxBoxes: config.maxBoxes,
      uidBase: config.uidBase,
      startTimeoutMs: config.startTimeoutMs,
      limits: config.limits,
    },
    () => prepareRuntime(join(dir, 'runtime')),
  );
  const service = new ContainerService(
    store,
    pool,
    { dir, runTimeoutMs: config.runTimeoutMs, expiresAfterMinutes: config.expiresAfterMinutes, maxMemoryBytes: config.maxMemoryBytes },
    log,
    options.files,
  );
  service.startSweeping();
  if (check.ok && config.warmAtStartup) void pool.fill().catch((err) => log.warn({ err }, 'code_interpreter: could not pre-start sandboxes'));
  // the scheduler's per-call timeout must outlast the soft timeout, the hard kill and a cold start
  const perCallTimeoutMs = options.perCallTimeoutMs ?? config.runTimeoutMs + HARD_KILL_GRACE_MS + config.startTimeoutMs;
  return {
    service,
    preflight: check,
    execution: codeInterpreterExecutionFactory(service, () => check, perCallTimeoutMs),
    async close() {
      await service.close();
      await store.close();
    },
  };
}

/**
 * As root the boxes run as other uids, and bwrap (already that uid) binds the working folders:
 * every folder above them must be traversable (o+x). A private data folder (mode 0700) is not.
 */
function withFolderCheck(check: PreflightResult, dir: string): PreflightResult {
  if (!check.ok || process.getuid?.() !== 0) return check;
  // folders not made yet will be made traversable (0711 / 0755) when the first box needs them
  for (let folder = dir; ; folder = dirname(folder)) {
    const mode = existsSync(folder) ? statSync(folder).mode : 0o711;
    if ((mode & 0o001) === 0) {
      return { ok: false, problem: `the containers folder ${dir} is not reachable by the sandbox users: ${folder} is not traversable (chmod o+x it, or set codeInterpreter.dir to another folder)`, warnings: check.warnings };
    }
    if (dirname(folder) === folder) return check;
  }
}
