// Pure units of the MCP support: allowed_tools / require_approval filters, model-visible names,
// rendering of tool results for the model, and the per-server circuit breaker.
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/mcp/circuit-breaker.js';
import { isAllowed, needsApproval, type ToolTraits } from '../../src/mcp/filters.js';
import { mcpModelName } from '../../src/mcp/naming.js';
import { capText, renderCallResult } from '../../src/mcp/render.js';

const ro = (name: string): ToolTraits => ({ name, readOnly: true });
const rw = (name: string): ToolTraits => ({ name, readOnly: false });

describe('isAllowed (allowed_tools)', () => {
  const cases: Array<[string, unknown, ToolTraits, boolean]> = [
    ['omitted', undefined, rw('a'), true],
    ['null', null, rw('a'), true],
    ['list, listed', ['a', 'b'], rw('a'), true],
    ['list, not listed', ['a', 'b'], rw('c'), false],
    ['list is case-sensitive', ['echo'], rw('Echo'), false],
    ['empty list allows nothing', [], rw('a'), false],
    ['{tool_names}, listed', { tool_names: ['a'] }, ro('a'), true],
    ['{tool_names}, not listed', { tool_names: ['a'] }, ro('b'), false],
    ['{tool_names: []} allows nothing', { tool_names: [] }, ro('a'), false],
    ['{read_only:true}, read-only tool', { read_only: true }, ro('a'), true],
    ['{read_only:true}, other tool', { read_only: true }, rw('a'), false],
    ['{read_only:false}, other tool', { read_only: false }, rw('a'), true],
    ['{read_only:false}, read-only tool', { read_only: false }, ro('a'), false],
    ['combined: listed and read-only', { tool_names: ['a', 'b'], read_only: true }, ro('a'), true],
    ['combined: listed, not read-only', { tool_names: ['a', 'b'], read_only: true }, rw('b'), false],
    ['combined: read-only, not listed', { tool_names: ['a', 'b'], read_only: true }, ro('c'), false],
    ['{} = no criteria = all', {}, rw('a'), true],
    ['a string is not a filter', 'a', rw('a'), false],
  ];
  it.each(cases)('%s', (_label, filter, tool, expected) => {
    expect(isAllowed(filter, tool)).toBe(expected);
  });

  it('{tool_names: null} means no name criterion, as the declaration parser treats it', () => {
    // BUG (src/mcp/filters.ts isAllowed): the parser (optionalStringArray) accepts a null
    // tool_names as absent, but isAllowed only treats `undefined` as absent, so
    // `allowed_tools: {tool_names: null}` hides every tool of the server.
    expect(isAllowed({ tool_names: null }, rw('a'))).toBe(true);
    expect(isAllowed({ tool_names: null, read_only: true }, ro('a'))).toBe(true);
  });
});

describe('needsApproval (require_approval)', () => {
  const cases: Array<[string, unknown, ToolTraits, boolean]> = [
    ['omitted → approval required', undefined, ro('a'), true],
    ['null → approval required', null, ro('a'), true],
    ["'always'", 'always', ro('a'), true],
    ["'never'", 'never', rw('a'), false],
    ['an unknown string → approval required', 'sometimes', rw('a'), true],
    ['{never:{tool_names}}, listed', { never: { tool_names: ['a'] } }, rw('a'), false],
    ['{never:{tool_names}}, not listed', { never: { tool_names: ['a'] } }, rw('b'), true],
    ['{never:{read_only:true}}, read-only', { never: { read_only: true } }, ro('a'), false],
    ['{never:{read_only:true}}, not read-only', { never: { read_only: true } }, rw('a'), true],
    ['{never:{tool_names, read_only}} needs both', { never: { tool_names: ['a'], read_only: true } }, rw('a'), true],
    ['{never:{tool_names, read_only}}, both match', { never: { tool_names: ['a'], read_only: true } }, ro('a'), false],
    ['{never:{}} matches nothing', { never: {} }, ro('a'), true],
    ['{always:{tool_names}}, listed', { always: { tool_names: ['a'] } }, rw('a'), true],
    ['{always:{tool_names}}, matching neither → approval', { always: { tool_names: ['a'] } }, rw('b'), true],
    ['{always:a, never:b}: b runs freely', { always: { tool_names: ['a'] }, never: { tool_names: ['b'] } }, rw('b'), false],
    ['{always:a, never:b}: a asks', { always: { tool_names: ['a'] }, never: { tool_names: ['b'] } }, rw('a'), true],
    ['{always:a, never:b}: c matches neither → approval', { always: { tool_names: ['a'] }, never: { tool_names: ['b'] } }, rw('c'), true],
    ['{} → approval', {}, ro('a'), true],
  ];
  it.each(cases)('%s', (_label, policy, tool, expected) => {
    expect(needsApproval(policy, tool)).toBe(expected);
  });

  it('a tool matched by both always and never asks for approval (fail safe)', () => {
    // BUG (src/mcp/filters.ts needsApproval): `never` is checked first and wins, so a tool the
    // client listed under `always` runs without approval when a `never` filter also matches it
    // (e.g. {always:{tool_names:['delete_repo']}, never:{read_only:true}} with a server that marks
    // delete_repo read-only).
    expect(needsApproval({ always: { tool_names: ['a'] }, never: { tool_names: ['a'] } }, rw('a'))).toBe(true);
    expect(needsApproval({ always: { tool_names: ['delete_repo'] }, never: { read_only: true } }, ro('delete_repo'))).toBe(true);
  });
});

describe('mcpModelName', () => {
  const VALID = /^[a-zA-Z0-9_-]{1,64}$/;

  it('plain names are mcp__<label>__<tool>', () => {
    expect(mcpModelName('ev', 'echo')).toBe('mcp__ev__echo');
    expect(mcpModelName('ev', 'get-sum')).toBe('mcp__ev__get-sum');
    expect(mcpModelName('My_Server-1', 'Tool_2')).toBe('mcp__My_Server-1__Tool_2');
  });

  it('characters outside [a-zA-Z0-9_-] are replaced and a hash keeps names apart', () => {
    const dotted = mcpModelName('ev', 'get.sum');
    expect(dotted).toMatch(/^mcp__ev__get_sum_[0-9a-f]{8}$/);
    const spaced = mcpModelName('ev', 'get sum');
    expect(spaced).toMatch(/^mcp__ev__get_sum_[0-9a-f]{8}$/);
    expect(new Set([dotted, spaced, mcpModelName('ev', 'get_sum')]).size).toBe(3);
    for (const tool of ['café', 'a/b', 'x:y', '工具', 'emoji😀', 'dots.and spaces']) expect(mcpModelName('ev', tool)).toMatch(VALID);
  });

  it('names over 64 characters are cut with a hash suffix', () => {
    const exactly = `t${'x'.repeat(64 - 'mcp__ev__'.length - 1)}`;
    expect(mcpModelName('ev', exactly)).toBe(`mcp__ev__${exactly}`);
    expect(mcpModelName('ev', exactly).length).toBe(64);
    const long = `${exactly}y`;
    const name = mcpModelName('ev', long);
    expect(name).toHaveLength(64);
    expect(name).toMatch(VALID);
    expect(name).toMatch(/_[0-9a-f]{8}$/);
    // two long names sharing the kept prefix stay distinct
    const prefix = 'p'.repeat(80);
    expect(mcpModelName('ev', `${prefix}_one`)).not.toBe(mcpModelName('ev', `${prefix}_two`));
  });

  it('is distinct for different labels, even when the kept prefix is the same', () => {
    expect(mcpModelName('a', 'echo')).not.toBe(mcpModelName('b', 'echo'));
    const label = 'l'.repeat(60);
    expect(mcpModelName(`${label}1`, 'tool')).not.toBe(mcpModelName(`${label}2`, 'tool'));
  });

  it('is deterministic', () => {
    for (const [label, tool] of [
      ['ev', 'echo'],
      ['ev', 'get.sum'],
      ['x'.repeat(64), 'y'.repeat(64)],
    ]) {
      expect(mcpModelName(label, tool)).toBe(mcpModelName(label, tool));
    }
  });

  it('labels containing "__" do not collide with tools containing "__"', () => {
    // BUG (src/mcp/naming.ts): both are 'mcp__a__b__c' — server 'a__b' (a valid label) with tool
    // 'c' and server 'a' with tool 'b__c'. The registry then refuses the request (400
    // duplicate_tool_name) although the two tools are distinct.
    expect(mcpModelName('a__b', 'c')).not.toBe(mcpModelName('a', 'b__c'));
  });
});

describe('renderCallResult', () => {
  const BIG = 100_000;

  it('text blocks, joined by newlines', () => {
    expect(renderCallResult({ content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] }, BIG)).toBe('one\ntwo');
  });

  it('images and audio become short markers with their type and approximate size', () => {
    const data = Buffer.alloc(300, 7).toString('base64'); // 400 base64 characters
    expect(renderCallResult({ content: [{ type: 'image', data, mimeType: 'image/png' }] }, BIG)).toBe('[image: image/png, 300 bytes]');
    expect(renderCallResult({ content: [{ type: 'audio', data, mimeType: 'audio/wav' }] }, BIG)).toBe('[audio: audio/wav, 300 bytes]');
    expect(renderCallResult({ content: [{ type: 'image', data }] }, BIG)).toBe('[image: unknown type, 300 bytes]');
  });

  it('resources: their text, else their URI (and type)', () => {
    expect(renderCallResult({ content: [{ type: 'resource', resource: { uri: 'file:///a.txt', text: 'file body' } }] }, BIG)).toBe('file body');
    expect(renderCallResult({ content: [{ type: 'resource', resource: { uri: 'file:///a.bin', blob: 'AAAA', mimeType: 'application/octet-stream' } }] }, BIG)).toBe(
      '[resource: file:///a.bin, application/octet-stream]',
    );
    expect(renderCallResult({ content: [{ type: 'resource_link', name: 'readme', uri: 'file:///README.md' }] }, BIG)).toBe('[resource link: readme file:///README.md]');
  });

  it('structured content as JSON only when there is no content', () => {
    expect(renderCallResult({ content: [], structuredContent: { answer: 42 } }, BIG)).toBe('{"answer":42}');
    expect(renderCallResult({ structuredContent: { answer: 42 } }, BIG)).toBe('{"answer":42}');
    expect(renderCallResult({ content: [{ type: 'text', text: '42' }], structuredContent: { answer: 42 } }, BIG)).toBe('42');
  });

  it('legacy toolResult, unknown blocks, nothing at all', () => {
    expect(renderCallResult({ toolResult: 'legacy' }, BIG)).toBe('legacy');
    expect(renderCallResult({ toolResult: { a: 1 } }, BIG)).toBe('{"a":1}');
    expect(renderCallResult({ content: [{ type: 'hologram', x: 1 }] }, BIG)).toBe('{"type":"hologram","x":1}');
    expect(renderCallResult({ content: [] }, BIG)).toBe('');
  });

  it('mixed content keeps the order of the blocks', () => {
    const data = Buffer.alloc(3).toString('base64');
    expect(renderCallResult({ content: [{ type: 'text', text: 'see:' }, { type: 'image', data, mimeType: 'image/jpeg' }, { type: 'text', text: 'done' }] }, BIG)).toBe(
      'see:\n[image: image/jpeg, 3 bytes]\ndone',
    );
  });

  it('is capped at maxBytes', () => {
    const out = renderCallResult({ content: [{ type: 'text', text: 'x'.repeat(5_000) }] }, 100);
    expect(out.startsWith('x'.repeat(100))).toBe(true);
    expect(out).toContain('[truncated: 4900 more bytes not shown]');
  });
});

describe('capText', () => {
  const visible = (capped: string) => capped.split('\n…[truncated')[0]!;

  it('leaves text within the limit alone (up to and including the limit)', () => {
    expect(capText('hello', 10)).toBe('hello');
    expect(capText('hello', 5)).toBe('hello');
    expect(capText('', 0)).toBe('');
  });

  it('cuts ASCII at the byte limit and says how much was cut', () => {
    expect(capText('abcdefghij', 4)).toBe('abcd\n…[truncated: 6 more bytes not shown]');
  });

  it('never splits a multi-byte character, never leaves a replacement character', () => {
    const cases: Array<[string, number]> = [
      ['é'.repeat(10), 5], // 2-byte characters, limit in the middle of one
      ['€'.repeat(10), 4], // 3-byte, 1 byte into the second
      ['€'.repeat(10), 5], // 3-byte, 2 bytes into the second
      ['😀'.repeat(5), 6], // 4-byte, 2 bytes into the second
      ['😀'.repeat(5), 7], // 4-byte, 3 bytes into the second
      ['a😀b€c', 2],
      ['😀', 3], // nothing fits
    ];
    for (const [text, max] of cases) {
      const out = capText(text, max);
      const kept = visible(out);
      expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(max);
      expect(kept).not.toContain('\uFFFD');
      expect(text.startsWith(kept)).toBe(true);
      expect(out).toContain(`[truncated: ${Buffer.byteLength(text) - Buffer.byteLength(kept)} more bytes not shown]`);
    }
    expect(visible(capText('é'.repeat(10), 5))).toBe('éé');
    expect(visible(capText('😀'.repeat(5), 7))).toBe('😀');
  });
});

describe('CircuitBreaker', () => {
  function clocked(threshold: number, cooldownMs: number) {
    let now = 1_000;
    const breaker = new CircuitBreaker(threshold, cooldownMs, () => now);
    return { breaker, advance: (ms: number) => void (now += ms) };
  }

  it('stays closed below the threshold; consecutive failures only', () => {
    const { breaker } = clocked(3, 1_000);
    breaker.failure();
    breaker.failure();
    expect(breaker.allow()).toBe(true);
    breaker.success(); // resets the count
    breaker.failure();
    breaker.failure();
    expect(breaker.open).toBe(false);
    expect(breaker.allow()).toBe(true);
  });

  it('opens after the threshold and fails fast until the cooldown ends', () => {
    const { breaker, advance } = clocked(2, 1_000);
    expect(breaker.allow()).toBe(true);
    breaker.failure();
    expect(breaker.allow()).toBe(true);
    breaker.failure();
    expect(breaker.open).toBe(true);
    expect(breaker.allow()).toBe(false);
    advance(999);
    expect(breaker.allow()).toBe(false);
    expect(breaker.open).toBe(true);
  });

  it('half-open: one trial after the cooldown; success closes it', () => {
    const { breaker, advance } = clocked(2, 1_000);
    breaker.failure();
    breaker.failure();
    advance(1_000);
    expect(breaker.open).toBe(false);
    expect(breaker.allow()).toBe(true); // the trial
    expect(breaker.allow()).toBe(false); // only one at a time
    expect(breaker.allow()).toBe(false);
    breaker.success();
    expect(breaker.open).toBe(false);
    expect(breaker.allow()).toBe(true);
    expect(breaker.allow()).toBe(true);
    // closed again: it takes the full threshold to re-open
    breaker.failure();
    expect(breaker.allow()).toBe(true);
  });

  it('half-open: a failed trial re-opens it for another cooldown', () => {
    const { breaker, advance } = clocked(2, 1_000);
    breaker.failure();
    breaker.failure();
    advance(1_500);
    expect(breaker.allow()).toBe(true);
    breaker.failure();
    expect(breaker.open).toBe(true);
    expect(breaker.allow()).toBe(false);
    advance(999);
    expect(breaker.allow()).toBe(false);
    advance(1);
    expect(breaker.allow()).toBe(true);
    breaker.success();
    expect(breaker.open).toBe(false);
  });

  it('threshold 1 opens on the first failure', () => {
    const { breaker, advance } = clocked(1, 10);
    breaker.failure();
    expect(breaker.allow()).toBe(false);
    advance(10);
    expect(breaker.allow()).toBe(true);
  });
});
