import type { ParseArgsConfig } from 'node:util';
import { ConfigError, type Config, type DeepPartial } from './config.js';
import { flagKeys } from './describe.js';

/** The serve flags, from the schema (every key that names a `flag`). */
export function serveOptions(): ParseArgsConfig['options'] {
  const options: NonNullable<ParseArgsConfig['options']> = { config: { type: 'string' }, help: { type: 'boolean', short: 'h' } };
  for (const key of flagKeys()) options[key.doc!.flag!.replace(/^--/, '')] = { type: key.kind === 'boolean' ? 'boolean' : 'string' };
  return options;
}

/** Flag values as config overrides, converted to each key's type. */
export function flagOverrides(values: Record<string, unknown>): DeepPartial<Config> {
  const overrides: Record<string, unknown> = {};
  for (const key of flagKeys()) {
    const flag = key.doc!.flag!;
    let value = values[flag.replace(/^--/, '')];
    if (value === undefined) continue;
    if (key.kind === 'number') {
      const number = Number(value);
      if (!Number.isFinite(number) || value === '') throw new ConfigError(`${flag}: expected a number, got '${String(value)}'`);
      value = number;
    }
    const path = key.path.split('.');
    let node = overrides;
    for (const part of path.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>;
    node[path[path.length - 1]] = value;
  }
  return overrides as DeepPartial<Config>;
}

