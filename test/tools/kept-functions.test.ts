// A resent tool list declares the same functions every request (src/tools/kept-functions.ts), so
// the upstream request's tool list is found by reference (src/upstream/kept-tools.ts). The bytes
// must always be exactly JSON.stringify of the request's list, kept or not.
import { describe, expect, it } from 'vitest';
import type { ModelFunction } from '../../src/protocol/model.js';
import { keptFunction } from '../../src/tools/kept-functions.js';
import { parseTools, registerTools } from '../../src/tools/registry.js';
import { keptToolsBytes } from '../../src/upstream/kept-tools.js';
import { intern } from '../../src/util/interned-member.js';

const ctx = { logOnce() {}, log: {}, executionFor: () => undefined, request: { include: [], model: 'm', priorItems: [], tenant: '' } } as any;
const chatTools = (functions: ModelFunction[]) => functions.map((fn) => ({ type: 'function' as const, function: fn }));

describe('kept functions', () => {
  it('gives the kept function for a kept schema while name, description and strict are the same', () => {
    const schema = intern({ type: 'object', properties: { a: { type: 'string' } } });
    const first = keptFunction({ name: 'f', description: 'd', parameters: schema });
    expect(Object.isFrozen(first)).toBe(true);
    expect(keptFunction({ name: 'f', description: 'd', parameters: schema })).toBe(first);
    for (const other of [{ name: 'g', description: 'd' }, { name: 'f', description: 'e' }, { name: 'f', description: 'd', strict: true }]) {
      const own = intern({ type: 'object' });
      const kept = keptFunction({ name: 'f', description: 'd', parameters: own });
      const fn = keptFunction({ ...other, parameters: own });
      expect(fn).not.toBe(kept);
      expect(fn).toEqual({ ...other, parameters: own });
    }
    // a schema of the request's own: the function as made
    const own = { name: 'f', parameters: { type: 'object' } };
    expect(keptFunction(own)).toBe(own);
    expect(Object.isFrozen(own)).toBe(false);
  });

  it("declares a resent list's functions (plain and namespaced) as the same objects, and its bytes are found by reference and exact", () => {
    const tools = intern([
      { type: 'function', name: 'exec', description: 'Runs.', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } },
      { type: 'namespace', name: 'crm', description: 'CRM.', tools: [{ type: 'function', name: 'find', description: 'Finds “✓”.', parameters: { type: 'object' } }] },
    ]);
    const declared = () => registerTools(parseTools(tools), ctx).visibleFunctions();
    const a = declared();
    const b = declared();
    expect(b).toHaveLength(2);
    b.forEach((fn, i) => expect(fn).toBe(a[i]));
    const bytes = keptToolsBytes(chatTools(a));
    expect(bytes.toString()).toBe(JSON.stringify(chatTools(a)));
    expect(keptToolsBytes(chatTools(b))).toBe(bytes);
    // another list starting with the same function: its own bytes, exactly
    const other = [a[0], { name: 'extra', parameters: { type: 'object' } }];
    expect(keptToolsBytes(chatTools(other)).toString()).toBe(JSON.stringify(chatTools(other)));
    expect(keptToolsBytes(chatTools([a[0]])).toString()).toBe(JSON.stringify(chatTools([a[0]])));
    // a list the request made itself: its own bytes every time
    const own = registerTools(parseTools(JSON.parse(JSON.stringify(tools))), ctx).visibleFunctions();
    expect(own[0]).not.toBe(a[0]);
    expect(keptToolsBytes(chatTools(own)).toString()).toBe(JSON.stringify(chatTools(own)));
  });
});
