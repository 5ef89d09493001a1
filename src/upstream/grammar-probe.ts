import { grammarFields } from '../protocol/chat.js';
import type { GrammarField } from '../protocol/model.js';
import type { UpstreamTransport } from './http.js';

/** The probe could not get an answer (connection, 5xx, timeout): not a verdict, asked again later. */
export const PROBE_FAILED = Symbol('probe failed');

/**
 * A grammar whose sentences no model would say unprompted: an answer of exactly this form proves
 * decoding under it. Plain rules and strings only (no `%import`, no regex), so every grammar
 * backend reads it (vLLM converts Lark to EBNF for xgrammar).
 */
const PROBE_GRAMMAR = { syntax: 'lark', definition: 'start: "zq" digit digit "x"\ndigit: "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9"' } as const;
const PROBE_ANSWER = /^zq\d\dx$/;
const PROBE_TIMEOUT_MS = 30_000;

/**
 * Does this upstream decode under a grammar, and through which field? vLLM ≥ 0.12 takes
 * `structured_outputs: {grammar}`, older vLLM `guided_grammar`; servers that ignore both answer
 * freely. One short non-streamed request per field tried; the answer decides, not the status
 * (vLLM accepts unknown fields with a warning).
 */
export async function probeGrammarSupport(transport: UpstreamTransport, model: string): Promise<GrammarField | undefined | typeof PROBE_FAILED> {
  let reached = false;
  for (const field of ['structured_outputs', 'guided'] as const) {
    const body = {
      model,
      messages: [{ role: 'user', content: 'Reply with a short code.' }],
      max_tokens: 16,
      temperature: 0,
      stream: false,
      ...grammarFields(PROBE_GRAMMAR, field),
    };
    try {
      const response = await transport.forward('/chat/completions', JSON.stringify(body), AbortSignal.timeout(PROBE_TIMEOUT_MS));
      const text = await response.body.text();
      if (response.statusCode >= 500) continue;
      reached = true;
      if (response.statusCode !== 200) continue;
      const content = (JSON.parse(text) as { choices?: Array<{ message?: { content?: unknown } }> }).choices?.[0]?.message?.content;
      if (typeof content === 'string' && PROBE_ANSWER.test(content.trim())) return field;
    } catch {
      // unreachable or not JSON: this field tells nothing
    }
  }
  return reached ? undefined : PROBE_FAILED;
}

/** `promise`, or a rejection once `signal` aborts (the shared probe itself keeps running). */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
