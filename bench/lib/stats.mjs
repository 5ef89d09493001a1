// Small statistics helpers (nearest-rank percentiles on full sample arrays, no histograms,
// so sub-millisecond latencies keep their precision).

/** Sorts a copy (numeric) and returns it. */
export function sorted(values) {
  const a = Float64Array.from(values);
  a.sort();
  return a;
}

/** Nearest-rank percentile of an already sorted array; p in [0, 100]. */
export function percentile(sortedValues, p) {
  const n = sortedValues.length;
  if (n === 0) return NaN;
  const rank = Math.min(n, Math.max(1, Math.ceil((p / 100) * n)));
  return sortedValues[rank - 1];
}

export function median(values) {
  const s = sorted(values);
  const n = s.length;
  if (n === 0) return NaN;
  return n % 2 === 1 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/** Rounds for display / JSON (keeps NaN/null as null). */
export function round(value, digits = 3) {
  if (value === null || value === undefined || !Number.isFinite(value)) return null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
