// The held history of a previous_response_id chain (src/engine/held-history.ts): made once per
// chain tip from its parent's, its model items must be exactly what converting the whole chain
// gives — and absent wherever a turn's tools or later items could change them.
import { describe, expect, it } from 'vitest';
import { heldHistory } from '../../src/engine/held-history.js';
import { toModelItems } from '../../src/engine/conversation.js';
import type { Item } from '../../src/protocol/responses.js';
import type { StoredResponse } from '../../src/store/store.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { deepFreeze } from '../../src/util/freeze.js';

let next = 0;
const id = (prefix: string) => `${prefix}_${++next}`;
const user = (text: string): Item => ({ id: id('msg'), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] });
const assistant = (text: string): Item => ({ id: id('msg'), type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] });

/** A stored record as the chain cache holds it: frozen. */
function record(input: Item[], output: Item[], frozen = true): StoredResponse {
  const value = { response: { id: id('resp'), status: 'completed', output } as never, inputItems: input };
  return frozen ? deepFreeze(value) : value;
}

/** A conversation of `turns` turns; every third one a client function call and its output. */
function chain(turns: number): StoredResponse[] {
  const records: StoredResponse[] = [];
  for (let i = 0; i < turns; i++) {
    if (i % 3 === 1) records.push(record([user(`q${i}`)], [{ id: id('fc'), type: 'function_call', call_id: `call_${i}`, name: 'f', arguments: `{"i":${i}}`, status: 'completed' } as Item]));
    else if (i % 3 === 2) records.push(record([{ id: id('fco'), type: 'function_call_output', call_id: `call_${i - 1}`, output: `r${i}` } as Item], [assistant(`a${i}`)]));
    else records.push(record([user(`q${i}`)], [{ id: id('rs'), type: 'reasoning', summary: [{ type: 'summary_text', text: `thought ${i}` }] } as Item, assistant(`a${i}`)]));
  }
  return records;
}

const itemsOf = (records: readonly StoredResponse[]) => records.flatMap((r) => [...r.inputItems, ...r.response.output]);

describe('heldHistory', () => {
  it('a chain extended turn by turn holds the items and model items a whole conversion gives, sharing the frozen ones', () => {
    const records = chain(30);
    let previous: ReturnType<typeof heldHistory> | undefined;
    for (let n = 1; n <= records.length; n++) {
      const held = heldHistory(records.slice(0, n));
      expect(held.items).toEqual(itemsOf(records.slice(0, n)));
      expect(held.model?.items).toEqual(toModelItems(itemsOf(records.slice(0, n)), new ToolRegistry()));
      expect(held.model?.remoteImages).toBe(false);
      // made from the parent's: the parent's model items are the same objects
      if (previous) previous.model!.items.forEach((item, i) => expect(held.model!.items[i]).toBe(item));
      previous = held;
    }
    // the same chain again (a new array, the same records) is the same held history
    expect(heldHistory([...records])).toBe(previous);
    // one held history per conversation, its newest: continued again from an earlier response
    // (a regenerated answer), the chain's is built anew, and is the same
    const earlier = records.slice(0, 20);
    const again = heldHistory(earlier);
    expect(again.model?.items).toEqual(toModelItems(itemsOf(earlier), new ToolRegistry()));
    expect(heldHistory(earlier)).toBe(again);
  });

  it('a remote image is noted, a data URL is not', () => {
    const base = chain(2);
    const image = (url: string) => record([{ id: id('msg'), type: 'message', role: 'user', content: [{ type: 'input_image', image_url: url, detail: 'auto' }] } as Item], [assistant('a cat')]);
    expect(heldHistory([...base, image('data:image/png;base64,AAAA')]).model?.remoteImages).toBe(false);
    const remote = [...base, image('https://example.com/cat.png')];
    expect(heldHistory(remote).model?.remoteImages).toBe(true);
    // and stays noted as the chain goes on
    expect(heldHistory([...remote, ...chain(1)]).model?.remoteImages).toBe(true);
  });

  it('no model items where the turn could change them: a namespaced call, a gateway call, an approval, a compaction', () => {
    const others: Item[] = [
      { id: id('fc'), type: 'function_call', call_id: 'call_ns', name: 'list', namespace: 'files', arguments: '{}', status: 'completed' } as Item,
      { id: id('ws'), type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'q' } } as Item,
      { id: id('mcpr'), type: 'mcp_approval_request', server_label: 's', name: 't', arguments: '{}' } as Item,
      { id: id('cmp'), type: 'compaction', encrypted_content: 'abc' } as Item,
    ];
    for (const other of others) {
      const records = [...chain(3), record([user('q')], [other])];
      const held = heldHistory(records);
      expect(held.items).toEqual(itemsOf(records));
      expect(held.model).toBeUndefined();
      // nor for the turns after it
      expect(heldHistory([...records, ...chain(1)]).model).toBeUndefined();
    }
  });

  it('a chain that is not held (records not frozen) is converted every time, never kept', () => {
    const records = chain(4).map((r) => record([...r.inputItems], [...r.response.output], false));
    const first = heldHistory(records);
    expect(first.model?.items).toEqual(toModelItems(itemsOf(records), new ToolRegistry()));
    expect(heldHistory(records)).not.toBe(first);
  });
});
