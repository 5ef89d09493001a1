/**
 * Credentials never leave the gateway in what it stores, echoes or says in an error: URLs lose
 * their userinfo and the values of their query parameters (where tokens ride), and known secret
 * values are cut out of free text (an SDK's or the runtime's error message may quote them).
 */

/** Stands in for a removed credential. */
export const REDACTED = 'REDACTED';

/** `url` without credentials: no userinfo, every query value replaced. Text that is no URL is returned as is. */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return raw;
  }
  if (!url.username && !url.password && !url.search) return raw;
  url.username = '';
  url.password = '';
  for (const key of new Set(url.searchParams.keys())) url.searchParams.set(key, REDACTED);
  return url.href;
}

/** The parts of a URL that are credentials (userinfo, query values), as they may appear in text. */
export function urlSecrets(raw: string): string[] {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return [];
  }
  const out = [url.username, url.password, decodeURIComponent(url.username), decodeURIComponent(url.password)];
  for (const value of url.searchParams.values()) out.push(value, encodeURIComponent(value));
  return out;
}

/** `text` with every occurrence of a secret (of a useful length) replaced; longest first. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  const cut = [...new Set(secrets)].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  let out = text;
  for (const secret of cut) out = out.split(secret).join(REDACTED);
  return out;
}

/** Whether a string may be sent as an HTTP header value (no CR, LF, NUL or other controls but tab). */
export function isValidHeaderValue(value: string): boolean {
  // eslint-disable-next-line no-control-regex
  return !/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value);
}

/** An HTTP header name (RFC 9110 token). */
export function isValidHeaderName(name: string): boolean {
  return /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name);
}
