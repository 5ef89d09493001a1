import { homedir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { flagOverrides } from '../config/cli-flags.js';
import { ConfigError, loadConfig, readConfigFile, type Config, type DeepPartial } from '../config/config.js';

/** Starts the gateway (the composition root's `startGateway`, handed in by the CLI). */
export type StartGateway = (options: { config: Config; logger: pino.Logger }) => Promise<{ url: string; port: number; close(): Promise<void> }>;

/** A gateway the agent talks to: started here for the agent's lifetime, or one already running. */
export interface GatewaySession {
  /** Origin and path prefix without `/v1`, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Sent as a bearer key (gateway auth), when given. */
  apiKey: string | undefined;
  /** The in-process gateway's config (undefined for `--gateway`). */
  config: Config | undefined;
  /** Where the in-process gateway logs (the agent owns the terminal). */
  logFile: string | undefined;
  close(): Promise<void>;
}

/**
 * `--gateway URL`: that gateway. Otherwise a gateway in this process with the flags of
 * `switchyard serve`, on a free loopback port unless told otherwise, its store in the user's data
 * folder (not `./data` in the project the agent works on) and its log in a file there.
 */
export async function openGatewaySession(values: Record<string, unknown>, env: NodeJS.ProcessEnv, startGateway: StartGateway): Promise<GatewaySession> {
  const apiKey = (values['api-key'] as string | undefined) ?? (env.SWITCHYARD_API_KEY || undefined);
  const external = values.gateway as string | undefined;
  if (external !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(external);
    } catch {
      throw new ConfigError(`--gateway: expected a URL, got '${external}'`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(`--gateway: expected an http(s) URL, got '${external}'`);
    const url = parsed.toString().replace(/\/+$/, '').replace(/\/v1$/, '');
    return { url, apiKey, config: undefined, logFile: undefined, close: async () => {} };
  }

  const overrides = flagOverrides(values) as DeepPartial<Config> & Record<string, unknown>;
  const file = (values.config as string | undefined) ?? (env.SWITCHYARD_CONFIG || undefined);
  const fileSets = (key: string) => (file ? Object.hasOwn(readConfigFile(file, env) as object, key) : false);
  if (values.port === undefined && !env.SWITCHYARD_PORT && !fileSets('port')) overrides.port = 0;
  if (values.host === undefined && !env.SWITCHYARD_HOST && !fileSets('host')) overrides.host = '127.0.0.1';
  if (values['data-dir'] === undefined && !env.SWITCHYARD_DATA_DIR && !fileSets('dataDir')) overrides.dataDir = defaultDataDir(env);
  const config = loadConfig({ file, env, overrides });
  const logFile = join(config.dataDir, 'launcher.log');
  const destination = pino.destination({ dest: logFile, mkdir: true, sync: true });
  const logger = pino({ level: config.logLevel }, destination);
  const gateway = await startGateway({ config, logger });
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host === '::' ? '[::1]' : undefined;
  const url = host ? `http://${host}:${gateway.port}` : gateway.url;
  return {
    url,
    apiKey,
    config,
    logFile,
    async close() {
      await gateway.close();
      destination.flushSync();
    },
  };
}

/** `$XDG_DATA_HOME/switchyard`, else `~/.local/share/switchyard`. */
function defaultDataDir(env: NodeJS.ProcessEnv): string {
  return join(env.XDG_DATA_HOME || join(env.HOME || homedir(), '.local', 'share'), 'switchyard');
}

/** `GET {gateway}/v1/models…` with the key, as JSON. */
export async function getJson(session: GatewaySession, path: string): Promise<unknown> {
  const response = await fetch(`${session.url}${path}`, {
    headers: session.apiKey ? { authorization: `Bearer ${session.apiKey}` } : {},
    signal: AbortSignal.timeout(30_000),
  });
  if (!response.ok) throw new ConfigError(`the gateway at ${session.url} answered GET ${path} with ${response.status}: ${(await response.text()).slice(0, 300)}`);
  return response.json();
}
