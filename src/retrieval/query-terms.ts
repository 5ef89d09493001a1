/** Words too common to help a keyword search ("what is the …"): dropped unless nothing else is left. */
const STOPWORDS = new Set(
  'a an and are as at be but by can could did do does for from had has have how i if in into is it its me my no not of on or our so than that the their them then there these they this to was we were what when where which who whom why will with would you your'.split(' '),
);

const MAX_TERMS = 32;

/**
 * The keyword terms of a natural-language query: lower-cased words of letters, digits and `_`,
 * deduplicated, stopwords dropped. Operators, quotes, colons and parentheses never reach the full
 * text engine, so no question can be an index syntax error.
 */
export function queryTerms(query: string): string[] {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [])];
  const useful = words.filter((w) => !STOPWORDS.has(w));
  return (useful.length > 0 ? useful : words).slice(0, MAX_TERMS);
}
