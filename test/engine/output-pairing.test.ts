// `checkOutputsPaired` (src/engine/output-pairing.ts): a tool output must answer a call before it
// in the input or in the history. A resent history's leading shared items are checked once, as a
// run, and only when their outputs answer calls among themselves: the answers must be those of
// checking every item of every request.
import { describe, expect, it } from 'vitest';
import { checkOutputsPaired } from '../../src/engine/output-pairing.js';
import type { Item } from '../../src/protocol/responses.js';
import { CLIENT_CALL_ITEMS, CLIENT_OUTPUT_ITEMS } from '../../src/tools/registry.js';
import { itemTypes } from '../../src/util/item-types.js';
import { withSharedLength } from '../../src/util/kept-runs.js';
import { prng } from '../reliability/hostile-input.js';

const message = (text: string): Item => Object.freeze({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }) as Item;
const call = (callId: string, type = 'function_call'): Item => Object.freeze({ type, call_id: callId, name: 'shell', ...(type === 'function_call' ? { arguments: '{}' } : { input: 'x' }) }) as Item;
const output = (callId: string, type = 'function_call_output'): Item => Object.freeze({ type, call_id: callId, output: 'ok' }) as Item;

/** What every item of every request checked gives: the param of the first unpaired output, or null. */
function reference(history: readonly Item[], input: readonly Item[]): string | null {
  const historyCalls = new Set(history.filter((item) => typeof item.call_id === 'string' && !CLIENT_OUTPUT_ITEMS.has(item.type)).map((item) => item.call_id));
  const inputCalls = new Set<unknown>();
  for (const [i, item] of input.entries()) {
    if (CLIENT_CALL_ITEMS.has(item.type)) {
      if (typeof item.call_id === 'string') inputCalls.add(item.call_id);
    } else if (CLIENT_OUTPUT_ITEMS.has(item.type) && (typeof item.call_id !== 'string' || !(inputCalls.has(item.call_id) || historyCalls.has(item.call_id)))) {
      return `input[${i}]`;
    }
  }
  return null;
}

/** What the gateway's check gives, for the input as a request has it (its shared items noted, as parsing notes them). */
function checked(history: readonly Item[], input: readonly Item[]): string | null {
  let shared = 0;
  while (shared < input.length && Object.isFrozen(input[shared])) shared++;
  const sent = withSharedLength([...input], shared);
  try {
    checkOutputsPaired(history, sent, itemTypes(sent));
    return null;
  } catch (err) {
    return (err as { param: string }).param;
  }
}

describe('checkOutputsPaired', () => {
  it('refuses an output with no call before it, naming its place; a call after it does not count', () => {
    const calls = Array.from({ length: 20 }, (_, i) => [call(`c${i}`), output(`c${i}`)]).flat();
    expect(checked([], [...calls, output('nobody')])).toBe('input[40]');
    expect(checked([], [...calls, output('c99'), call('c99')])).toBe('input[40]');
    expect(checked([call('c99')], [...calls, output('c99')])).toBeNull();
    // a custom tool's output answers its call the same way
    expect(checked([], [...calls, call('k1', 'custom_tool_call'), output('k1', 'custom_tool_call_output')])).toBeNull();
  });

  it('an output far after its call (past the recent items) is found; one whose call is only further on is not', () => {
    const filler = Array.from({ length: 200 }, (_, i) => message(`m${i}`));
    expect(checked([], [call('early'), ...filler, output('early')])).toBeNull();
    expect(checked([...filler, call('old'), ...filler], [...filler, output('old')])).toBeNull();
    expect(checked([], [...filler, output('late'), ...filler, call('late')])).toBe('input[200]');
  });

  it('after a kept run, the very next item is checked, shared or sent fresh', () => {
    const turns = Array.from({ length: 12 }, (_, i) => [call(`t${i}`), output(`t${i}`), message(`a${i}`)]).flat();
    expect(checked([], turns)).toBeNull();
    expect(checked([], [...turns, output('stray_shared')])).toBe('input[36]');
    expect(checked([], [...turns, { ...output('stray_fresh') } as Item])).toBe('input[36]');
    expect(checked([], [...turns, call('t99'), output('t99'), output('stray_later')])).toBe('input[38]');
  });

  it('a run whose outputs were answered by the history is not taken for another history', () => {
    const leading = Array.from({ length: 30 }, (_, i) => message(`m${i}`));
    const input = [...leading, output('from_history'), message('next')];
    // answered by the chain before it: fine, but the run must not stand for a request without that chain
    expect(checked([call('from_history')], input)).toBeNull();
    expect(checked([], input)).toBe('input[30]');
    expect(checked([], [...input, message('more')])).toBe('input[30]');
  });

  it('random resent histories, grown, forked and edited, with and without a history before them, answer as checking every item does', () => {
    const random = prng(161616);
    let next = 0;
    let sent: Item[] = Array.from({ length: 16 }, (_, i) => message(`opening ${i}`));
    /** Calls a chain before the input holds: some of the input's outputs answer them (when that chain is sent). */
    const chainCalls = ['chain_a', 'chain_b'];
    let errors = 0;
    for (let request = 0; request < 800; request++) {
      const roll = random();
      if (roll < 0.55) {
        // a turn: calls and their outputs, now and then one answering the chain's call, then an answer
        const added: Item[] = [];
        for (let k = Math.floor(random() * 3); k >= 0; k--) {
          const id = `call_${next++}`;
          const custom = random() < 0.2;
          added.push(call(id, custom ? 'custom_tool_call' : 'function_call'), output(id, custom ? 'custom_tool_call_output' : 'function_call_output'));
        }
        if (random() < 0.04) added.push(output(chainCalls[Math.floor(random() * 2)]));
        added.push(message(`answer ${request}`));
        sent = [...sent, ...added];
      } else if (roll < 0.75) {
        sent = sent.slice(0, Math.max(16, sent.length - 1 - Math.floor(random() * 12)));
      }
      let input = [...sent];
      // this request only: an edited item (now and then an output nobody called), a stray output at the end
      if (random() < 0.1) input[Math.floor(random() * input.length)] = random() < 0.5 ? message(`edited ${request}`) : output(`edited_${request}`);
      if (random() < 0.05) input = [...input, output(`stray_${request}`)];
      // the newest item as a client sends it fresh (not shared), now and then
      if (random() < 0.5) input = [...input, { ...message('fresh') } as Item];
      const history = random() < 0.3 ? chainCalls.map((id) => call(id)) : [];
      const expected = reference(history, input);
      if (expected !== null) errors++;
      expect(checked(history, input), `request ${request}`).toBe(expected);
    }
    // both answers were met often
    expect(errors).toBeGreaterThan(50);
    expect(errors).toBeLessThan(750);
  });
});
