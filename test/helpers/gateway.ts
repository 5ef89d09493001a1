import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startGateway, type ExecutionFactory, type Gateway } from '../../src/app.js';
import { loadConfig, type Config, type DeepPartial } from '../../src/config/config.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import type { ResponseStore } from '../../src/store/store.js';

export interface TestGateway {
  gateway: Gateway;
  simulator: Simulator;
  /** Base URL for the OpenAI SDK (`…/v1`). */
  baseURL: string;
  dataDir: string;
  /** Restarts the gateway on the same data folder (and the same port). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  config?: DeepPartial<Config>;
  executions?: Record<string, ExecutionFactory>;
  /** Use this simulator instead of starting one. */
  simulator?: Simulator;
  /** Replaces the configured response store: made in the gateway's data folder (again on a restart). */
  store?: (dataDir: string) => ResponseStore;
}

/** A gateway on 127.0.0.1 (port chosen at run time) in front of its own simulator, with a fresh SQLite folder. */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const simulator = options.simulator ?? (await startSimulator({ port: 0 }));
  const dataDir = mkdtempSync(join(tmpdir(), 'switchyard-test-'));
  const makeConfig = (port: number): Config =>
    loadConfig({
      env: {},
      overrides: {
        port,
        host: '127.0.0.1',
        dataDir,
        logLevel: 'silent',
        shutdownGraceMs: 200,
        ...options.config,
        upstream: { url: simulator.url, maxRetries: 1, retryBaseDelayMs: 10, ...options.config?.upstream },
        tools: { ...options.config?.tools },
      } as DeepPartial<Config>,
    });
  const logger = pino({ level: 'silent' });
  const start = (port: number) => startGateway({ config: makeConfig(port), logger, executions: options.executions, store: options.store?.(dataDir) });
  let gateway = await start(0);
  const handle: TestGateway = {
    get gateway() {
      return gateway;
    },
    simulator,
    get baseURL() {
      return `${gateway.url}/v1`;
    },
    dataDir,
    async restart() {
      const port = gateway.port;
      await gateway.close();
      gateway = await start(port);
    },
    async close() {
      await gateway.close();
      if (!options.simulator) await simulator.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  } as TestGateway;
  return handle;
}

/** A user message carrying a simulator script (see src/simulate/README.md). */
export function scripted(script: unknown, text = 'go'): string {
  return `${text}\n#sim ${JSON.stringify(script)}`;
}

/** Reads an SSE response body into parsed events (data lines only). */
export async function readSse(response: Response): Promise<Array<Record<string, any>>> {
  const text = await response.text();
  const events: Array<Record<string, any>> = [];
  for (const block of text.split('\n\n')) {
    const data = block.split('\n').find((line) => line.startsWith('data: '));
    if (data) events.push(JSON.parse(data.slice(6)));
  }
  return events;
}
