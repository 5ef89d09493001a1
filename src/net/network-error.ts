/**
 * A failed fetch in words an operator can act on: Node's `fetch` throws a bare "fetch failed"
 * whose cause carries the real reason (`connect ECONNREFUSED 127.0.0.1:9`) and its errno code.
 */
export function describeNetworkError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code ? `${cause.message} (${code})` : cause.message;
  }
  const code = (err as NodeJS.ErrnoException).code;
  return code && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
}
