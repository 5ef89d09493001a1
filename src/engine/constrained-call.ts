import { GatewayError } from '../errors.js';
import type { ModelRequest, ModelToolChoice, RawEvent } from '../protocol/model.js';
import { ID_PREFIX } from '../protocol/responses.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { RegistryEntry } from '../tools/types.js';
import type { RawEventStream, UpstreamClient } from '../upstream/client.js';
import { streamOf } from '../upstream/event-stream.js';
import { newId } from '../util/ids.js';
import type { Logger } from './types.js';
import type { Cancellation } from '../util/abort.js';

/**
 * Grammar-constrained custom tool calls. When `tool_choice` forces a custom tool with a grammar
 * and the upstream decodes under grammars (vLLM `structured_outputs`, probed once), the round is
 * sent without tools and with the grammar: the model's whole reply is the tool's input, generated
 * so that it cannot fail the grammar. The reply then comes back to the turn as that tool's call.
 */

/**
 * Opens one round. With `registry` (round 0) and a forced custom tool with a grammar on an
 * upstream that decodes under grammars, the round is constrained; a server that supports grammars
 * but refuses this one (a 4xx: e.g. a backend that cannot read some Lark feature) gets the usual
 * request instead, and the input is checked as without constrained decoding.
 */
export function openRound(upstream: UpstreamClient, request: ModelRequest, registry: ToolRegistry | undefined, signal: Cancellation, log: Logger): Promise<RawEventStream> {
  const entry = registry ? forcedGrammarTool(request.toolChoice, registry) : undefined;
  // the usual round goes straight to the upstream (no async layer of its own on the way)
  if (!entry || !upstream.grammarSupport) return upstream.open(request, signal);
  return openConstrained(upstream, request, entry, signal, log);
}

async function openConstrained(upstream: UpstreamClient, request: ModelRequest, entry: RegistryEntry, signal: Cancellation, log: Logger): Promise<RawEventStream> {
  if (!(await upstream.grammarSupport?.(request.model, signal))) return upstream.open(request, signal);
  try {
    return streamOf(replyAsCall(await upstream.open(constrainedRequest(request, entry), signal), entry));
  } catch (err) {
    if (signal.aborted || !(err instanceof GatewayError) || err.status < 400 || err.status >= 500) throw err;
    log.warn({ tool: entry.identity.name, message: err.message }, 'the upstream refused the grammar of a forced custom tool: sent without it');
    return upstream.open(request, signal);
  }
}

/** The custom tool a forced `tool_choice` names, when it has a grammar to decode under. */
export function forcedGrammarTool(toolChoice: ModelToolChoice | undefined, registry: ToolRegistry): RegistryEntry | undefined {
  if (typeof toolChoice !== 'object') return undefined;
  const entry = registry.lookup(toolChoice.name);
  return entry?.constrained ? entry : undefined;
}

/** The round's request, decoding the forced tool's input under its grammar. */
export function constrainedRequest(request: ModelRequest, entry: RegistryEntry): ModelRequest {
  const { tools: _tools, toolChoice: _choice, parallelToolCalls: _parallel, responseFormat: _format, ...rest } = request;
  const instruction = [
    `Now call the tool '${entry.identity.name}'. Reply with its input only: your whole reply is passed to the tool verbatim.`,
    entry.fn.description ?? '',
  ].join('\n\n');
  return { ...rest, tools: [], grammar: entry.constrained!.grammar, items: [...request.items, { type: 'message', role: 'user', content: [{ type: 'text', text: instruction }] }] };
}

/** The upstream's text reply, re-read as the forced tool's call (reasoning and usage pass through). */
export async function* replyAsCall(batches: AsyncIterable<RawEvent[]>, entry: RegistryEntry): AsyncIterable<RawEvent[]> {
  let input = '';
  for await (const batch of batches) {
    const out: RawEvent[] = [];
    for (const event of batch) {
      if (event.kind === 'text' || event.kind === 'refusal') {
        input += event.delta;
      } else if (event.kind === 'finish') {
        out.push({ kind: 'tool_call_start', index: 0, callId: newId(ID_PREFIX.call), name: entry.modelName });
        out.push({ kind: 'tool_call_args', index: 0, delta: entry.constrained!.callArguments(input) });
        out.push(event.reason === 'stop' ? { ...event, reason: 'tool_calls' } : event);
      } else {
        out.push(event);
      }
    }
    if (out.length > 0) yield out;
  }
}
