import { z } from 'zod';
import { configSchema, type KeyDoc } from './schema.js';

/** One documented key of the schema: a leaf, or a structured value documented as a whole. */
export interface KeyInfo {
  path: string;
  doc: KeyDoc | undefined;
  /** What kind of value the environment variable carries. */
  kind: 'string' | 'number' | 'boolean' | 'other';
  defaultValue: unknown;
  hasDefault: boolean;
}

type AnySchema = z.core.$ZodType;
interface Def {
  type: string;
  innerType?: AnySchema;
  defaultValue?: unknown;
  shape?: Record<string, AnySchema>;
  element?: AnySchema;
  valueType?: AnySchema;
  options?: AnySchema[];
}

const def = (schema: AnySchema): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;
const WRAPPERS = new Set(['default', 'prefault', 'optional', 'nullable', 'readonly', 'nonoptional', 'catch']);

/** Strips default/optional/nullable wrappers, collecting the first doc and default met on the way. */
export function unwrap(schema: AnySchema): { inner: AnySchema; doc: KeyDoc | undefined; defaultValue: unknown; hasDefault: boolean } {
  let doc: KeyDoc | undefined;
  let defaultValue: unknown;
  let hasDefault = false;
  let node = schema;
  for (;;) {
    doc ??= z.globalRegistry.get(node) as KeyDoc | undefined;
    const d = def(node);
    if ((d.type === 'default' || d.type === 'prefault') && !hasDefault) {
      hasDefault = true;
      defaultValue = d.defaultValue;
    }
    if (!WRAPPERS.has(d.type) || !d.innerType) break;
    node = d.innerType;
  }
  return { inner: node, doc, defaultValue, hasDefault };
}

function kindOf(schema: AnySchema): KeyInfo['kind'] {
  const type = def(schema).type;
  if (type === 'number' || type === 'int') return 'number';
  if (type === 'boolean') return 'boolean';
  if (type === 'string' || type === 'enum' || type === 'literal') return 'string';
  return 'other';
}

/**
 * Every documented key in schema order. Objects are walked into unless they carry their own doc
 * (then they are one row, like `mcp.breaker`); arrays and records are one row.
 */
export function listKeys(schema: AnySchema = configSchema, prefix = ''): KeyInfo[] {
  const out: KeyInfo[] = [];
  const shape = def(unwrap(schema).inner).shape ?? {};
  for (const [name, child] of Object.entries(shape)) {
    const path = prefix ? `${prefix}.${name}` : name;
    const info = unwrap(child);
    const innerDef = def(info.inner);
    if (innerDef.type === 'object' && !(info.doc && prefix !== '')) {
      out.push(...listKeys(info.inner, path));
      continue;
    }
    out.push({ path, doc: info.doc, kind: kindOf(info.inner), defaultValue: info.defaultValue, hasDefault: info.hasDefault });
  }
  return out;
}

/** Keys settable from the environment: variable name → key. */
export function envKeys(): KeyInfo[] {
  return listKeys().filter((k) => k.doc?.env);
}

/** Keys settable by a `serve` flag. */
export function flagKeys(): KeyInfo[] {
  return listKeys().filter((k) => k.doc?.flag);
}

function defaultText(key: KeyInfo): string {
  if (key.doc?.defaultText) return key.doc.defaultText;
  if (!key.hasDefault || key.defaultValue === undefined) return 'none';
  const value = key.defaultValue;
  if (typeof value === 'number' && key.path.endsWith('Ms') && value >= 1000 && value % 1000 === 0) return `${value / 1000} s`;
  return `\`${JSON.stringify(value)}\``;
}

/** The README's configuration table, generated from the schema (test/config/config.test.ts keeps them equal). */
export function configTable(): string {
  const rows = ['| Key | Flag | Environment | Default | Meaning |', '|---|---|---|---|---|'];
  for (const key of listKeys()) {
    if (!key.doc) continue;
    const cell = (text: string | undefined) => (text ? `\`${text}\`` : '');
    rows.push(`| \`${key.path}\` | ${cell(key.doc.flag)} | ${cell(key.doc.env)} | ${defaultText(key).replace(/\|/g, '\\|')} | ${key.doc.description.replace(/\|/g, '\\|')}${key.doc.secret ? ' (secret: masked)' : ''} |`);
  }
  return rows.join('\n');
}

/** The options part of `switchyard --help`. */
export function helpOptions(): string {
  const lines: string[] = [];
  for (const key of flagKeys()) {
    const value = key.kind === 'boolean' ? '' : key.kind === 'number' ? ' N' : ' VALUE';
    lines.push(`  ${(key.doc!.flag! + value).padEnd(24)} ${key.doc!.description} [${key.path}${key.doc!.env ? `, ${key.doc!.env}` : ''}]`);
  }
  return lines.join('\n');
}

/** Environment variables recognised, for `--help`. */
export function helpEnvironment(): string {
  const names = ['SWITCHYARD_CONFIG', ...envKeys().map((k) => k.doc!.env!)];
  const lines: string[] = [];
  let line = ' ';
  for (const name of names) {
    if (line.length + name.length > 96) {
      lines.push(line);
      line = ' ';
    }
    line += ` ${name}`;
  }
  lines.push(line);
  return lines.join('\n');
}

const MASK = '***';

/** A database URL with its password hidden (the rest helps the operator see where it points). */
export function maskUrlPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*):[^@/]*@/i, `$1:${MASK}@`);
}

/** A copy of `value` with every key the schema marks `secret` masked (database URLs keep all but the password). */
export function maskSecrets(value: unknown, schema: AnySchema = configSchema, path = ''): unknown {
  if (value === undefined || value === null) return value;
  const { inner, doc } = unwrap(schema);
  if (doc?.secret) {
    if (typeof value === 'string') return path === 'store.url' ? maskUrlPassword(value) : MASK;
    if (typeof value === 'object') return Object.fromEntries(Object.keys(value).map((k) => [k, MASK]));
    return MASK;
  }
  const d = def(inner);
  if (d.type === 'object' && d.shape && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = d.shape[k] ? maskSecrets(v, d.shape[k], path ? `${path}.${k}` : k) : v;
    return out;
  }
  if (d.type === 'array' && d.element && Array.isArray(value)) return value.map((v) => maskSecrets(v, d.element!, `${path}[]`));
  if (d.type === 'record' && d.valueType && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, maskSecrets(v, d.valueType!, `${path}.*`)]));
  }
  if (d.type === 'union' && d.options && typeof value === 'object') {
    for (const option of d.options) if (def(unwrap(option).inner).type === (Array.isArray(value) ? 'array' : 'object')) return maskSecrets(value, option, path);
  }
  return value;
}
