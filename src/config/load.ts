import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { envKeys } from './describe.js';
import { formatPath, interpolate } from './interpolate.js';
import { configSchema, type Config } from './schema.js';

/** A configuration the operator must fix; the message names the file (or variable) and key path. */
export class ConfigError extends Error {}

export type DeepPartial<T> = { [K in keyof T]?: T[K] extends readonly (infer U)[] ? readonly U[] : T[K] extends object ? DeepPartial<T[K]> : T[K] };

export interface LoadOptions {
  /** Config file (YAML or JSON); default `SWITCHYARD_CONFIG`. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Command-line flags (and tests): applied last. */
  overrides?: DeepPartial<Config>;
}

/** Defaults < config file < environment < command-line flags; every layer validated by the schema. */
export function loadConfig(options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  const file = options.file ?? (env.SWITCHYARD_CONFIG || undefined);
  const fileRaw = file ? readConfigFile(file, env) : {};
  // the file alone first, so its mistakes are reported against the file
  if (file) parseOrThrow(fileRaw, () => file);
  const envRaw = fromEnvironment(env);
  const merged = merge(merge(fileRaw, envRaw.values), stripUndefined(options.overrides ?? {}));
  const config = parseOrThrow(merged, (path) => envRaw.sources.get(path) ?? (hasPath(options.overrides, path) ? 'command line' : (file ?? 'config')));
  finish(config, file ?? 'config');
  return config;
}

/** Reads and interpolates a YAML or JSON file (not yet validated). */
export function readConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
    throw new ConfigError(`${file}: cannot read the config file (${why}); check --config / SWITCHYARD_CONFIG`);
  }
  let parsed: unknown;
  try {
    parsed = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    throw new ConfigError(`${file}: not valid ${/\.json$/i.test(file) ? 'JSON' : 'YAML'}: ${(err as Error).message.split('\n')[0]}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`${file}: expected a mapping of keys at the top level`);
  return interpolate(parsed, env, (path, message) => new ConfigError(`${file}: ${path}: ${message}`)) as Record<string, unknown>;
}

function parseOrThrow(raw: unknown, sourceOf: (path: string) => string): Config {
  const result = configSchema.safeParse(raw, { reportInput: true });
  if (result.success) return result.data;
  const lines = result.error.issues.slice(0, 10).map((issue) => describeIssue(issue, sourceOf));
  throw new ConfigError(lines.join('\n'));
}

/** `config.yaml: upstreams[1].url: expected a URL`. */
function describeIssue(issue: z.core.$ZodIssue, sourceOf: (path: string) => string): string {
  const path = formatPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys
      .map((key) => {
        const full = path ? `${path}.${key}` : key;
        const hint = suggest(key, knownKeys(issue.path));
        return `${sourceOf(full)}: ${full}: unknown key${hint ? ` (did you mean '${hint}'?)` : ''}`;
      })
      .join('\n');
  }
  let message = issue.message;
  if (issue.code === 'invalid_type') {
    const got = (issue as { input?: unknown }).input;
    message = got === undefined ? 'required' : `expected ${article(issue.expected)}, got ${describeValue(got)}`;
  }
  return `${sourceOf(path)}: ${path || '(top level)'}: ${message}`;
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return `the string '${value.length > 40 ? value.slice(0, 40) + '…' : value}'`;
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${String(value)}`;
}

/** The keys the schema allows at an object path (for "did you mean"). */
function knownKeys(path: readonly PropertyKey[]): string[] {
  let node: unknown = configSchema;
  for (const part of path) {
    node = step(node, part);
    if (!node) return [];
  }
  const shape = innerDef(node).shape;
  return shape ? Object.keys(shape) : [];
}

function innerDef(node: unknown): { type: string; shape?: Record<string, unknown>; element?: unknown; valueType?: unknown; innerType?: unknown; options?: unknown[] } {
  let d = (node as { _zod: { def: ReturnType<typeof innerDef> } })._zod.def;
  while (d.innerType) d = (d.innerType as { _zod: { def: ReturnType<typeof innerDef> } })._zod.def;
  return d;
}

function step(node: unknown, part: PropertyKey): unknown {
  const d = innerDef(node);
  if (d.type === 'object') return d.shape?.[String(part)];
  if (d.type === 'array') return d.element;
  if (d.type === 'record') return d.valueType;
  if (d.type === 'union') return d.options?.find((o) => innerDef(o).type === (typeof part === 'number' ? 'array' : 'object')) ? step(d.options.find((o) => innerDef(o).type === (typeof part === 'number' ? 'array' : 'object')), part) : undefined;
  return undefined;
}

function suggest(key: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length];
}

/** Environment variables named in the schema, converted to the key's type. */
function fromEnvironment(env: NodeJS.ProcessEnv): { values: Record<string, unknown>; sources: Map<string, string> } {
  const values: Record<string, unknown> = {};
  const sources = new Map<string, string>();
  for (const key of envKeys()) {
    const name = key.doc!.env!;
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    let value: unknown = raw;
    if (key.kind === 'number') {
      value = Number(raw);
      if (!Number.isFinite(value)) throw new ConfigError(`${name}: ${key.path}: expected a number, got '${raw}'`);
    } else if (key.kind === 'boolean') {
      if (!/^(true|false|1|0)$/i.test(raw)) throw new ConfigError(`${name}: ${key.path}: expected true or false, got '${raw}'`);
      value = /^(true|1)$/i.test(raw);
    }
    setPath(values, key.path.split('.'), value);
    sources.set(key.path, name);
  }
  return { values, sources };
}

/** Checks across keys, and the URL-selects-PostgreSQL convenience. */
function finish(config: Config, source: string): void {
  if (config.store.url && config.store.kind === 'sqlite') config.store.kind = 'postgres';
  if (config.store.kind === 'postgres' && !config.store.url) throw new ConfigError(`${source}: store.url: required when store.kind is 'postgres' (or set SWITCHYARD_DATABASE_URL)`);
  if (config.upstreams.length > 0 && config.upstream.url !== null) {
    throw new ConfigError(`${source}: upstream.url: set either upstream.url / --upstream (one upstream) or upstreams (many), not both`);
  }
  // a lease renewed every heartbeat must not expire between two of them
  if (config.background.staleAfterMs < 2 * config.background.heartbeatMs) {
    throw new ConfigError(`${source}: background.staleAfterMs: must be at least twice background.heartbeatMs (${config.background.heartbeatMs} ms)`);
  }
  if (config.limits.requestTimeoutMs < config.limits.headersTimeoutMs) {
    throw new ConfigError(`${source}: limits.requestTimeoutMs: must be at least limits.headersTimeoutMs (${config.limits.headersTimeoutMs} ms)`);
  }
  const names = new Set<string>();
  config.upstreams.forEach((entry, i) => {
    if (names.has(entry.name)) throw new ConfigError(`${source}: upstreams[${i}].name: '${entry.name}' is used twice`);
    names.add(entry.name);
  });
  if (names.size === 0) names.add('default');
  for (const [alias, target] of Object.entries(config.models)) {
    const check = (name: string, path: string) => {
      if (!names.has(name)) throw new ConfigError(`${source}: ${path}: no upstream named '${name}' (known: ${[...names].join(', ')})`);
    };
    check(target.upstream, `models.${alias}.upstream`);
    target.fallbacks.forEach((f, i) => check(f.upstream, `models.${alias}.fallbacks[${i}].upstream`));
  }
}

function hasPath(root: unknown, path: string): boolean {
  let node = root;
  for (const part of path.split(/\.|\[/)) {
    if (node === null || typeof node !== 'object') return false;
    node = (node as Record<string, unknown>)[part.replace(/\]$/, '')];
  }
  return node !== undefined;
}

function stripUndefined(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = stripUndefined(v);
  return out;
}

function merge(base: unknown, patch: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === undefined) continue;
    const current = out[key];
    out[key] =
      value !== null && typeof value === 'object' && !Array.isArray(value) && current !== null && typeof current === 'object' && !Array.isArray(current)
        ? merge(current, value)
        : value;
  }
  return out;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) node = (node[key] ??= {}) as Record<string, unknown>;
  node[path[path.length - 1]] = value;
}
