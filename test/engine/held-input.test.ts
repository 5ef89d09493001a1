// The model items of a history a client resends whole (src/engine/held-history.ts, `heldInputRun`):
// the request's leading frozen items (a resent history, parsed once: src/util/interned-prefix.ts)
// are converted once and extended turn by turn. They must be exactly what converting the whole
// input gives, and absent wherever that cannot be known without converting it.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { heldInputRun } from '../../src/engine/held-history.js';
import { toModelItems } from '../../src/engine/conversation.js';
import { NO_RECORDS } from '../../src/engine/unstored-records.js';
import type { CallRecordLookup } from '../../src/engine/types.js';
import type { Item } from '../../src/protocol/responses.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { deepFreeze } from '../../src/util/freeze.js';
import { readSse, type TestGateway } from '../helpers/gateway.js';
import { keptAndFreshGateways, uniquelyIndented } from '../helpers/kept-and-fresh.js';
import { prng } from '../reliability/hostile-input.js';

let next = 0;
const id = (prefix: string) => `${prefix}_${++next}`;
const user = (text: string): Item => ({ id: id('msg'), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] });
const assistant = (text: string): Item => ({ id: id('msg'), type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] });
const call = (callId: string): Item => ({ id: id('fc'), type: 'function_call', call_id: callId, name: 'f', arguments: `{"c":"${callId}"}`, status: 'completed' }) as Item;
const output = (callId: string): Item => ({ id: id('fco'), type: 'function_call_output', call_id: callId, output: `result of ${callId}` }) as Item;

/** `turns` turns of an agent: a question, a call and its output, an answer — frozen, as a kept history is. */
function history(turns: number): Item[] {
  const items: Item[] = [];
  for (let i = 0; i < turns; i++) items.push(user(`q${i}`), call(`c${i}`), output(`c${i}`), assistant(`a${i}`));
  return deepFreeze(items);
}

/** A request's input as sent and as the turn has it (through the gateway the second are copies where validation or storage adds to an item). */
const both = (items: readonly Item[]): [readonly unknown[], readonly Item[], CallRecordLookup, string] => [items, items, NO_RECORDS, 'default'];

describe('heldInputRun', () => {
  it('holds what converting the leading frozen items gives, once, and extends it by what a turn adds', () => {
    const first = history(5);
    const held = heldInputRun(...both([...first, user('fresh')]));
    expect(held?.length).toBe(first.length);
    expect(held!.model.items).toEqual(toModelItems(first, new ToolRegistry()));
    expect(Object.isFrozen(held!.model.items[0])).toBe(true);
    // the same run again: the same model items, not converted again
    expect(heldInputRun(...both([...first, user('again')]))!.model).toBe(held!.model);
    // the next turn resends it with two more turns (frozen too): extended, the held items kept as they are
    const grown = [...first, ...history(2)];
    const extended = heldInputRun(...both(grown))!;
    expect(extended.length).toBe(grown.length);
    expect(extended.model.items).toEqual(toModelItems(grown, new ToolRegistry()));
    held!.model.items.forEach((item, i) => expect(extended.model.items[i]).toBe(item));
    expect(extended.model.items.slice(held!.model.items.length).every((item) => Object.isFrozen(item))).toBe(true);
  });

  it('holds nothing for too few shared items, unfrozen ones, or items that are not context-free', () => {
    expect(heldInputRun(...both(history(3)))).toBeUndefined();
    const unfrozen = [...history(5)].map((item) => ({ ...item }));
    expect(heldInputRun(...both(unfrozen))).toBeUndefined();
    // a gateway call without its record (its model items come from the store or a rebuild each
    // turn) ends the run: too few before it, nothing held
    const search = () => ({ id: id('ws'), type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'x' } }) as Item;
    expect(heldInputRun(...both(deepFreeze([...history(3), search(), ...history(5)])))).toBeUndefined();
  });

  it('holds the items before a hosted call without its record, converting it and what follows each turn', () => {
    const before = history(5);
    const items = deepFreeze([...before, { id: id('ws'), type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'x' } } as Item, ...history(2)]);
    const held = heldInputRun(...both(items))!;
    expect(held.length).toBe(before.length);
    expect(held.model.items).toEqual(toModelItems(before, new ToolRegistry()));
  });

  it('a run is found again only when every item before its last is the same object', () => {
    const items = history(5);
    heldInputRun(...both(items));
    // the same last item at the same place, an earlier answer edited
    const edited = [...items];
    edited[3] = deepFreeze(assistant('an edited answer'));
    const again = heldInputRun(...both(edited))!;
    expect(again.model.items).toEqual(toModelItems(edited, new ToolRegistry()));
  });

  it('a fork from an earlier turn is converted again, not taken from the longer run', () => {
    const items = history(8);
    const long = heldInputRun(...both(items))!;
    const fork = deepFreeze([...items.slice(0, 20), user('another way'), assistant('then so'), ...history(1)]);
    const forked = heldInputRun(...both(fork))!;
    expect(forked.model.items).toEqual(toModelItems(fork, new ToolRegistry()));
    expect(forked.model).not.toBe(long.model);
  });
});

const FIXTURES = ['fallback-tool', 'catalog-apply-patch'].map((name) => JSON.parse(readFileSync(new URL(`../fixtures/codex/${name}/0002-request.json`, import.meta.url), 'utf8')));

describe('a history resent whole through the gateway', () => {
  // one gateway gets the history as Codex sends it (compact, the same bytes turn after turn: kept,
  // its model items held); the other gets each body with an indent of its own, which nothing
  // kept matches, so it parses and converts everything every turn
  const gateways = keptAndFreshGateways();

  async function upstreamOf(tg: TestGateway, text: string): Promise<string> {
    const before = tg.simulator.requests.length;
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
    expect(res.status).toBe(200);
    expect((await readSse(res)).at(-1)!.type).toBe('response.completed');
    const [request] = tg.simulator.requests.slice(before);
    return JSON.stringify({ messages: (request.body as any).messages, tools: (request.body as any).tools });
  }

  it('sends the model, turn after turn, what the same history parsed fresh gives (Codex-shaped items, messages without ids, forks, changed tools)', async () => {
    // seeded: the same histories every run
    const rand = prng(16);
    for (const [f, fixture] of FIXTURES.entries()) {
      const namespaced = fixture.tools.some((tool: { type: string }) => tool.type === 'namespace');
      let input: Array<Record<string, unknown>> = [...fixture.input];
      for (let turn = 0; turn < 36; turn++) {
        const n = `${f}.${turn}`;
        // what an agent's turn adds, as Codex sends it back: items with ids, messages without status
        if (rand() < 0.1 && input.length > 12) input = input.slice(0, 8 + Math.floor(rand() * (input.length - 8)));
        if (rand() < 0.5) input.push({ type: 'reasoning', id: `rs_${n}`, summary: [{ type: 'summary_text', text: `thinking ${n}` }], encrypted_content: null });
        const calls = 1 + Math.floor(rand() * 3);
        for (let c = 0; c < calls; c++) {
          if (!namespaced && rand() < 0.4) input.push({ type: 'custom_tool_call', id: `ctc_${n}.${c}`, status: 'completed', call_id: `call_${n}.${c}`, name: 'apply_patch', input: `*** Begin Patch\n*** Add File: f${n}\n+${n}\n*** End Patch` });
          else if (namespaced && rand() < 0.3) input.push({ type: 'function_call', id: `fc_${n}.${c}`, status: 'completed', call_id: `call_${n}.${c}`, namespace: 'multi_agent_v1', name: 'spawn_agent', arguments: `{"task":"${n}"}` });
          else input.push({ type: 'function_call', id: `fc_${n}.${c}`, status: 'completed', call_id: `call_${n}.${c}`, name: 'exec_command', arguments: `{"cmd":"ls ${n}"}` });
        }
        for (let c = 0; c < calls; c++) {
          const callType = input.at(-calls + c)!.type;
          input.push({ type: callType === 'custom_tool_call' ? 'custom_tool_call_output' : 'function_call_output', id: `out_${n}.${c}`, call_id: `call_${n}.${c}`, output: `line 1 of ${n}\nline 2 “✓”` });
        }
        // a hosted search (the gateway's own call: without its record the history is converted whole)
        if (rand() < 0.15) input.push({ type: 'web_search_call', id: `ws_${n}`, status: 'completed', action: { type: 'search', query: n } });
        input.push({ type: 'message', id: `msg_a${n}`, role: 'assistant', content: [{ type: 'output_text', text: `done ${n}` }] });
        // Codex gives every item an id; a client of the SDK sends its own messages without one (minted each turn)
        input.push(rand() < 0.5 ? { type: 'message', id: `msg_u${n}`, role: 'user', content: [{ type: 'input_text', text: `next ${n}` }] } : { role: 'user', content: `next ${n}` });
        // now and then the namespaced tool is not declared: its calls are replayed under the flattened name
        const tools = namespaced && rand() < 0.2 ? fixture.tools.filter((tool: { type: string }) => tool.type !== 'namespace') : fixture.tools;
        const body = { ...fixture, input, tools };
        expect(await upstreamOf(gateways.kept, JSON.stringify(body)), `turn ${n}`).toBe(await upstreamOf(gateways.fresh, uniquelyIndented(body)));
      }
    }
  });
});
