import type { ResponseObject, TextConfig } from '../protocol/responses.js';
import type { CreateRequest } from './request.js';
import { echoTools } from '../tools/registry.js';

/** The Response object as created: every echoed field present, nulls included (responses-api.md §4). */
export function newResponseObject(id: string, createdAt: number, req: CreateRequest): ResponseObject {
  return {
    id,
    object: 'response',
    created_at: createdAt,
    completed_at: null,
    status: 'in_progress',
    incomplete_details: null,
    model: req.model,
    previous_response_id: req.previousResponseId,
    instructions: req.instructions,
    output: [],
    error: null,
    tools: echoTools(req.tools),
    tool_choice: req.toolChoice,
    truncation: req.truncation,
    parallel_tool_calls: req.parallelToolCalls,
    text: echoText(req.text),
    top_p: req.topP ?? 1,
    presence_penalty: req.presencePenalty,
    frequency_penalty: req.frequencyPenalty,
    top_logprobs: req.topLogprobs,
    temperature: req.temperature ?? 1,
    reasoning: req.reasoning,
    usage: null,
    max_output_tokens: req.maxOutputTokens,
    max_tool_calls: req.maxToolCalls,
    store: req.store,
    background: req.background,
    service_tier: req.serviceTier,
    metadata: req.metadata,
    safety_identifier: req.safetyIdentifier,
    prompt_cache_key: req.promptCacheKey,
    user: req.user,
    conversation: req.conversationId !== null ? { id: req.conversationId } : null,
  };
}

/** `text.format` json_schema is echoed with every field the spec requires (`description`, `strict`). */
function echoText(text: TextConfig): TextConfig {
  const format = text.format;
  if (format.type !== 'json_schema') return text;
  return { ...text, format: { type: 'json_schema', name: format.name, description: format.description ?? null, schema: format.schema, strict: format.strict ?? false } };
}
