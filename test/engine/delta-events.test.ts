import { describe, expect, it } from 'vitest';
import { deltaHead, ResponseAccumulator } from '../../src/engine/accumulator.js';
import type { ResponseObject } from '../../src/protocol/responses.js';

// Delta events are serialised from a head built once per item (one per token on a real stream);
// they must be exactly the JSON the generic path gives for the same payload object.

const DELTAS = ['hello', ' "quoted" \\ back', 'line\nbreak\ttab', 'ünïcödé 😀', '\u2028\u2029', '', '\u0000\u001f', '</script>'];

function events(emitAll: (acc: ResponseAccumulator) => void): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const acc = new ResponseAccumulator({ id: 'resp_1', output: [] } as unknown as ResponseObject, (type, json) => out.push([type, json]));
  emitAll(acc);
  return out;
}

describe('delta events from a kept head', () => {
  it('are byte for byte the JSON of the payload object, with and without a content index and a tail', () => {
    for (const delta of DELTAS) {
      const kept = events((acc) => {
        acc.emitDelta('response.output_text.delta', deltaHead('msg_"x"', 3, 1), delta, ',"logprobs":[]');
        acc.emitDelta('response.function_call_arguments.delta', deltaHead('fc_1', 0), delta);
      });
      const generic = events((acc) => {
        acc.emit('response.output_text.delta', { item_id: 'msg_"x"', output_index: 3, content_index: 1, delta, logprobs: [] });
        acc.emit('response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 0, delta });
      });
      expect(kept).toEqual(generic);
      for (const [, json] of kept) expect(JSON.parse(json).delta).toBe(delta);
    }
  });

  it('count in the sequence without a sink (a blocking response) and build nothing', () => {
    const acc = new ResponseAccumulator({ id: 'resp_1', output: [] } as unknown as ResponseObject, null);
    acc.emitDelta('response.output_text.delta', deltaHead('msg_1', 0, 0), 'a');
    acc.emitDelta('response.output_text.delta', deltaHead('msg_1', 0, 0), 'b');
    const seen: string[] = [];
    const after = new ResponseAccumulator({ id: 'resp_2', output: [] } as unknown as ResponseObject, (_type, json) => seen.push(json));
    after.emitDelta('response.output_text.delta', deltaHead('msg_1', 0, 0), 'a');
    after.emit('response.output_text.done', { item_id: 'msg_1' });
    expect(acc.started).toBe(true);
    expect(seen.map((json) => JSON.parse(json).sequence_number)).toEqual([0, 1]);
  });
});
