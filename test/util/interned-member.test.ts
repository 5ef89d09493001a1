// InternedMember (src/util/interned-member.ts) parses a tool list that clients resend once, and puts
// the kept value in place of its bytes: every body must still parse to exactly what JSON.parse
// gives, whatever surrounds the kept bytes (another list, a nested copy, a later duplicate key,
// broken JSON), and the kept value must be frozen and shared.
import { describe, expect, it } from 'vitest';
import { InternedMember, isInterned } from '../../src/util/interned-member.js';
import { jsonValueEnd } from '../../src/util/json-bytes.js';
import { snapshotOf, sameJson } from '../../src/util/kept-json.js';
import { prng } from '../reliability/hostile-input.js';
import { recordingParser } from '../helpers/recording-parser.js';

const tools = (n: number, tag = '') =>
  Array.from({ length: n }, (_, i) => ({
    type: 'function',
    name: `tool_${i}${tag}`,
    description: `Does thing ${i} — with “quotes”, \\ and "escapes" ✓`,
    parameters: { type: 'object', properties: { path: { type: 'string', description: 'a [bracket] and a {brace}' } }, required: ['path'] },
  }));


const LIMITS = { minBytes: 256, maxBytes: 1 << 20, count: 4, totalBytes: 1 << 20 };

describe('InternedMember', () => {
  it('keeps a list once bodies with it were parsed twice, then parses around it: the same value, frozen and shared', () => {
    const interned = new InternedMember('tools', LIMITS);
    const { seen, parse } = recordingParser();
    const list = tools(6);
    const listJson = JSON.stringify(list);
    const values = [1, 2, 3, 4].map((turn) => {
      // Codex's shape: the input grows every turn and the tools come after it
      const body = JSON.stringify({ model: 'm', input: Array.from({ length: turn }, (_, i) => ({ role: 'user', content: `turn ${i} ✓` })), tools: list, store: false });
      const value = interned.parse(Buffer.from(body), parse) as Record<string, unknown>;
      expect(value).toEqual(JSON.parse(body));
      expect(Object.keys(value)).toEqual(['model', 'input', 'tools', 'store']);
      return value;
    });
    // turns 1 and 2 parsed in full (the second also found and parsed the list); 3 and 4 around it
    expect(seen.filter((text) => text.includes(listJson))).toHaveLength(3);
    expect(seen.slice(-2).every((text) => !text.includes('tool_0'))).toBe(true);
    expect(Object.isFrozen(values[2].tools)).toBe(true);
    expect(isInterned((values[2].tools as object[])[0])).toBe(true);
    // one value for every body with these bytes (turn 2 got it too, once it was kept)
    expect(values[1].tools).toBe(values[2].tools);
    expect(values[3].tools).toBe(values[2].tools);
    expect(values[0].tools).not.toBe(values[2].tools);
    expect(() => {
      (values[3].tools as Array<Record<string, unknown>>)[0].name = 'changed';
    }).toThrow(TypeError);
  });

  it('finds a list sent before a growing input (counted from the start) and sent with spaces', () => {
    const interned = new InternedMember('tools', LIMITS);
    const { seen, parse } = recordingParser();
    const list = tools(4);
    for (let turn = 1; turn <= 4; turn++) {
      const body = JSON.stringify({ model: 'm', tools: list, input: 'x'.repeat(turn * 100) }, null, 2);
      expect(interned.parse(Buffer.from(body), parse)).toEqual(JSON.parse(body));
    }
    expect(seen.slice(-2).every((text) => !text.includes('tool_0'))).toBe(true);
  });

  it('takes nothing from a nested copy of a kept list, a later duplicate key, or other bytes at its place', () => {
    const interned = new InternedMember('tools', LIMITS);
    const { parse } = recordingParser();
    const list = tools(4);
    const other = tools(4, 'b');
    const prefix = '{"model":"mmmmmmmmmmmmmmmmmmmmmmmmmmmmmm","tools":';
    for (let i = 0; i < 2; i++) interned.parse(Buffer.from(`${prefix}${JSON.stringify(list)}}`), parse);
    const listJson = JSON.stringify(list);
    // the kept list at its offset, but inside another member: the top-level list is another
    const head = '{"x":{"k":"';
    const nested = `${head}${'p'.repeat(prefix.length - head.length - '","tools":'.length)}","tools":${listJson}},"tools":${JSON.stringify(other)}}`;
    // and at its offset as a top-level member that a later one overrides
    const duplicate = `${prefix}${listJson},"tools":${JSON.stringify(other)}}`;
    for (const body of [nested, duplicate]) {
      expect(body.indexOf(listJson)).toBe(prefix.length);
      const value = interned.parse(Buffer.from(body), parse) as Record<string, unknown>;
      expect(value).toEqual(JSON.parse(body));
      expect((value.tools as Array<{ name: string }>)[0].name).toBe('tool_0b');
    }
    // the same length, one character different
    const changed = JSON.stringify(list).replace('tool_3', 'tool_4');
    const body = `${prefix}${changed}}`;
    const changedValue = interned.parse(Buffer.from(body), parse) as Record<string, unknown>;
    expect(changedValue).toEqual(JSON.parse(body));
    expect(Object.isFrozen(changedValue.tools)).toBe(false);
  });

  it('fails a broken body as parsing it whole does, and keeps nothing too small', () => {
    const interned = new InternedMember('tools', LIMITS);
    const { parse } = recordingParser();
    const list = tools(4);
    const prefix = '{"model":"m","tools":';
    for (let i = 0; i < 2; i++) interned.parse(Buffer.from(`${prefix}${JSON.stringify(list)}}`), parse);
    const broken = `${prefix}${JSON.stringify(list)},}`;
    expect(() => JSON.parse(broken)).toThrow();
    expect(() => interned.parse(Buffer.from(broken), parse)).toThrow(/JSON/);

    const small = new InternedMember('tools', LIMITS);
    const tiny = recordingParser();
    const body = Buffer.from(`${prefix}[{"type":"function","name":"f"}],"pad":"${'p'.repeat(300)}"}`);
    for (let i = 0; i < 4; i++) expect(Object.isFrozen((small.parse(body, tiny.parse) as { tools: unknown }).tools)).toBe(false);
  });

  it('keeps at most `count` lists, the least recently used leaving first', () => {
    const interned = new InternedMember('tools', { ...LIMITS, count: 2 });
    const { seen, parse } = recordingParser();
    const bodyOf = (tag: string) => Buffer.from(JSON.stringify({ model: 'm', tools: tools(3, tag) }));
    /** Whether the body was parsed around a kept list (the last text parsed does not hold it). */
    const aroundKept = (tag: string) => {
      interned.parse(bodyOf(tag), parse);
      return !seen.at(-1)!.includes(`tool_0${tag}`);
    };
    for (const tag of ['a', 'a', 'b', 'b']) aroundKept(tag);
    expect(aroundKept('a')).toBe(true);
    for (const tag of ['c', 'c']) aroundKept(tag);
    // b was used least recently: parsed in full (and kept again at once)
    expect(aroundKept('a')).toBe(true);
    expect(aroundKept('c')).toBe(true);
    expect(aroundKept('b')).toBe(false);
    expect(aroundKept('b')).toBe(true);
  });

  it('serves sessions that send the same list at different places, each from its first body after the list was kept there', () => {
    const interned = new InternedMember('tools', { ...LIMITS, count: 8 });
    const { seen, parse } = recordingParser();
    const list = tools(4);
    // five sessions: the list after inputs and before suffixes of their own lengths
    const bodyOf = (session: number, turn: number) =>
      Buffer.from(JSON.stringify({ model: 'm'.repeat(session + 1), input: 'i'.repeat(turn * 10 + session), tools: list, key: 'k'.repeat(session * 7) }));
    const values = [];
    for (let turn = 0; turn < 4; turn++) for (let session = 0; session < 5; session++) values.push(interned.parse(bodyOf(session, turn), parse) as { tools: unknown });
    for (const [i, value] of values.entries()) expect(value).toEqual(JSON.parse(bodyOf(i % 5, Math.floor(i / 5)).toString()));
    // parsed once to keep it, then only found at each session's place: from the third round on,
    // no session's body holds it when parsed
    expect(seen.filter((text) => text.startsWith('[')).length).toBe(1);
    expect(seen.slice(-10).every((text) => !text.includes('tool_0'))).toBe(true);
    expect(new Set(values.slice(-10).map((value) => value.tools)).size).toBe(1);
  });

  it('stops keeping lists of the same names whose bytes change every time (a date in a description)', () => {
    const interned = new InternedMember('tools', LIMITS);
    const { seen, parse } = recordingParser();
    for (let i = 0; i < 20; i++) {
      const list = tools(3).map((tool) => ({ ...tool, description: `${tool.description} at ${1000 + i}` }));
      const body = JSON.stringify({ model: 'm', tools: list });
      expect(interned.parse(Buffer.from(body), parse)).toEqual(JSON.parse(body));
    }
    // each keeping parses the list alone: three times, then never again
    expect(seen.filter((text) => text.startsWith('[')).length).toBe(3);
  });
});

describe('InternedMember, seeded fuzz', () => {
  it('parses 3,000 bodies around kept lists exactly as JSON.parse does, or fails where it fails', () => {
    const random = prng(20261204);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
    const lists = [JSON.stringify(tools(5)), JSON.stringify(tools(3, 'x'), null, 1), JSON.stringify(tools(8, 'y'))];
    const interned = new InternedMember('tools', LIMITS);
    const parse = (body: Buffer) => JSON.parse(body.toString('utf8'));
    /** A body around `list`: an input before or after it, nested copies, duplicate keys, spacing. */
    const bodyAround = (list: string): string => {
      const input = JSON.stringify('i'.repeat(Math.floor(random() * 40)));
      const nested = `{"x":{"tools":${pick(lists)}}}`;
      const members = [`"model":"m"`, `"input":${input}`, `"tools":${list}`];
      if (random() < 0.2) members.push(`"tools":${pick(lists)}`);
      if (random() < 0.2) members.splice(1, 0, `"meta":${nested}`);
      if (random() < 0.5) members.push(members.splice(2, 1)[0]);
      return `{${members.join(random() < 0.2 ? ' ,\n ' : ',')}}`;
    };
    /** The body with one ASCII character changed, removed or added somewhere (often not JSON any more). */
    const damaged = (text: string): string => {
      const at = Math.floor(random() * text.length);
      const char = pick(['"', ',', '}', ']', '[', '{', ':', 'a', '1', ' ', '\\']);
      const kind = random();
      if (kind < 0.4) return text.slice(0, at) + char + text.slice(at + 1);
      if (kind < 0.7) return text.slice(0, at) + text.slice(at + 1);
      return text.slice(0, at) + char + text.slice(at);
    };
    const outcome = (run: () => unknown) => {
      try {
        return { ok: JSON.stringify(run()) };
      } catch {
        return { failed: true };
      }
    };
    let around = 0;
    for (let i = 0; i < 3000; i++) {
      let text = bodyAround(pick(lists));
      if (random() < 0.3) text = damaged(text);
      let value: { tools?: unknown } | undefined;
      const got = outcome(() => (value = interned.parse(Buffer.from(text), parse) as typeof value));
      expect(got).toEqual(outcome(() => JSON.parse(text)));
      if (value?.tools !== undefined && Object.isFrozen(value.tools)) around++;
    }
    // most well-formed bodies were parsed around a kept list
    expect(around).toBeGreaterThan(1000);
  });
});

describe('sameJson with interned values', () => {
  it('ends at an interned value it found equal before, and never at a value that can change', () => {
    const interned = new InternedMember('tools', LIMITS);
    const { parse } = recordingParser();
    const body = Buffer.from(JSON.stringify({ model: 'm', tools: tools(3) }));
    let value: { tools: Array<Record<string, unknown>> } = { tools: [] };
    for (let i = 0; i < 3; i++) value = interned.parse(body, parse) as typeof value;
    const schema = value.tools[0].parameters as object;
    expect(isInterned(schema)).toBe(true);
    const snapshot = snapshotOf(JSON.stringify(schema));
    expect(sameJson(schema, snapshot)).toBe(true);
    expect(sameJson(schema, snapshot)).toBe(true);
    expect(sameJson({ type: 'object' }, snapshot)).toBe(false);
    // a request's own object, equal and then changed, is compared again
    const own = JSON.parse(JSON.stringify(schema));
    expect(sameJson(own, snapshot)).toBe(true);
    own.required = ['other'];
    expect(sameJson(own, snapshot)).toBe(false);
  });
});

describe('jsonValueEnd', () => {
  it('ends an array or object at its closing bracket, brackets and escaped quotes in strings skipped', () => {
    const text = ' \n [{"a":"]}\\"[{","b":[1,{"c":"\\\\"}]}] ,"next":1';
    const end = jsonValueEnd(Buffer.from(text), 0);
    expect(JSON.parse(text.slice(0, end))).toEqual([{ a: ']}"[{', b: [1, { c: '\\' }] }]);
    expect(text.slice(end)).toBe(' ,"next":1');
    expect(jsonValueEnd(Buffer.from('"string"'), 0)).toBe(0);
    expect(jsonValueEnd(Buffer.from('[1,[2]'), 0)).toBe(0);
  });
});
