// What each round of a gateway tool loop sends the model (src/engine/loop.ts): the turn's
// conversation, then every earlier round's output and gateway results, in order. The first round
// sends the turn's own list and the first round that goes on copies it, so a turn of one round
// copies nothing, however long the history a client resends. Checked on a resent history kept by
// the gateway (the same objects turn after turn) against a gateway that parses every body afresh.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordingExecution } from '../helpers/executions.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { uniquelyIndented } from '../helpers/kept-and-fresh.js';

describe('the conversation of each round of a gateway tool loop', () => {
  let kept: TestGateway;
  let fresh: TestGateway;
  beforeAll(async () => {
    const options = () => ({ executions: { web_search: recordingExecution({}).factory } });
    [kept, fresh] = await Promise.all([startTestGateway(options()), startTestGateway(options())]);
  });
  afterAll(async () => {
    await kept?.close();
    await fresh?.close();
  });

  /** The messages of every upstream request one turn made, round by round. */
  async function roundsOf(tg: TestGateway, body: string): Promise<unknown[][]> {
    const before = tg.simulator.requests.length;
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(200);
    const response = (await res.json()) as { status: string; output: Array<{ type: string }> };
    expect(response.status).toBe('completed');
    return tg.simulator.requests.slice(before).map((request) => withNumberedCallIds((request.body as { messages: unknown[] }).messages));
  }

  /** The simulator mints random call ids: numbered in order of appearance, so two gateways' rounds compare. */
  function withNumberedCallIds(messages: unknown[]): unknown[] {
    const numbers = new Map<string, string>();
    const text = JSON.stringify(messages).replace(/chatcmpl-tool-[0-9a-f]+/g, (id) => {
      if (!numbers.has(id)) numbers.set(id, `call#${numbers.size}`);
      return numbers.get(id)!;
    });
    return JSON.parse(text);
  }

  it('sends each round the last round’s messages and what that round added, the same as a fresh parse, turn after turn', async () => {
    // a client's resent history (Codex over HTTP): calls of its own, their outputs, answers
    const history: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 40; i++) {
      history.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: `question ${i}` }] });
      history.push({ type: 'function_call', call_id: `call_${i}`, name: 'lookup', arguments: `{"i":${i}}` });
      history.push({ type: 'function_call_output', call_id: `call_${i}`, output: `found ${i}` });
      history.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: `answer ${i}` }] });
    }
    const tools = [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: { i: { type: 'number' } } } }, { type: 'web_search' }];
    let lastRounds: unknown[][] | undefined;
    for (let turn = 0; turn < 4; turn++) {
      // two gateway rounds (searches), then the answer: three upstream requests
      const ask = scripted({ rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: `first ${turn}` } }] }, { tool_calls: [{ name: 'web_search', arguments: { query: `second ${turn}` } }] }, { text: `done ${turn}` }] }, `search twice ${turn}`);
      const body = { model: 'm', input: [...history, { type: 'message', role: 'user', content: ask }], tools, store: false, stream: false };
      const rounds = await roundsOf(kept, JSON.stringify(body));
      expect(rounds, `turn ${turn}`).toEqual(await roundsOf(fresh, uniquelyIndented(body)));
      expect(rounds).toHaveLength(3);
      // each round: the last round's messages, then the call it made and its result
      for (let r = 1; r < rounds.length; r++) {
        expect(rounds[r].slice(0, rounds[r - 1].length), `turn ${turn}, round ${r}`).toEqual(rounds[r - 1]);
        const addedByRound = rounds[r].slice(rounds[r - 1].length) as Array<{ role: string; tool_calls?: Array<{ id: string; function: { arguments: string } }>; tool_call_id?: string; content?: string }>;
        expect(addedByRound.map((m) => m.role)).toEqual(['assistant', 'tool']);
        expect(addedByRound[0].tool_calls![0].function.arguments).toContain(r === 1 ? `first ${turn}` : `second ${turn}`);
        expect(addedByRound[1].tool_call_id).toBe(addedByRound[0].tool_calls![0].id);
        expect(addedByRound[1].content).toContain(`results for ${r === 1 ? 'first' : 'second'} ${turn}`);
      }
      // the loop left the resent history as it was: the next turn's first round starts with the same messages
      if (lastRounds !== undefined) expect(rounds[0].slice(0, -1)).toEqual(lastRounds[0].slice(0, -1));
      lastRounds = rounds;
    }
  });
});
