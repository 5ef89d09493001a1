import type { ParseArgsConfig } from 'node:util';
import { ConfigError } from '../config/config.js';

/** The flags a launcher reads itself, besides every flag of `switchyard serve`. */
export const LAUNCHER_OPTIONS: NonNullable<ParseArgsConfig['options']> = {
  gateway: { type: 'string' },
  'api-key': { type: 'string' },
  model: { type: 'string' },
};

export interface SplitArguments {
  /** Flag values by name (without `--`): strings, or true for booleans. */
  values: Record<string, string | boolean>;
  /** Everything for the agent CLI, as given. */
  rest: string[];
}

/**
 * `[gateway flags] [-- agent args…]`. Without `--`, the launcher's own flags are read from the
 * front and the agent's arguments start at the first token that is not one of them, so
 * `switchyard codex exec "fix it"` works as well as `switchyard codex --upstream URL -- exec "fix it"`.
 */
export function splitArguments(argv: string[], options: NonNullable<ParseArgsConfig['options']>): SplitArguments {
  const values: Record<string, string | boolean> = {};
  let index = 0;
  while (index < argv.length) {
    const token = argv[index];
    if (token === '--') return { values, rest: argv.slice(index + 1) };
    const match = /^--([^=]+)(?:=(.*))?$/s.exec(token);
    const option = match ? options[match[1]] : undefined;
    if (!match || !option) break;
    const name = match[1];
    if (option.type === 'boolean') {
      if (match[2] !== undefined) throw new ConfigError(`--${name} takes no value`);
      values[name] = true;
      index += 1;
    } else if (match[2] !== undefined) {
      values[name] = match[2];
      index += 1;
    } else {
      const value = argv[index + 1];
      if (value === undefined || value === '--') throw new ConfigError(`--${name} needs a value`);
      values[name] = value;
      index += 2;
    }
  }
  return { values, rest: argv.slice(index) };
}
