/**
 * Shared empty collections, for what most requests have none of (call records, offered names,
 * searched declarations, cited files): returned instead of a new empty one on the hot path. They
 * are typed read-only; nothing may add to them.
 */
export const EMPTY_MAP: ReadonlyMap<never, never> = new Map<never, never>();
export const EMPTY_SET: ReadonlySet<never> = new Set<never>();
export const EMPTY_LIST: readonly never[] = Object.freeze([]);
