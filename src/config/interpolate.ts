const WHOLE_REFERENCE = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;
const REFERENCE = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Replaces `${VAR}` and `${VAR:-default}` in every string of a parsed config file with values
 * from the environment (`$$` is a literal `$`). A variable that is unset (or empty, for the
 * `:-` form) without a default is an error naming the key, so a missing secret fails at start.
 * A value that is exactly one reference reads as a number or boolean when its text is one.
 */
export function interpolate(value: unknown, env: NodeJS.ProcessEnv, fail: (path: string, message: string) => Error, path: PropertyKey[] = []): unknown {
  if (typeof value === 'string') {
    if (!value.includes('$')) return value;
    const replaced = value.replace(REFERENCE, (match, name: string | undefined, fallback: string | undefined) => {
      if (match === '$$') return '$';
      const found = env[name!];
      if (found !== undefined && (found !== '' || fallback === undefined)) return found;
      if (fallback !== undefined) return fallback;
      throw fail(formatPath(path), `environment variable ${name} is not set (use \${${name}:-default} for a default)`);
    });
    // a value that is one reference takes the type its text reads as (`port: ${PORT}` is a number)
    if (WHOLE_REFERENCE.test(value)) {
      if (/^-?\d+(\.\d+)?$/.test(replaced)) return Number(replaced);
      if (replaced === 'true' || replaced === 'false') return replaced === 'true';
    }
    return replaced;
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, fail, [...path, i]));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, env, fail, [...path, k]);
    return out;
  }
  return value;
}

/** `upstreams[1].url` from a path of keys and indexes. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : out ? `.${String(part)}` : String(part);
  return out;
}
