import type { UpstreamTransport } from '../upstream/client.js';
import { configSchema, type Config } from './schema.js';

export { ConfigError, loadConfig, readConfigFile, type DeepPartial, type LoadOptions } from './load.js';
export { configSchema, type Config, type ConfigInput } from './schema.js';

/** Every key at its default (the schema's defaults, parsed). */
export const DEFAULT_CONFIG: Config = configSchema.parse({});

/** One upstream as the router sees it: the `upstream.*` transport defaults filled in. */
export interface UpstreamConfig extends UpstreamTransport {
  name: string;
  /** Base URL including `/v1`; null = the built-in simulated model. */
  url: string | null;
  api: 'chat' | 'responses';
  apiKey?: string;
  /** The models it serves; `*` = whatever is asked (its `/models` list is shown). */
  models: '*' | string[];
  reasoningReplay: 'none' | 'reasoning' | 'reasoning_content';
}

/** `upstreams`, or the single `upstream` (`--upstream`) as a one-entry list named `default`. */
export function effectiveUpstreams(config: Config): UpstreamConfig[] {
  const defaults = config.upstream;
  if (config.upstreams.length === 0) return [{ ...defaults, name: 'default', models: '*' }];
  return config.upstreams.map((entry) => {
    const out: UpstreamConfig = { ...defaults, apiKey: undefined, ...stripUndefined(entry), api: entry.api ?? defaults.api };
    return out;
  });
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** An upstream URL whose path has no `/v1`: most OpenAI-compatible servers want it. */
export function missingV1(url: string): boolean {
  return !/\/v\d+[a-z]*\/?$/i.test(new URL(url).pathname);
}
