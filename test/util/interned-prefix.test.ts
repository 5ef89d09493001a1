// InternedPrefix (src/util/interned-prefix.ts) parses a resent history once: each turn parses what
// it adds, and the kept items take the place of the rest. Every body must still parse to exactly
// what JSON.parse gives, whatever surrounds the kept bytes, and the kept items must be frozen.
import { describe, expect, it } from 'vitest';
import { InternedPrefix } from '../../src/util/interned-prefix.js';
import { sharedLength } from '../../src/util/kept-runs.js';
import { prng } from '../reliability/hostile-input.js';
import { recordingParser } from '../helpers/recording-parser.js';

const LIMITS = { minBytes: 256, maxBytes: 1 << 20, count: 4, totalBytes: 1 << 22 };

const item = (i: number) => ({ type: 'message', role: i % 2 ? 'assistant' : 'user', content: [{ type: 'input_text', text: `item ${i}: “quoted” ✓ [{"not":"json"}] \\ "` }] });
const history = (n: number) => Array.from({ length: n }, (_, i) => item(i));


describe('InternedPrefix', () => {
  it('parses only what each turn adds once two bodies opened the history alike; the kept items frozen and shared', () => {
    const interned = new InternedPrefix('input', LIMITS);
    const { seen, parse } = recordingParser();
    const values: Array<{ input: Array<Record<string, unknown>> }> = [];
    for (let turn = 3; turn < 10; turn++) {
      const body = JSON.stringify({ model: 'm', input: history(turn), tools: [], store: false });
      const value = interned.parse(Buffer.from(body), parse) as { input: Array<Record<string, unknown>> };
      expect(JSON.stringify(value)).toBe(body);
      values.push(value);
    }
    // turns 3 and 4 parsed whole (and turn 4 once more with a sentinel for the whole history, which
    // proves where it is); from turn 5 on, a turn's parsed text holds only its new items
    expect(seen).toHaveLength(2 + 1 + 5);
    expect(seen[1]).toContain('item 0:');
    expect(seen[2]).not.toContain('item 0:');
    for (const [i, text] of seen.slice(3).entries()) {
      expect(text).not.toContain('item 0:');
      expect(text).toContain(`item ${i + 4}:`);
    }
    expect(Object.isFrozen(values[6].input[0])).toBe(true);
    expect(values[6].input[0]).toBe(values[2].input[0]);
    expect(values[6].input[5]).toBe(values[4].input[5]);
    // each body gets an array of its own
    expect(values[6].input).not.toBe(values[5].input);
    expect(() => {
      (values[6].input[0] as { role: string }).role = 'changed';
    }).toThrow(TypeError);
  });

  it('keeps the items before the last one or two when they come back changed (a cache mark moved on to the newest message)', () => {
    const interned = new InternedPrefix('messages', LIMITS);
    const { seen, parse } = recordingParser();
    // Claude Code's way: its newest message carries `cache_control`, taken off the turn after
    const marked = (items: Array<Record<string, unknown>>, count: number) =>
      items.map((one, i) => (i >= items.length - count ? { ...one, cache_control: { type: 'ephemeral' } } : one));
    const values: Array<{ messages: Array<Record<string, unknown>> }> = [];
    const bodies: string[] = [];
    for (let turn = 3; turn < 14; turn++) {
      // turns 3–8 mark one message, later turns the last two (two moved marks)
      const body = JSON.stringify({ model: 'm', messages: marked(history(turn), turn < 9 ? 1 : 2), stream: true });
      const value = interned.parse(Buffer.from(body), parse) as (typeof values)[number];
      expect(JSON.stringify(value)).toBe(body);
      values.push(value);
      bodies.push(body);
    }
    // turns 3 and 4 parsed whole (and turn 4 once more with a sentinel); after that each parsed text
    // holds the changed and the new items only
    expect(seen).toHaveLength(2 + 1 + 9);
    for (const [i, text] of seen.slice(3).entries()) {
      const turn = i + 5;
      // the first item parsed: the one whose mark came off (one marked: the turn's item before
      // last; two marked: the one before those), or, when the marks grew from one to two, the new one
      const first = turn < 9 ? turn - 2 : turn === 9 ? turn - 1 : turn - 3;
      expect(text).toContain(`item ${first}:`);
      expect(text).not.toContain(`item ${first - 1}:`);
      expect(text).toContain(`item ${turn - 1}:`);
    }
    const last = values.at(-1)!.messages;
    expect(last[0]).toBe(values[2].messages[0]);
    expect(last[9]).toBe(values.at(-2)!.messages[9]);
    expect(last[10]).not.toBe(values.at(-2)!.messages[10]);
    expect(Object.isFrozen(last[12])).toBe(true);
    expect(last[12].cache_control).toEqual({ type: 'ephemeral' });
    expect(values.at(-2)!.messages[11].cache_control).toEqual({ type: 'ephemeral' });
    expect(last[10]).not.toHaveProperty('cache_control');
  });

  it('takes nothing from a nested copy at the kept place, a later duplicate key, or a changed item', () => {
    const interned = new InternedPrefix('input', LIMITS);
    const { parse } = recordingParser();
    const head = '{"model":"mmmmmmmmmmmmmmmmmmmmmmmmmmmmmm","input":';
    const past = JSON.stringify(history(4));
    for (let i = 0; i < 2; i++) interned.parse(Buffer.from(`${head}${past}}`), parse);
    const open = past.slice(0, -1);
    const nestedHead = '{"x":{"k":"';
    const bodies = [
      // the kept items at their offset, inside another member
      `${nestedHead}${'p'.repeat(head.length - nestedHead.length - '","input":'.length)}","input":${open},{"n":1}]},"input":[{"top":true}]}`,
      // at their offset as a top-level member that a later one overrides
      `${head}${open},{"n":1}],"input":[{"top":true}]}`,
      // one character of a kept item changed
      `${head}${open.replace('item 3', 'item 9')},{"n":1}]}`,
      // followed by something else than another item
      `${head}${open} {"n":1}]}`,
    ];
    for (const body of bodies) {
      expect(body.indexOf(body.includes('item 9') ? open.replace('item 3', 'item 9') : open)).toBe(head.length);
      let expected: unknown;
      try {
        expected = JSON.parse(body);
      } catch {
        expect(() => interned.parse(Buffer.from(body), parse)).toThrow();
        continue;
      }
      expect(interned.parse(Buffer.from(body), parse)).toEqual(expected);
    }
  });

  it('keeps a conversation per place, at most `count` of them', () => {
    const interned = new InternedPrefix('input', { ...LIMITS, count: 2 });
    const { seen, parse } = recordingParser();
    const bodyOf = (session: number, turn: number) =>
      JSON.stringify({ model: 'm'.repeat(session + 1), input: [{ type: 'message', role: 'developer', content: `session ${session}` }, ...history(turn)] });
    for (let turn = 2; turn < 6; turn++) for (const session of [0, 1]) expect(JSON.stringify(interned.parse(Buffer.from(bodyOf(session, turn)), parse))).toBe(bodyOf(session, turn));
    expect(seen.slice(-4).every((text) => !text.includes('item 0:'))).toBe(true);
    // a third conversation evicts the least recently used
    for (const turn of [2, 3]) interned.parse(Buffer.from(bodyOf(2, turn)), parse);
    interned.parse(Buffer.from(bodyOf(0, 6)), parse);
    expect(seen.at(-1)).toContain('item 0:');
    interned.parse(Buffer.from(bodyOf(1, 6)), parse);
    expect(seen.at(-1)).not.toContain('item 0:');
  });

  it('notes how many leading items are objects: all of a long kept history, none past a text among them', () => {
    const interned = new InternedPrefix('input', LIMITS);
    const parse = (body: Buffer) => JSON.parse(body.toString('utf8'));
    const parsed = (items: unknown[]) => (interned.parse(Buffer.from(JSON.stringify({ model: 'm', input: items })), parse) as { input: unknown[] }).input;
    // the first body is parsed as sent; the second keeps its items, the third takes them as kept
    expect(sharedLength(parsed(history(150)))).toBe(0);
    for (let turn = 150; turn < 153; turn++) expect(sharedLength(parsed(history(turn)))).toBe(turn);
    // a text among the items (no request's, but a body all the same): the objects before it
    const withText: unknown[] = history(160);
    withText.splice(140, 0, 'a text, not an item');
    expect(sharedLength(parsed(withText))).toBe(0);
    for (let turn = 0; turn < 3; turn++) expect(sharedLength(parsed([...withText, ...history(turn)]))).toBe(140);
  });

  it('seeded fuzz: 2,000 turns of growing, edited and damaged histories parse exactly as JSON.parse, or fail where it fails', () => {
    const random = prng(20261204);
    const interned = new InternedPrefix('input', LIMITS);
    const parse = (body: Buffer) => JSON.parse(body.toString('utf8'));
    const outcome = (run: () => unknown) => {
      try {
        return { ok: JSON.stringify(run()) };
      } catch {
        return { failed: true };
      }
    };
    let items: unknown[] = history(3);
    let around = 0;
    for (let i = 0; i < 2000; i++) {
      const roll = random();
      if (roll < 0.02) items = [...items, random() < 0.5 ? 'a text, not an item' : [item(0)]];
      else if (roll < 0.6) items = [...items, item(items.length)];
      else if (roll < 0.7) items = items.slice(0, Math.max(1, items.length - 2));
      else if (roll < 0.75) items = history(3);
      // the newest one or two items marked, as a client that moves a cache mark along does
      const marks = Math.floor(random() * 3);
      const sent = items.map((one, k) => (k >= items.length - marks && typeof one === 'object' && !Array.isArray(one) ? { ...one, cache_control: { type: 'ephemeral' } } : one));
      const members = [`"model":"m"`, `"input":${JSON.stringify(sent)}`, `"store":false`];
      if (random() < 0.1) members.push(`"input":${JSON.stringify(items.slice(0, 2))}`);
      if (random() < 0.1) members.unshift(`"x":{"input":${JSON.stringify(items)}}`);
      let text = `{${members.join(random() < 0.1 ? ' , ' : ',')}}`;
      if (random() < 0.2) {
        const at = Math.floor(random() * text.length);
        text = random() < 0.5 ? text.slice(0, at) + text.slice(at + 1) : text.slice(0, at) + ',]}"['[Math.floor(random() * 5)] + text.slice(at);
      }
      let value: { input?: unknown[] } | undefined;
      const got = outcome(() => (value = interned.parse(Buffer.from(text), parse) as typeof value));
      expect(got).toEqual(outcome(() => JSON.parse(text)));
      if (Array.isArray(value?.input) && Object.isFrozen(value.input[0])) around++;
      // the shared items an array is noted with are its leading frozen objects (no text)
      if (Array.isArray(value?.input)) {
        const input = value.input;
        let objects = 0;
        while (objects < input.length && typeof input[objects] === 'object' && Object.isFrozen(input[objects])) objects++;
        expect(sharedLength(input)).toBe(objects);
      }
    }
    expect(around).toBeGreaterThan(500);
  });
});
