import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config, type DeepPartial } from '../config/config.js';
import { storeStartupError } from '../config/startup-errors.js';
import { openStores } from '../store/open-stores.js';
import { hashApiKey, newApiKey } from './key-hash.js';
import type { KeyStore } from './key-store.js';
import { openKeyStore } from './open-key-store.js';

export const KEYS_USAGE = `Usage:
  switchyard keys create NAME [--tenant T] [--rpm N] [--max-concurrent N]   prints the new key (shown only this once)
  switchyard keys list                                                      every key: name, tenant, limits, created, revoked
  switchyard keys revoke NAME                                               the key stops working (within auth.refreshMs on running gateways)
Where the keys are stored: the gateway's database (--config FILE, --data-dir DIR or --database-url URL, as for serve).`;

/** What the command prints: the key itself on stdout (scripts capture it), the rest on stderr. */
export interface KeysOutput {
  out(line: string): void;
  err(line: string): void;
}

/** `switchyard keys create|list|revoke`: API keys in the store, only their sha256 kept. */
export async function keysCommand(args: string[], output: KeysOutput = { out: (l) => console.log(l), err: (l) => console.error(l) }): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        config: { type: 'string' },
        'data-dir': { type: 'string' },
        'database-url': { type: 'string' },
        tenant: { type: 'string' },
        rpm: { type: 'string' },
        'max-concurrent': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new ConfigError(`${(err as Error).message}\n${KEYS_USAGE}`);
  }
  const { values, positionals } = parsed;
  const [sub, name, ...extra] = positionals;
  if (values.help || sub === undefined) {
    output.out(KEYS_USAGE);
    return;
  }
  if (extra.length > 0) throw new ConfigError(`unexpected argument '${extra[0]}'\n${KEYS_USAGE}`);
  if ((sub === 'create' || sub === 'revoke') && !name) throw new ConfigError(`keys ${sub}: a key NAME is required\n${KEYS_USAGE}`);
  if (name !== undefined && !/^[A-Za-z0-9_.@-]+$/.test(name)) throw new ConfigError(`keys: '${name}' is not a valid key name (letters, digits, '_', '.', '@', '-')`);
  const overrides: DeepPartial<Config> = {};
  if (values['data-dir']) overrides.dataDir = values['data-dir'];
  if (values['database-url']) overrides.store = { url: values['database-url'] };
  const config = loadConfig({ file: values.config, overrides });

  const keys = await open(config);
  try {
    if (sub === 'create') await create(keys, name!, values, output);
    else if (sub === 'list') await list(keys, output);
    else if (sub === 'revoke') {
      if (!(await keys.revoke(name!))) throw new ConfigError(`keys revoke: no active key named '${name}'`);
      output.err(`key '${name}' revoked; running gateways stop accepting it within ${config.auth.refreshMs} ms`);
    } else throw new ConfigError(`unknown keys command '${sub}'\n${KEYS_USAGE}`);
  } finally {
    await keys.close();
  }
}

async function create(keys: KeyStore, name: string, values: Record<string, unknown>, output: KeysOutput): Promise<void> {
  const rpm = positiveInt(values.rpm, '--rpm');
  const maxConcurrent = positiveInt(values['max-concurrent'], '--max-concurrent');
  const tenant = typeof values.tenant === 'string' && values.tenant !== '' ? values.tenant : name;
  const key = newApiKey();
  if (!(await keys.create({ name, tenant, keyHash: hashApiKey(key), rpm, maxConcurrent }))) throw new ConfigError(`keys create: a key named '${name}' exists already (revoked keys keep their name)`);
  output.out(key);
  output.err(`key '${name}' created for tenant '${tenant}'${rpm ? `, ${rpm} requests/min` : ''}${maxConcurrent ? `, ${maxConcurrent} turns at once` : ''}; it is shown only this once (the store keeps its sha256)`);
}

async function list(keys: KeyStore, output: KeysOutput): Promise<void> {
  const rows = (await keys.list()).map((k) => [k.name, k.tenant, k.rpm ?? '-', k.maxConcurrent ?? '-', new Date(k.createdAt).toISOString(), k.revokedAt ? new Date(k.revokedAt).toISOString() : '-'].map(String));
  const table = [['NAME', 'TENANT', 'RPM', 'MAX_CONCURRENT', 'CREATED', 'REVOKED'], ...rows];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) output.out(row.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd());
}

function positiveInt(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(`${flag}: expected a whole number ≥ 1, got '${String(value)}'`);
  return n;
}

/** The key table of the configured store; closing it closes the store. */
async function open(config: Config): Promise<KeyStore> {
  let stores: Awaited<ReturnType<typeof openStores>>;
  try {
    stores = await openStores(config.store, config.dataDir, () => undefined);
  } catch (err) {
    throw storeStartupError(err, config);
  }
  const keys = await openKeyStore(stores.responses);
  return {
    create: (k) => keys.create(k),
    list: () => keys.list(),
    revoke: (n) => keys.revoke(n),
    async close() {
      await stores.conversations.close();
      await stores.responses.close();
    },
  };
}
