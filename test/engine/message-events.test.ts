import { describe, expect, it } from 'vitest';
import { deltaHead, ResponseAccumulator } from '../../src/engine/accumulator.js';
import { MessageStream } from '../../src/engine/item-streams.js';
import type { OutputMessageItem, OutputTextPart, RefusalPart, ResponseObject } from '../../src/protocol/responses.js';

// A streamed message's item events (output_item.added/done, content_part.added/done,
// output_text.done, refusal.done) are written from their fixed text, a part's text serialised
// once: they must be byte for byte what `JSON.stringify` of each payload object gives at the
// moment of the event — the generic path (`emit`), replayed here step by step.

type Op = ['text', string] | ['refusal', string] | ['finish', 'completed' | 'incomplete'];

const TRICKY = ['hello', ' "quoted" \\ back', 'line\nbreak\ttab', 'ünïcödé 😀', '\u2028\u2029', '', '\u0000\u001f', '</script>', '\ud800 lone', 'x'.repeat(70) + '"', 'é'.repeat(5000)];

const newResponse = () => ({ id: 'resp_1', output: [] }) as unknown as ResponseObject;

/** The events of `ops` through `MessageStream`, and the message's id. */
function streamed(ops: Op[]): { events: Array<[string, string]>; id: string } {
  const events: Array<[string, string]> = [];
  const acc = new ResponseAccumulator(newResponse(), (type, json) => events.push([type, json]));
  const message = new MessageStream(acc);
  for (const [kind, value] of ops) {
    if (kind === 'text') message.pushText(value);
    else if (kind === 'refusal') message.pushRefusal(value);
    else message.finish(value);
  }
  return { events, id: JSON.parse(events[0][1]).item.id };
}

/** The same operations as payload objects through the generic `emit`, serialised when each event happens. */
function generic(ops: Op[], id: string): Array<[string, string]> {
  const events: Array<[string, string]> = [];
  const acc = new ResponseAccumulator(newResponse(), (type, json) => events.push([type, json]));
  const item: OutputMessageItem = { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] };
  const outputIndex = acc.addItem(item);
  // the open part, in an object: the closures below change it
  const state: { part: OutputTextPart | RefusalPart | null } = { part: null };
  const close = () => {
    const part = state.part;
    if (part === null) return;
    const fields = { item_id: id, output_index: outputIndex, content_index: item.content.length - 1 };
    if (part.type === 'output_text') acc.emit('response.output_text.done', { ...fields, text: part.text, logprobs: [] });
    else acc.emit('response.refusal.done', { ...fields, refusal: part.refusal });
    acc.emit('response.content_part.done', { ...fields, part });
    state.part = null;
  };
  const open = (next: OutputTextPart | RefusalPart) => {
    close();
    item.content.push(next);
    state.part = next;
    const announced = next.type === 'output_text' ? { type: 'output_text', text: '', annotations: [], logprobs: [] } : { type: 'refusal', refusal: '' };
    acc.emit('response.content_part.added', { item_id: id, output_index: outputIndex, content_index: item.content.length - 1, part: announced });
  };
  for (const [kind, value] of ops) {
    if (kind === 'text') {
      if (state.part?.type !== 'output_text') open({ type: 'output_text', text: '', annotations: [], logprobs: [] });
      (state.part as OutputTextPart).text += value;
      acc.emitDelta('response.output_text.delta', deltaHead(id, outputIndex, item.content.length - 1), value, ',"logprobs":[]');
    } else if (kind === 'refusal') {
      if (state.part?.type !== 'refusal') open({ type: 'refusal', refusal: '' });
      (state.part as RefusalPart).refusal += value;
      acc.emitDelta('response.refusal.delta', deltaHead(id, outputIndex, item.content.length - 1), value);
    } else {
      close();
      item.status = value;
      acc.doneItem(outputIndex, item);
    }
  }
  return events;
}

function expectSame(ops: Op[]): void {
  const { events, id } = streamed(ops);
  expect(events).toEqual(generic(ops, id));
}

describe('a streamed message’s item events', () => {
  it('are byte for byte the JSON of their payload objects, for any text', () => {
    for (const text of TRICKY) {
      expectSame([['text', text], ['finish', 'completed']]);
      expectSame([['text', 'a'], ['text', text], ['text', text], ['finish', 'incomplete']]);
      expectSame([['refusal', text], ['finish', 'completed']]);
    }
  });

  it('with several parts: text, refusal, text again, and a message finished without any part', () => {
    expectSame([['text', 'Sure: "x"'], ['refusal', 'but not \\that'], ['text', '\u2028again'], ['finish', 'completed']]);
    expectSame([['finish', 'completed']]);
  });

  it('without a sink (a blocking response) leave the same item, nothing serialised', () => {
    const acc = new ResponseAccumulator(newResponse(), null);
    const message = new MessageStream(acc);
    message.pushText('a');
    message.pushRefusal('b');
    message.finish();
    const { events } = streamed([['text', 'a'], ['refusal', 'b'], ['finish', 'completed']]);
    const streamedItem = JSON.parse(events.at(-1)![1]).item;
    expect(acc.response.output).toEqual([{ ...streamedItem, id: (acc.response.output[0] as { id: string }).id }]);
  });
});
