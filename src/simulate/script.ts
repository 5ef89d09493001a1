// The simulator's script: discovery and parsing (types in script-types.ts, request normalisation
// in sim-request.ts, the round planner in planner.ts).
// Pure: no I/O, no clock, no randomness. The format is documented in ./README.md.
//
// Both endpoints (/v1/chat/completions and vLLM's /v1/responses) are normalised into one
// `SimRequest` (a flat list of role + text messages), so there is exactly one planner. The
// planner turns the request into a `RoundPlan`: the pieces ("tokens") to stream, the finish
// reason, the usage and the failure/timing controls. The encoders in chat-stream.ts and
// responses-stream.ts turn a plan into wire chunks; server.ts owns sockets, timers and the
// `fail_times` counters.

import { isObj, type Script, type ScriptStep, type SimMessage } from './script-types.js';

export const SCRIPT_PREFIX = '#sim ';

// ---------------------------------------------------------------------------------------------
// Script discovery and parsing

const SCRIPT_ROLES = new Set(['system', 'developer', 'user']);
const SIM_LINE = /^[ \t]*#sim (.*)$/gm;

/** The JSON source of the conversation's script: the last `#sim ` line of any system/developer/user message. */
export function findScriptSource(messages: SimMessage[]): string | null {
  let found: string | null = null;
  for (const m of messages) {
    if (!SCRIPT_ROLES.has(m.role) || !m.text.includes('#sim ')) continue;
    for (const match of m.text.matchAll(SIM_LINE)) found = match[1]!.trim();
  }
  return found;
}

/** Removes `#sim` lines, so the default behaviour does not echo the script. */
export function stripScriptLines(text: string): string {
  return text.includes('#sim ') ? text.replace(SIM_LINE, '').trim() : text.trim();
}

const STEP_KEYS = new Set([
  'text', 'reasoning', 'reasoning_field', 'refusal', 'tool_calls', 'chunks', 'chunk_size', 'tool_call_style',
  'finish_reason', 'usage', 'status', 'error', 'fail_times', 'hang', 'hang_after_chunks', 'close_after_chunks',
  'error_after_chunks', 'delay_ms', 'first_delay_ms', 'empty_deltas',
]);

function checkStep(step: unknown, i: number): string | null {
  const at = `rounds[${i}]`;
  if (!isObj(step)) return `${at} must be an object`;
  for (const k of Object.keys(step)) if (!STEP_KEYS.has(k)) return `${at}: unknown field "${k}"`;
  for (const k of ['text', 'reasoning', 'refusal', 'error'] as const) {
    if (step[k] !== undefined && typeof step[k] !== 'string') return `${at}.${k} must be a string`;
  }
  for (const k of ['chunks', 'chunk_size', 'status', 'fail_times', 'hang_after_chunks', 'close_after_chunks',
    'error_after_chunks', 'delay_ms', 'first_delay_ms'] as const) {
    const v = step[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0)) return `${at}.${k} must be a number >= 0`;
  }
  if (step.reasoning_field !== undefined && step.reasoning_field !== 'reasoning' && step.reasoning_field !== 'reasoning_content') {
    return `${at}.reasoning_field must be "reasoning" or "reasoning_content"`;
  }
  if (step.tool_call_style !== undefined && !['vllm', 'whole', 'interleaved'].includes(step.tool_call_style)) {
    return `${at}.tool_call_style must be "vllm", "whole" or "interleaved"`;
  }
  if (step.finish_reason !== undefined && !['stop', 'length', 'tool_calls', 'content_filter'].includes(step.finish_reason)) {
    return `${at}.finish_reason must be stop, length, tool_calls or content_filter`;
  }
  if (step.usage !== undefined && !isObj(step.usage)) return `${at}.usage must be an object`;
  if (step.tool_calls !== undefined) {
    if (!Array.isArray(step.tool_calls)) return `${at}.tool_calls must be an array`;
    for (const [j, c] of step.tool_calls.entries()) {
      if (!isObj(c) || typeof c.name !== 'string') return `${at}.tool_calls[${j}].name must be a string`;
      if (c.id !== undefined && typeof c.id !== 'string') return `${at}.tool_calls[${j}].id must be a string`;
    }
  }
  return null;
}

/** Parses and checks a script's JSON; returns an error message when it is not a valid script. */
export function parseScript(source: string): Script | string {
  let raw: unknown;
  try {
    raw = JSON.parse(source);
  } catch (e) {
    return `invalid #sim script: ${(e as Error).message}`;
  }
  if (!isObj(raw) || !Array.isArray(raw.rounds)) return 'invalid #sim script: expected {"rounds": [...]}';
  for (const [i, step] of raw.rounds.entries()) {
    const problem = checkStep(step, i);
    if (problem) return `invalid #sim script: ${problem}`;
  }
  const when: NonNullable<Script['when']> = [];
  if (raw.when !== undefined) {
    if (!Array.isArray(raw.when)) return 'invalid #sim script: when must be an array';
    for (const [i, alternative] of raw.when.entries()) {
      const contains = isObj(alternative) ? [alternative.user_contains, alternative.any_contains].filter((c) => c !== undefined) : [];
      if (!isObj(alternative) || contains.length !== 1 || typeof contains[0] !== 'string' || !Array.isArray(alternative.rounds)) {
        return `invalid #sim script: when[${i}] must be {"user_contains" or "any_contains": string, "rounds": [...]}`;
      }
      for (const [j, step] of alternative.rounds.entries()) {
        const problem = checkStep(step, j);
        if (problem) return `invalid #sim script: when[${i}].${problem}`;
      }
      when.push({ user_contains: alternative.user_contains as string | undefined, any_contains: alternative.any_contains as string | undefined, rounds: alternative.rounds as ScriptStep[] });
    }
  }
  return { rounds: raw.rounds as ScriptStep[], repeat_last: raw.repeat_last === true, when };
}

/** Round index = assistant messages after the last user message (all of them if there is none). */
export function roundIndexOf(messages: SimMessage[]): number {
  let n = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const role = messages[i]!.role;
    if (role === 'user') break;
    if (role === 'assistant') n++;
  }
  return n;
}
