/**
 * Invariants of an Anthropic Messages event stream (docs/reference/anthropic-messages.md §6), as
 * the SDK's `MessageStream` relies on them. `checkMessagesStream` returns the violations (empty =
 * the stream is well-formed), so a failing test shows all of them at once.
 */

export interface SseFrame {
  /** The `event:` line (undefined when missing — the SDK would skip such a message). */
  event: string | undefined;
  data: Record<string, any>;
}

const DELTA_BLOCKS: Record<string, string[]> = {
  text_delta: ['text'],
  citations_delta: ['text'],
  input_json_delta: ['tool_use', 'server_tool_use', 'mcp_tool_use'],
  thinking_delta: ['thinking'],
  signature_delta: ['thinking'],
};
const STOP_REASONS = new Set(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'pause_turn', 'refusal']);

/** Parses a raw SSE body into frames (event line + parsed data), keeping comments out. */
export function parseSseFrames(text: string): SseFrame[] {
  const frames: SseFrame[] = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter((l) => l.length > 0 && !l.startsWith(':'));
    if (lines.length === 0) continue;
    const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
    const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
    frames.push({ event, data: JSON.parse(data) });
  }
  return frames;
}

/** Violations of the Messages stream invariants; frames without `event` are given as events (SDK-parsed). */
export function checkMessagesStream(input: Array<SseFrame | Record<string, any>>): string[] {
  const problems: string[] = [];
  const frames: SseFrame[] = input.map((f) => ('data' in f && typeof f.data === 'object' && 'event' in f ? (f as SseFrame) : { event: (f as any).type, data: f as Record<string, any> }));
  const events = frames.filter((f) => f.data.type !== 'ping');
  frames.forEach((f, i) => {
    if (f.event === undefined) problems.push(`frame ${i}: no event: line`);
    else if (f.event !== f.data.type) problems.push(`frame ${i}: event line '${f.event}' but data type '${f.data.type}'`);
  });
  if (events.length === 0) return [...problems, 'no events'];
  if (events[0].data.type !== 'message_start') problems.push(`first event is ${events[0].data.type}, not message_start`);
  const starts = events.filter((e) => e.data.type === 'message_start').length;
  if (starts !== 1) problems.push(`${starts} message_start events`);
  const last = events.at(-1)!.data.type;
  if (last !== 'message_stop' && last !== 'error') problems.push(`stream ends with ${last}, not message_stop or error`);
  const stops = events.filter((e) => e.data.type === 'message_stop').length;
  if (stops > 1) problems.push(`${stops} message_stop events`);
  const errorAt = events.findIndex((e) => e.data.type === 'error');
  if (errorAt !== -1 && errorAt !== events.length - 1) problems.push('events after an error event');
  if (errorAt !== -1 && stops > 0) problems.push('both error and message_stop');

  let started = 0;
  let open: { index: number; type: string; json: string; sawSignature: boolean } | null = null;
  let sawMessageDelta = false;
  events.forEach(({ data: e }, i) => {
    const at = `event ${i} (${e.type})`;
    switch (e.type) {
      case 'content_block_start':
        if (sawMessageDelta) problems.push(`${at}: block after message_delta`);
        if (open) problems.push(`${at}: block ${e.index} starts while block ${open.index} is open`);
        if (e.index !== started) problems.push(`${at}: index ${e.index}, expected ${started}`);
        started++;
        open = { index: e.index, type: e.content_block?.type, json: '', sawSignature: false };
        if (['tool_use', 'server_tool_use', 'mcp_tool_use'].includes(open.type) && JSON.stringify(e.content_block.input) !== '{}') problems.push(`${at}: ${open.type} starts with a non-empty input`);
        if (open.type === 'tool_use' && !/^toolu_/.test(e.content_block.id)) problems.push(`${at}: tool_use id ${e.content_block.id} lacks toolu_`);
        break;
      case 'content_block_delta': {
        if (!open || open.index !== e.index) {
          problems.push(`${at}: delta for block ${e.index}, open is ${open?.index ?? 'none'}`);
          break;
        }
        const allowed = DELTA_BLOCKS[e.delta?.type];
        if (!allowed) problems.push(`${at}: unknown delta type ${e.delta?.type}`);
        else if (!allowed.includes(open.type)) problems.push(`${at}: ${e.delta.type} on a ${open.type} block`);
        if (open.sawSignature) problems.push(`${at}: delta after signature_delta`);
        if (e.delta?.type === 'input_json_delta') open.json += e.delta.partial_json;
        if (e.delta?.type === 'signature_delta') open.sawSignature = true;
        break;
      }
      case 'content_block_stop':
        if (!open || open.index !== e.index) problems.push(`${at}: stop for block ${e.index}, open is ${open?.index ?? 'none'}`);
        else {
          if (open.json) {
            try {
              const parsed = JSON.parse(open.json);
              if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) problems.push(`${at}: input is not an object`);
            } catch {
              problems.push(`${at}: input_json_delta fragments are not JSON: ${open.json}`);
            }
          }
          if (open.type === 'thinking' && !open.sawSignature) problems.push(`${at}: thinking block stops without signature_delta`);
        }
        open = null;
        break;
      case 'message_delta':
        if (open) problems.push(`${at}: block ${open.index} still open`);
        if (sawMessageDelta) problems.push(`${at}: second message_delta`);
        sawMessageDelta = true;
        if (!STOP_REASONS.has(e.delta?.stop_reason)) problems.push(`${at}: stop_reason ${e.delta?.stop_reason}`);
        if (typeof e.usage?.output_tokens !== 'number') problems.push(`${at}: usage.output_tokens missing`);
        break;
      case 'message_stop':
        if (!sawMessageDelta) problems.push(`${at}: message_stop without message_delta`);
        break;
    }
  });
  if (last === 'message_stop' && open) problems.push('a block is still open at message_stop');
  return problems;
}
