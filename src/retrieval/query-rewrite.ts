import type { Logger } from '../util/logger.js';

/**
 * `rewrite_query: true` on a direct vector store search: the natural-language question becomes a
 * short search query, and the response's `search_query` shows what was searched (as OpenAI's:
 * "I'd like to know the height of the main office building." → "primary office building height").
 *
 * With `fileSearch.rewriteModel` set, that model writes the query (through the model router, at
 * temperature 0); without it — or when the model fails or answers nothing usable — the rewrite is
 * the deterministic keyword form below, so the option always does something and never fails a search.
 */
export interface QueryRewriter {
  rewrite(query: string, signal?: AbortSignal): Promise<string>;
}

/** Conversational filler that carries no search meaning, removed before the stopwords. */
const FILLER = /\b(?:i(?:'d| would) like to (?:know|find out|learn)|can you (?:please )?(?:tell|show) me|could you (?:please )?(?:tell|show) me|i (?:want|need) to (?:know|find)|tell me|please|thanks?(?: you)?)\b/giu;

/** Words dropped from a keyword rewrite (the keyword index's stopwords plus question words). */
const DROP = new Set(
  'a an and are as at be but by can could did do does for from had has have how i if in into is it its me my of on or our so than that the their them then there these they this to was we were what when where which who whom why will with would you your about any some just get find know tell show'.split(' '),
);

const MAX_QUERY_CHARS = 256;

/**
 * The keyword rewrite: the question's words in their order, lower-cased, without filler, stopwords
 * or repeats ("How do I file a complaint about a service issue?" → "file complaint service issue").
 * Negations stay ("not", "no", "without" change what is sought). Nothing left → the question as given.
 */
export function keywordRewrite(query: string): string {
  const words = query.replace(FILLER, ' ').toLowerCase().match(/[\p{L}\p{N}_][\p{L}\p{N}_'.-]*/gu) ?? [];
  const kept: string[] = [];
  for (const raw of words) {
    const word = raw.replace(/['.-]+$/u, '');
    if (word === '' || DROP.has(word) || kept.includes(word)) continue;
    kept.push(word);
  }
  return kept.length > 0 ? kept.join(' ').slice(0, MAX_QUERY_CHARS) : query.trim();
}

export const keywordRewriter: QueryRewriter = { rewrite: async (query) => keywordRewrite(query) };

/** How a chat completion is asked of the configured model (the model router's pass-through). */
export interface ChatRouter {
  forward(path: string, body: Buffer, model: string, signal: AbortSignal, parsed: Record<string, unknown>): Promise<{ upstream: string; response: { statusCode: number; body: { text(): Promise<string> } } }>;
}

const INSTRUCTIONS =
  'Rewrite the user\'s question as a short search query for a document search engine: the key terms only, no question words, no punctuation, no explanation. Answer with the query alone, on one line.';

const REWRITE_TIMEOUT_MS = 10_000;

/** The configured model rewrites; any failure falls back to the keyword rewrite (logged once). */
export function modelRewriter(router: ChatRouter, model: string, log: Logger): QueryRewriter {
  let warned = false;
  return {
    async rewrite(query, signal) {
      try {
        const body = { model, temperature: 0, max_tokens: 64, stream: false, messages: [{ role: 'system', content: INSTRUCTIONS }, { role: 'user', content: query }] };
        const timeout = AbortSignal.timeout(REWRITE_TIMEOUT_MS);
        const { response } = await router.forward('/chat/completions', Buffer.from(JSON.stringify(body)), model, signal ? AbortSignal.any([signal, timeout]) : timeout, body);
        const text = await response.body.text();
        if (response.statusCode !== 200) throw new Error(`HTTP ${response.statusCode}: ${text.slice(0, 200)}`);
        const content = (JSON.parse(text) as { choices?: Array<{ message?: { content?: unknown } }> }).choices?.[0]?.message?.content;
        // one line, no quotes or trailing punctuation; a rambling answer is not a query
        const line = typeof content === 'string' ? content.trim().split('\n')[0].replace(/^["'`]+|["'`.?!]+$/gu, '').trim() : '';
        if (line === '' || line.length > MAX_QUERY_CHARS) throw new Error(`the model answered no usable query (${JSON.stringify(String(content).slice(0, 80))})`);
        return line;
      } catch (err) {
        if (signal?.aborted) throw err;
        if (!warned) log.warn({ model, err: (err as Error).message }, 'file_search: rewrite_query by the model failed; using the keyword rewrite');
        warned = true;
        return keywordRewrite(query);
      }
    },
  };
}
