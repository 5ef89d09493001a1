// The Messages stream encoder and fold without a port: Responses events in, Messages events out,
// checked against the stream invariants, with the cases a scripted upstream rarely produces.
import type Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { MessageFold } from '../../src/messages/fold.js';
import { MessagesStreamEncoder } from '../../src/messages/stream-encoder.js';
import type { MessageObject, MessagesStreamEvent } from '../../src/protocol/messages.js';
import { checkMessagesStream } from '../helpers/messages-stream.js';

type Ev = [string, Record<string, unknown>];

// Our wire types checked against the official SDK's (beta: it knows the MCP blocks): these only compile if they fit.
const asSdkMessage = (message: MessageObject): Anthropic.Beta.BetaMessage => message;
const asSdkDelta = (event: Extract<MessagesStreamEvent, { type: 'content_block_delta' }>): Anthropic.RawContentBlockDeltaEvent => event;
const asSdkMessageDelta = (event: Extract<MessagesStreamEvent, { type: 'message_delta' }>): Anthropic.RawMessageDeltaEvent => event;

function encode(events: Ev[], failureStatus?: number): { out: MessagesStreamEvent[]; message: ReturnType<MessageFold['push']> | any; fold: MessageFold } {
  const out: MessagesStreamEvent[] = [];
  const fold = new MessageFold();
  const encoder = new MessagesStreamEncoder(
    (e) => {
      out.push(e);
      fold.push(e);
    },
    () => failureStatus,
  );
  for (const [type, payload] of events) encoder.push(type, JSON.stringify({ type, ...payload }));
  return { out, message: fold.result, fold };
}

const created: Ev = ['response.created', { response: { id: 'resp_abc', model: 'm', status: 'in_progress', output: [] } }];
const usage = { input_tokens: 100, input_tokens_details: { cached_tokens: 40 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 107 };
const text = (o: number, delta: string): Ev[] => [
  ['response.output_item.added', { output_index: o, item: { type: 'message', id: `msg_${o}`, role: 'assistant', content: [] } }],
  ['response.content_part.added', { output_index: o, content_index: 0, part: { type: 'output_text', text: '' } }],
  ['response.output_text.delta', { output_index: o, content_index: 0, delta }],
  ['response.content_part.done', { output_index: o, content_index: 0 }],
  ['response.output_item.done', { output_index: o, item: { type: 'message' } }],
];
const done = (status: string, output: unknown[], extra: Record<string, unknown> = {}): Ev => [`response.${status === 'completed' ? 'completed' : status}`, { response: { id: 'resp_abc', status, output, usage, ...extra } }];

describe('MessagesStreamEncoder', () => {
  it("reads the run's Response as it stands instead of parsing it back from a lifecycle event, and parses no event it has no use for", () => {
    const failed: Ev = ['response.failed', { response: { id: 'resp_abc', status: 'failed', output: [], error: { code: 'server_error', message: 'upstream went away' } } }];
    for (const events of [[created, ...text(0, 'Hi.'), done('completed', [{ type: 'message' }])], [created, ...text(0, 'Hi.'), failed]]) {
      const { out: expected } = encode(events, 502);
      const out: MessagesStreamEvent[] = [];
      let running: Record<string, unknown> | undefined;
      const encoder = new MessagesStreamEncoder((e) => out.push(e), () => 502, undefined, () => running as any);
      for (const [type, payload] of events) {
        if (type === 'response.created' || type === 'response.completed' || type === 'response.failed') {
          // the run made no JSON for these (RunHooks.readsResponse): the Response itself is read
          running = payload.response as Record<string, unknown>;
          encoder.push(type, `{"type":"${type}","sequence_number":0}`);
        } else encoder.push(type, JSON.stringify({ type, ...payload }));
        if (type === 'response.created') encoder.push('response.in_progress', 'not JSON: never parsed');
      }
      expect(out).toEqual(expected);
    }
  });

  it('text, a client call, text again: three contiguous blocks, tool_use last wins stop_reason', () => {
    const { out, message } = encode([
      created,
      ...text(0, 'Let me check.'),
      ['response.output_item.added', { output_index: 1, item: { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '' } }],
      ['response.function_call_arguments.delta', { output_index: 1, delta: '{"a":' }],
      ['response.function_call_arguments.delta', { output_index: 1, delta: '1}' }],
      ['response.output_item.done', { output_index: 1, item: { type: 'function_call' } }],
      ...text(2, 'Sent.'),
      done('completed', [{ type: 'message' }, { type: 'function_call' }, { type: 'message' }]),
    ]);
    expect(checkMessagesStream(out as any)).toEqual([]);
    expect(asSdkMessage(message).id).toBe('msg_abc');
    expect(out.flatMap((e) => (e.type === 'content_block_delta' ? [asSdkDelta(e).delta.type] : e.type === 'message_delta' ? [asSdkMessageDelta(e).type] : []))).toEqual([
      'text_delta',
      'input_json_delta',
      'input_json_delta',
      'text_delta',
      'message_delta',
    ]);
    expect(message.content).toEqual([
      { type: 'text', text: 'Let me check.', citations: null },
      { type: 'tool_use', id: 'toolu_call_1', name: 'f', input: { a: 1 }, caller: { type: 'direct' } },
      { type: 'text', text: 'Sent.', citations: null },
    ]);
    expect(message.stop_reason).toBe('tool_use');
    // Anthropic's input_tokens leave out cache reads
    expect(message.usage).toMatchObject({ input_tokens: 60, cache_read_input_tokens: 40, output_tokens: 7 });
  });

  it('a source that resumes after another block opens a fresh block instead of interleaving', () => {
    const { out, message } = encode([
      created,
      ['response.output_item.added', { output_index: 0, item: { type: 'message' } }],
      ['response.content_part.added', { output_index: 0, content_index: 0, part: { type: 'output_text' } }],
      ['response.output_text.delta', { output_index: 0, content_index: 0, delta: 'a' }],
      ['response.output_item.added', { output_index: 1, item: { type: 'reasoning' } }],
      ['response.reasoning_text.delta', { output_index: 1, delta: 'hmm' }],
      ['response.output_text.delta', { output_index: 0, content_index: 0, delta: 'b' }],
      ['response.output_item.done', { output_index: 1, item: { type: 'reasoning' } }],
      ['response.content_part.done', { output_index: 0, content_index: 0 }],
      done('completed', []),
    ]);
    expect(checkMessagesStream(out as any)).toEqual([]);
    expect(message.content.map((b: any) => b.type)).toEqual(['text', 'thinking', 'text']);
    // cut short by the text, the thinking block still ends with its signature
    expect(message.content[1]).toEqual({ type: 'thinking', thinking: 'hmm', signature: expect.stringMatching(/.+/) });
  });

  it('round cap → pause_turn, token cap → max_tokens, content filter → refusal', () => {
    for (const [reason, stop] of [['max_tool_rounds', 'pause_turn'], ['max_tool_calls', 'pause_turn'], ['max_output_tokens', 'max_tokens'], ['content_filter', 'refusal']]) {
      const { out, message } = encode([created, ...text(0, 'x'), done('incomplete', [], { incomplete_details: { reason } })]);
      expect(checkMessagesStream(out as any)).toEqual([]);
      expect(message.stop_reason).toBe(stop);
    }
  });

  it('a failed turn is one error event, with nothing after it', () => {
    const { out, fold } = encode([created, ...text(0, 'partial'), done('failed', [], { error: { code: 'server_error', message: 'upstream broke' } }), done('completed', [])]);
    expect(checkMessagesStream(out as any)).toEqual([]);
    expect(out.at(-1)).toEqual({ type: 'error', error: { type: 'api_error', message: 'upstream broke' } });
    expect(fold.error).toEqual({ type: 'api_error', message: 'upstream broke' });
    // the failure's status picks the type: an overloaded upstream (503) is overloaded_error
    const overloaded = encode([created, done('failed', [], { error: { code: 'server_error', message: 'busy' } })], 503);
    expect(overloaded.out.at(-1)).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'busy' } });
  });

  it('an mcp_call: mcp_tool_use once its arguments are complete, the result when it is done', () => {
    const { out, message } = encode([
      created,
      ['response.output_item.added', { output_index: 0, item: { type: 'mcp_call', id: 'mcp_9', server_label: 's', name: 'echo', arguments: '' } }],
      ['response.mcp_call.in_progress', { output_index: 0 }],
      ['response.mcp_call_arguments.done', { output_index: 0, arguments: '{"m":"x"}' }],
      ['response.output_item.done', { output_index: 0, item: { type: 'mcp_call', status: 'failed', error: 'boom', output: null } }],
      done('incomplete', [], { incomplete_details: { reason: 'max_tool_rounds' } }),
    ]);
    expect(checkMessagesStream(out as any)).toEqual([]);
    expect(message.content).toEqual([
      { type: 'mcp_tool_use', id: 'mcptoolu_9', name: 'echo', server_name: 's', input: { m: 'x' } },
      { type: 'mcp_tool_result', tool_use_id: 'mcptoolu_9', is_error: true, content: [{ type: 'text', text: 'boom', citations: null }] },
    ]);
  });
});

describe('MessagesStreamEncoder fed by the engine', () => {
  it("reads a token's delta from its head and text: the same Messages events as parsing its JSON back", async () => {
    const { ResponseAccumulator } = await import('../../src/engine/accumulator.js');
    const { FunctionCallStream, MessageStream, ReasoningStream } = await import('../../src/engine/item-streams.js');
    type Sunk = [string, string, Parameters<MessagesStreamEncoder['push']>[2], string | undefined];
    const sunk: Sunk[] = [];
    const response = { id: 'resp_abc', object: 'response', model: 'm', status: 'in_progress', output: [], tools: [] };
    const acc = new ResponseAccumulator(response as never, (type, json, head, delta) => sunk.push([type, json, head, delta]));
    acc.start();
    const reasoning = new ReasoningStream(acc);
    for (const delta of ['Let', ' me "think"']) reasoning.push(delta);
    reasoning.finish();
    const message = new MessageStream(acc);
    for (const delta of ['Hello', ', wörld\n', '🙂']) message.pushText(delta);
    message.pushRefusal('no');
    message.finish();
    const call = new FunctionCallStream(acc, 'call_1', { identity: { name: 'lookup' } } as never);
    for (const delta of ['{"q":', '"x"}']) call.push(delta);
    call.finish();
    acc.settle({ status: 'completed' }, 1);
    acc.announceTerminal();

    const run = (withHeads: boolean): MessagesStreamEvent[] => {
      const out: MessagesStreamEvent[] = [];
      const encoder = new MessagesStreamEncoder((event) => out.push(structuredClone(event)));
      for (const [type, json, head, delta] of sunk) (withHeads ? encoder.push(type, json, head, delta) : encoder.push(type, json));
      return out;
    };
    const read = run(true);
    expect(read).toEqual(run(false));
    expect(sunk.filter(([, , head]) => head !== undefined)).toHaveLength(8);
    expect(checkMessagesStream(read as any)).toEqual([]);
    const deltas = read.flatMap((e) => (e.type === 'content_block_delta' ? [JSON.stringify(e.delta)] : []));
    expect(deltas).toEqual(expect.arrayContaining([JSON.stringify({ type: 'thinking_delta', thinking: ' me "think"' }), JSON.stringify({ type: 'text_delta', text: ', wörld\n' }), JSON.stringify({ type: 'text_delta', text: 'no' })]));
    expect(deltas.filter((d) => d.includes('input_json_delta'))).not.toHaveLength(0);
    // what the route writes for each event the encoder makes is exactly its JSON
    const { messagesEventJson } = await import('../../src/messages/event-json.js');
    for (const event of read) expect(messagesEventJson(event)).toBe(JSON.stringify(event));
  });
});
