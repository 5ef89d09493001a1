// The held history of a previous_response_id chain (src/engine/held-history.ts): made once per
// chain tip from its parent's, its model items must be exactly what converting the whole chain
// gives — and absent wherever a turn's tools or later items could change them.
import { describe, expect, it } from 'vitest';
import { heldHistory, mayJoinRound, namesHold } from '../../src/engine/held-history.js';
import { replayStateFor, toModelItems } from '../../src/engine/conversation.js';
import type { Item } from '../../src/protocol/responses.js';
import type { GatewayCallRecord, StoredResponse } from '../../src/store/store.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import type { RegistryEntry } from '../../src/tools/types.js';
import { deepFreeze } from '../../src/util/freeze.js';

let next = 0;
const id = (prefix: string) => `${prefix}_${++next}`;
const user = (text: string): Item => ({ id: id('msg'), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] });
const assistant = (text: string): Item => ({ id: id('msg'), type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] });

/** A stored record as the chain cache holds it: frozen. */
function record(input: Item[], output: Item[], frozen = true, callRecords?: GatewayCallRecord[]): StoredResponse {
  const value: StoredResponse = { response: { id: id('resp'), status: 'completed', output } as never, inputItems: input, ...(callRecords?.length ? { callRecords } : {}) };
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

const callRecord = (itemId: string, round: string): GatewayCallRecord => ({ itemId, callId: `call_${itemId}`, name: 'web_search', arguments: `{"query":"${itemId}"}`, output: `results of ${itemId}`, round });

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

  it('no model items where the turn could change them: a gateway call without its record, a tool search, a compaction', () => {
    const others: Array<[Item, GatewayCallRecord[]]> = [
      [{ id: id('ws'), type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'q' } } as Item, []],
      [{ id: id('tsc'), type: 'tool_search_call', call_id: 'call_ts', execution: 'client', arguments: {}, status: 'completed' } as Item, []],
      [{ id: id('cmp'), type: 'compaction', encrypted_content: 'abc' } as Item, []],
    ];
    for (const [other, callRecords] of others) {
      const records = [...chain(3), record([user('q')], [other], true, callRecords)];
      const held = heldHistory(records);
      expect(held.items).toEqual(itemsOf(records));
      expect(held.model).toBeUndefined();
      // nor for the turns after it
      expect(heldHistory([...records, ...chain(1)]).model).toBeUndefined();
    }
  });

  it('gateway calls with their records, MCP listings and namespaced calls are held: exactly what a whole conversion with the records gives', () => {
    const records: StoredResponse[] = [];
    const allRecords: GatewayCallRecord[] = [];
    for (let i = 0; i < 24; i++) {
      if (i % 4 === 0) {
        // one round of two searches, then the answer
        const [a, b] = [id('ws'), id('ws')];
        const round = [callRecord(a, `round_${i}`), callRecord(b, `round_${i}`)];
        allRecords.push(...round);
        const search = (itemId: string) => ({ id: itemId, type: 'web_search_call', status: 'completed', action: { type: 'search', query: itemId } }) as Item;
        records.push(record([user(`q${i}`)], [search(a), search(b), assistant(`a${i}`)], true, round));
      } else if (i % 4 === 1) {
        const listing = { id: id('mcpl'), type: 'mcp_list_tools', server_label: 'docs', tools: [] } as Item;
        const mcp = { id: id('mcp'), type: 'mcp_call', server_label: 'docs', name: 'read', arguments: '{}', output: 'text' } as Item;
        const recordOfCall = callRecord(mcp.id, `round_${i}`);
        allRecords.push(recordOfCall);
        records.push(record([user(`q${i}`)], [listing, mcp, assistant(`a${i}`)], true, [recordOfCall]));
      } else if (i % 4 === 2) {
        records.push(record([user(`q${i}`)], [{ id: id('fc'), type: 'function_call', call_id: `call_${i}`, name: 'list', namespace: 'files', arguments: '{}', status: 'completed' } as Item]));
      } else {
        records.push(record([{ id: id('fco'), type: 'function_call_output', call_id: `call_${i - 1}`, output: `r${i}` } as Item, { id: id('ctc'), type: 'custom_tool_call', call_id: `call_c${i}`, name: 'patch', namespace: 'edit', input: '*** x' } as Item], [assistant(`a${i}`)]));
      }
    }
    let previous: ReturnType<typeof heldHistory> | undefined;
    for (let n = 1; n <= records.length; n++) {
      const held = heldHistory(records.slice(0, n));
      const byItem = new Map(allRecords.map((r) => [r.itemId, r]));
      expect(held.model?.items).toEqual(toModelItems(itemsOf(records.slice(0, n)), new ToolRegistry(), byItem));
      if (previous) previous.model!.items.forEach((item, i) => expect(held.model!.items[i]).toBe(item));
      previous = held;
    }
    // the namespaced tools the held calls name, under their flattened names
    expect([...previous!.model!.namespaced.values()]).toEqual([
      { type: 'function', name: 'list', namespace: 'files', modelName: 'files__list' },
      { type: 'custom', name: 'patch', namespace: 'edit', modelName: 'edit__patch' },
    ]);
    // the same chain read whole (a replica's first read) holds the same
    expect(heldHistory(records.map((r) => deepFreeze(JSON.parse(JSON.stringify(r))))).model?.items).toEqual(previous!.model!.items);
  });

  it('namespaced calls hold while the turn names their tools as held: undeclared, or declared under the flattened name', () => {
    const records = [...chain(2), record([user('q')], [{ id: id('fc'), type: 'function_call', call_id: 'call_ns', name: 'list', namespace: 'files', arguments: '{}', status: 'completed' } as Item])];
    const model = heldHistory(records).model!;
    const declared = (modelName: string, namespace = 'files') => {
      const registry = new ToolRegistry();
      registry.add({ modelName, fn: { name: modelName, parameters: { type: 'object', properties: {} } }, shape: 'function', identity: { type: 'function', name: 'list', namespace }, owner: 'client', declaredAt: 'tools[0]' } as RegistryEntry);
      return registry;
    };
    expect(namesHold(model, new ToolRegistry())).toBe(true);
    expect(namesHold(model, declared('files__list'))).toBe(true);
    expect(namesHold(model, declared('list', 'other'))).toBe(true);
    // the turn declares it under another model-visible name: the whole history is converted again
    expect(namesHold(model, declared('files_list_2'))).toBe(false);
    expect(toModelItems(itemsOf(records), declared('files_list_2')).at(-1)).toMatchObject({ type: 'function_call', name: 'files_list_2' });
  });

  it('a chain that is not held (records not frozen) is converted every time, never kept', () => {
    const records = chain(4).map((r) => record([...r.inputItems], [...r.response.output], false));
    const first = heldHistory(records);
    expect(first.model?.items).toEqual(toModelItems(itemsOf(records), new ToolRegistry()));
    expect(heldHistory(records)).not.toBe(first);
  });

  it('random chains of every item kind: held model items, and the turn after them, are what converting everything in one pass gives', () => {
    let seed = 7;
    const next = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32);
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)];
    let held = 0;
    let approvalsAnswered = 0;
    for (let conversation = 0; conversation < 40; conversation++) {
      const records: StoredResponse[] = [];
      const allRecords = new Map<string, GatewayCallRecord>();
      let openCalls: string[] = [];
      let openApprovals: string[] = [];
      /** The last round of gateway calls, when the last turn ended in it (an incomplete response). */
      let endedInRound: string | undefined;
      for (let turn = 0; turn < 25; turn++) {
        // continuing an incomplete response with no input: its first calls may carry on its last round
        const continuation = endedInRound !== undefined && next() < 0.5;
        const input: Item[] = [];
        const output: Item[] = [];
        const callRecords: GatewayCallRecord[] = [];
        // answers to the last turn's approval requests: an approved call runs in this turn
        for (const approvalId of openApprovals) {
          if (next() < 0.2) continue;
          const approve = next() < 0.7;
          input.push({ id: id('mcpa'), type: 'mcp_approval_response', approval_request_id: approvalId, approve, ...(approve ? {} : { reason: 'not now' }) } as Item);
          if (!approve) continue;
          const call = { id: id('mcp'), type: 'mcp_call', server_label: 'docs', name: 'read', arguments: '{}', output: 'text', approval_request_id: approvalId } as Item;
          output.push(call);
          const made = callRecord(call.id, `round_${turn}_approved`);
          callRecords.push(made);
          allRecords.set(call.id, made);
        }
        openApprovals = [];
        // answers to some of the last turn's client calls, then (mostly) the user's words
        for (const callId of openCalls) if (next() < 0.8) input.push({ id: id('fco'), type: pick(['function_call_output', 'custom_tool_call_output']), call_id: callId, output: `out ${callId}` } as Item);
        if (!continuation && (input.length === 0 || next() < 0.6)) input.push(user(`q${turn}`));
        if (next() < 0.03) input.push({ id: id('cmp'), type: 'compaction', encrypted_content: 'x' } as Item);
        openCalls = [];
        const rounds = continuation ? pick([1, 2]) : pick([0, 0, 1, 2]);
        let round = '';
        for (let r = 0; r < rounds; r++) {
          round = r === 0 && continuation ? endedInRound! : `round_${turn}_${r}`;
          for (let c = pick([1, 1, 2, 3]); c > 0; c--) {
            const kind = pick(['web_search_call', 'mcp_call', 'mcp_call_listed']);
            if (kind === 'mcp_call_listed') output.push({ id: id('mcpl'), type: 'mcp_list_tools', server_label: 'docs', tools: [] } as Item);
            const item = kind === 'web_search_call' ? ({ id: id('ws'), type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'q' } } as Item) : ({ id: id('mcp'), type: 'mcp_call', server_label: 'docs', name: 'read', arguments: '{}', output: 'text' } as Item);
            output.push(item);
            // most calls have their record; some (a store that lost it) do not
            if (next() < 0.98) {
              const made = callRecord(item.id, round);
              callRecords.push(made);
              allRecords.set(item.id, made);
            }
          }
        }
        // a response may end right after its calls (the round cap): the next turn may carry on that round
        const endsInCalls = rounds > 0 && next() < 0.2;
        if (!endsInCalls) {
          if (next() < 0.4) output.push({ id: id('rs'), type: 'reasoning', summary: [{ type: 'summary_text', text: `t${turn}` }] } as Item);
          if (next() < 0.5) output.push(assistant(`a${turn}`));
          for (let c = pick([0, 0, 1, 2]); c > 0; c--) {
            const callId = `call_${turn}_${c}`;
            openCalls.push(callId);
            const namespace = pick([undefined, undefined, 'files', 'edit']);
            output.push({ id: id('fc'), type: pick(['function_call', 'custom_tool_call']), call_id: callId, name: pick(['list', 'patch']), ...(namespace ? { namespace } : {}), arguments: '{}', input: 'x', status: 'completed' } as Item);
          }
          // an MCP call waiting for the client's approval ends the turn
          if (next() < 0.25) {
            const request = { id: id('mcpr'), type: 'mcp_approval_request', server_label: 'docs', name: pick(['read', 'write']), arguments: `{"turn":${turn}}` } as Item;
            output.push(request);
            openApprovals.push(request.id);
          }
        }
        endedInRound = endsInCalls ? round : undefined;
        records.push(record(input, output, true, callRecords));

        const history = heldHistory(records);
        expect(history.items).toEqual(itemsOf(records));
        if (history.model === undefined) continue;
        held++;
        const registry = new ToolRegistry();
        expect(history.model.items).toEqual(toModelItems(history.items, registry, allRecords));
        // frozen, so the chat encoder keeps their messages
        expect(history.model.items.every((item) => Object.isFrozen(item))).toBe(true);
        expect(namesHold(history.model, registry)).toBe(true);
        // the next turn's input converted after the held items is what one pass over both gives
        const last = history.items.at(-1)!;
        const nextInput = [
          // an item reference to the last gateway call (resolved): one pass may group it with its round
          ...(next() < 0.3 && last.type !== 'message' ? [last] : []),
          ...openCalls.map((callId) => ({ id: id('fco'), type: 'function_call_output', call_id: callId, output: 'r' }) as Item),
          ...openApprovals.map((approvalId) => ({ id: id('mcpa'), type: 'mcp_approval_response', approval_request_id: approvalId, approve: next() < 0.5 }) as Item),
          user('next'),
        ];
        // the held path is taken only where it gives what one pass gives (prepare.ts)
        if (!mayJoinRound(last, nextInput[0])) {
          expect([...history.model.items, ...toModelItems(nextInput, registry, allRecords, replayStateFor(nextInput, history.model.replay))]).toEqual(toModelItems([...history.items, ...nextInput], registry, allRecords));
        }
        if (openApprovals.length > 0) approvalsAnswered++;
      }
    }
    // the comparisons ran (chains end their held model items at a compaction or a call without its record)
    expect(held).toBeGreaterThan(250);
    expect(approvalsAnswered).toBeGreaterThan(50);
  });
});
