import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPACTION_PROMPT, SUMMARY_MESSAGE_PREFIX } from '../../src/engine/compaction.js';
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Codex's remote compaction (`x-codex-beta-features: remote_compaction_v2`): a create request whose
 * input ends in `{"type": "compaction_trigger"}` (captured from Codex 0.171.0 with an OpenAI-named
 * provider), answered with one opaque compaction item and `response.completed`.
 */
describe('compaction_trigger on POST /v1/responses', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway();
  });
  afterAll(() => tg.close());

  const script = { rounds: [{ text: 'unused' }], when: [{ user_contains: 'Context compaction:', rounds: [{ text: 'SUMMARY: ran seq, saw 100000..103000.' }] }] };
  const history = [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: `list numbers\n#sim ${JSON.stringify(script)}` }] },
    { type: 'function_call', call_id: 'call_1', name: 'exec_command', arguments: '{"cmd":"seq 100000 103000"}' },
    { type: 'function_call_output', call_id: 'call_1', output: '100000\n100001\n…\n103000' },
  ];

  it('streams one compaction item then response.completed; the summary covers the tool calls after the last user message', async () => {
    const res = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-codex-beta-features': 'remote_compaction_v2' },
      body: JSON.stringify({ model: 'switchyard-sim', stream: true, store: false, input: [...history, { type: 'compaction_trigger' }], tools: [] }),
    });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events.map((e) => e.type)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.output_item.done', 'response.completed']);
    const item = events[3].item;
    expect(item.type).toBe('compaction');
    expect(typeof item.encrypted_content).toBe('string');
    expect(events[4].response.output).toEqual([item]);
    expect(events[4].response.status).toBe('completed');

    // the model was asked to summarize everything, the tool call and its output included
    const asked = tg.simulator.requests.at(-1)!.body.messages;
    expect(asked.at(-1).content).toBe(COMPACTION_PROMPT);
    expect(asked.some((m: any) => m.role === 'tool' && m.content.includes('103000'))).toBe(true);

    // fed back as Codex does (its user messages + the compaction item), the summary reaches the model
    const next = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'switchyard-sim', store: false, input: [history[0], history[1], item] }),
    });
    expect(next.status).toBe(200);
    const seen = tg.simulator.requests.at(-1)!.body.messages;
    expect(JSON.stringify(seen)).toContain(`${SUMMARY_MESSAGE_PREFIX}SUMMARY: ran seq, saw 100000..103000.`);
    expect(seen.some((m: any) => m.role === 'tool')).toBe(false);
    // and the user messages Codex keeps in front of the compaction item stay (after the summary)
    const user = seen.findIndex((m: any) => m.role === 'user' && JSON.stringify(m.content).includes('list numbers'));
    expect(user).toBeGreaterThan(-1);
    expect(JSON.stringify(seen.slice(0, user))).toContain(SUMMARY_MESSAGE_PREFIX);
  });

  it('answers a blocking request with the response object', async () => {
    const res = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'switchyard-sim', input: [...history, { type: 'compaction_trigger' }] }),
    });
    expect(res.status).toBe(200);
    const body: any = await res.json();
    expect(body.object).toBe('response');
    expect(body.output.map((i: any) => i.type)).toEqual(['compaction']);
  });
});
