import { invalidRequest } from '../errors.js';
import type { Attributes } from '../files/store.js';

/** OpenAI's attribute filters: a comparison, or `and` / `or` of filters (nested freely). */
export type AttributeFilter =
  | { type: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte'; key: string; value: string | number | boolean }
  | { type: 'in' | 'nin'; key: string; value: Array<string | number> }
  | { type: 'and' | 'or'; filters: AttributeFilter[] };

const COMPARISONS = new Set(['eq', 'ne', 'gt', 'gte', 'lt', 'lte']);
const MAX_DEPTH = 8;

/** Validates a client's filter; errors name the offending path (`filters.filters[1].value`). */
export function parseFilter(raw: unknown, param: string, depth = 0): AttributeFilter {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalidRequest(`Invalid type for '${param}': expected an object.`, param, 'invalid_type');
  if (depth > MAX_DEPTH) throw invalidRequest(`'${param}' nests filters too deeply (at most ${MAX_DEPTH} levels).`, param);
  const f = raw as Record<string, unknown>;
  if (f.type === 'and' || f.type === 'or') {
    if (!Array.isArray(f.filters) || f.filters.length === 0) throw invalidRequest(`Invalid '${param}.filters': expected a non-empty array.`, `${param}.filters`);
    return { type: f.type, filters: f.filters.map((child, i) => parseFilter(child, `${param}.filters[${i}]`, depth + 1)) };
  }
  if (typeof f.key !== 'string' || f.key.length === 0) throw invalidRequest(`Missing required parameter: '${param}.key'.`, `${param}.key`, 'missing_required_parameter');
  if (f.type === 'in' || f.type === 'nin') {
    if (!Array.isArray(f.value) || f.value.some((v) => typeof v !== 'string' && typeof v !== 'number')) throw invalidRequest(`Invalid '${param}.value': expected an array of strings or numbers.`, `${param}.value`);
    return { type: f.type, key: f.key, value: f.value as Array<string | number> };
  }
  if (typeof f.type !== 'string' || !COMPARISONS.has(f.type)) throw invalidRequest(`Invalid '${param}.type': expected one of eq, ne, gt, gte, lt, lte, in, nin, and, or.`, `${param}.type`);
  if (typeof f.value !== 'string' && typeof f.value !== 'number' && typeof f.value !== 'boolean') throw invalidRequest(`Invalid '${param}.value': expected a string, number or boolean.`, `${param}.value`);
  return { type: f.type as 'eq', key: f.key, value: f.value };
}

/**
 * Whether a file's attributes pass the filter. Ordering comparisons need the same type on both
 * sides (numbers with numbers, strings with strings); a missing attribute passes only `ne`/`nin`.
 */
export function matchesFilter(filter: AttributeFilter, attributes: Attributes): boolean {
  switch (filter.type) {
    case 'and':
      return filter.filters.every((f) => matchesFilter(f, attributes));
    case 'or':
      return filter.filters.some((f) => matchesFilter(f, attributes));
    case 'in':
    case 'nin': {
      const has = Object.hasOwn(attributes, filter.key) && filter.value.some((v) => v === attributes[filter.key]);
      return filter.type === 'in' ? has : !has;
    }
    default: {
      const actual = Object.hasOwn(attributes, filter.key) ? attributes[filter.key] : undefined;
      if (filter.type === 'eq') return actual === filter.value;
      if (filter.type === 'ne') return actual !== filter.value;
      if (actual === undefined || typeof actual !== typeof filter.value || typeof actual === 'boolean') return false;
      const a = actual as string | number;
      const b = filter.value as string | number;
      return filter.type === 'gt' ? a > b : filter.type === 'gte' ? a >= b : filter.type === 'lt' ? a < b : a <= b;
    }
  }
}
