/**
 * A body parser for the interning tests (src/util/interned-member.ts, interned-prefix.ts) that
 * records every text it was given: a body as sent, a body with a sentinel in place of kept bytes,
 * or kept bytes alone — so a test can tell what was parsed again and what was not.
 */
export function recordingParser(): { seen: string[]; parse: (body: Buffer) => unknown } {
  const seen: string[] = [];
  const parse = (body: Buffer) => {
    const text = body.toString('utf8');
    seen.push(text);
    return JSON.parse(text);
  };
  return { seen, parse };
}
