import { createHash } from 'node:crypto';

// Model-visible names shared by tool types (a namespace's members are function and custom tools,
// whose calls are replayed under the name the model saw).

/** Separator between a namespace and a member in model-visible names: `crm__lookup`. */
export const NAMESPACE_SEPARATOR = '__';

/**
 * The model-visible name of a namespace member: `<namespace>__<member>`, cut to 64 characters
 * with an 8-hex-digit hash suffix when longer, so it is deterministic and stays within the
 * Chat Completions name limit. The registry, not this string, restores the identity.
 */
export function flattenedName(namespace: string, member: string): string {
  const name = `${namespace}${NAMESPACE_SEPARATOR}${member}`;
  if (name.length <= 64) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, 55)}_${hash}`;
}
