const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** The form of a duration in the config: a whole number and a unit, e.g. `30d`, `12h`, `90m`. */
export const DURATION_PATTERN = /^([1-9][0-9]*)(s|m|h|d|w)$/;

/** A duration like `30d` in milliseconds; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION_PATTERN.exec(text.trim());
  return match ? Number(match[1]) * UNIT_MS[match[2]] : undefined;
}
