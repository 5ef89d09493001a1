import { describe, expect, it, vi } from 'vitest';
import { classifyRound } from '../../src/engine/classify.js';
import type { PendingGatewayCall } from '../../src/engine/types.js';
import { runGatewayCalls } from '../../src/engine/scheduler.js';
import type { GatewayExecution, ItemEmitter, RegistryEntry } from '../../src/tools/types.js';
import { sleep } from '../helpers/executions.js';

interface Trace {
  events: string[];
  active: number;
  maxActive: number;
  activeByName: Map<string, number>;
  maxByName: Map<string, number>;
  aborted: string[];
}

function newTrace(): Trace {
  return { events: [], active: 0, maxActive: 0, activeByName: new Map(), maxByName: new Map(), aborted: [] };
}

/** An execution whose calls sleep `ms` (from args), throw on `fail`, and record overlap. */
function sleepingExecution(trace: Trace, opts: { parallelSafe: boolean; timeoutMs?: number }): GatewayExecution {
  return {
    parallelSafe: opts.parallelSafe,
    timeoutMs: opts.timeoutMs ?? 2_000,
    begin: (inv) => trace.events.push(`begin ${inv.call.callId}`),
    async run(inv) {
      const name = inv.call.modelName;
      trace.active++;
      trace.maxActive = Math.max(trace.maxActive, trace.active);
      trace.activeByName.set(name, (trace.activeByName.get(name) ?? 0) + 1);
      trace.maxByName.set(name, Math.max(trace.maxByName.get(name) ?? 0, trace.activeByName.get(name)!));
      try {
        await sleep(Number(inv.args.ms ?? 10), inv.signal);
        if (inv.args.fail) throw new Error(`boom ${inv.call.callId}`);
        return { kind: 'ok', output: `ok ${inv.call.callId}` };
      } catch (err) {
        if (inv.signal.aborted) trace.aborted.push(inv.call.callId);
        throw err;
      } finally {
        trace.active--;
        trace.activeByName.set(name, trace.activeByName.get(name)! - 1);
      }
    },
    end: (inv, outcome) => trace.events.push(`end ${inv.call.callId} ${outcome.kind === 'ok' ? 'ok' : 'error'}`),
  };
}

function entry(name: string, execution: GatewayExecution): RegistryEntry {
  return { modelName: name, fn: { name }, shape: 'gateway', identity: { type: 'test', name }, owner: 'gateway', execution, declaredAt: 'tools[0]' };
}

function call(id: string, e: RegistryEntry | undefined, args: Record<string, unknown> | string, name = e?.modelName ?? 'missing'): PendingGatewayCall {
  return { call: { callId: id, modelName: name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }, entry: e };
}

const emitter: ItemEmitter = { add: () => 0, event: () => {}, done: () => {}, newId: (p) => `${p}_x`, registerSources: (s) => s.map((_, i) => i + 1) };

describe('scheduler', () => {
  it('keeps at most max_concurrent_gateway_calls running (sliding window)', async () => {
    const trace = newTrace();
    const tools = [0, 1, 2, 3, 4, 5].map((i) => entry(`t${i}`, sleepingExecution(trace, { parallelSafe: true })));
    const calls = tools.map((t, i) => call(`c${i}`, t, { ms: 30 }));
    const started = Date.now();
    const outcomes = await runGatewayCalls(calls, { maxConcurrent: 2 }, emitter, new AbortController().signal);
    expect(trace.maxActive).toBe(2);
    expect(outcomes.map((o) => o.output)).toEqual(calls.map((c) => `ok ${c.call.callId}`));
    expect(Date.now() - started).toBeGreaterThanOrEqual(85); // three waves of 30 ms
  });

  it('serializes calls to one name unless parallel-safe; different tools overlap', async () => {
    const trace = newTrace();
    const serial = entry('serial', sleepingExecution(trace, { parallelSafe: false }));
    const parallel = entry('parallel', sleepingExecution(trace, { parallelSafe: true }));
    const calls = [call('s1', serial, { ms: 20 }), call('p1', parallel, { ms: 20 }), call('s2', serial, { ms: 20 }), call('p2', parallel, { ms: 20 }), call('s3', serial, { ms: 20 })];
    await runGatewayCalls(calls, { maxConcurrent: 8 }, emitter, new AbortController().signal);
    expect(trace.maxByName.get('serial')).toBe(1);
    expect(trace.maxByName.get('parallel')).toBe(2);
    expect(trace.maxActive).toBeGreaterThanOrEqual(2);
  });

  it('isolates a timeout and a throw: the other calls complete, results stay in call order', async () => {
    const trace = newTrace();
    const quick = entry('quick', sleepingExecution(trace, { parallelSafe: true, timeoutMs: 50 }));
    const calls = [call('slow', quick, { ms: 1_000 }), call('bad', quick, { ms: 5, fail: true }), call('good', quick, { ms: 5 })];
    const started = Date.now();
    const outcomes = await runGatewayCalls(calls, { maxConcurrent: 4 }, emitter, new AbortController().signal);
    expect(Date.now() - started).toBeLessThan(500);
    expect(outcomes[0]).toMatchObject({ kind: 'fatal', output: expect.stringMatching(/timed out after 50 ms/) });
    expect(outcomes[1]).toMatchObject({ kind: 'fatal', output: 'Error: boom bad', reason: 'boom bad' });
    expect(outcomes[2]).toEqual({ kind: 'ok', output: 'ok good' });
    expect(trace.aborted).toContain('slow');
    // public items open in call order before anything runs, and every one is closed
    expect(trace.events.slice(0, 3)).toEqual(['begin slow', 'begin bad', 'begin good']);
    expect(trace.events.filter((e) => e.startsWith('end')).sort()).toEqual(['end bad error', 'end good ok', 'end slow error']);
  });

  it('propagates an abort to every running slot', async () => {
    const trace = newTrace();
    const tool = entry('t', sleepingExecution(trace, { parallelSafe: true }));
    const controller = new AbortController();
    const calls = [call('a', tool, { ms: 5_000 }), call('b', tool, { ms: 5_000 })];
    setTimeout(() => controller.abort(), 20);
    const started = Date.now();
    const outcomes = await runGatewayCalls(calls, { maxConcurrent: 4 }, emitter, controller.signal);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(trace.aborted.sort()).toEqual(['a', 'b']);
    expect(outcomes.every((o) => o.kind === 'fatal')).toBe(true);
  });

  it('answers unknown names and unconfigured or mis-called tools without running anything', async () => {
    const trace = newTrace();
    const tool = entry('t', sleepingExecution(trace, { parallelSafe: true }));
    const unconfigured: RegistryEntry = { ...entry('u', tool.execution!), execution: undefined };
    const outcomes = await runGatewayCalls(
      [call('x', undefined, {}, 'ghost'), call('y', unconfigured, {}), call('z', tool, '[1,2]')],
      { maxConcurrent: 4 },
      emitter,
      new AbortController().signal,
    );
    expect(outcomes[0].output).toMatch(/unknown tool 'ghost'/);
    expect(outcomes[1].output).toMatch(/not available/);
    expect(outcomes[2].output).toMatch(/not a valid JSON object/);
    expect(trace.maxActive).toBe(0);
    expect(trace.events).toEqual(['begin z', 'end z error']);
  });
});

describe('scheduler with an executor that ignores its abort', () => {
  it('calls that finish leave no timer behind (the stop grace is only for a call cut short)', async () => {
    const trace = newTrace();
    const e = entry('quick', sleepingExecution(trace, { parallelSafe: false }));
    // every timer made while the round runs, until it fires or is cleared
    const pending = new Set<NodeJS.Timeout>();
    const realSet = globalThis.setTimeout;
    const realClear = globalThis.clearTimeout;
    const setSpy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
      const timer: NodeJS.Timeout = realSet((...a: unknown[]) => (pending.delete(timer), fn(...a)), ms, ...args);
      pending.add(timer);
      return timer;
    }) as typeof setTimeout);
    const clearSpy = vi.spyOn(globalThis, 'clearTimeout').mockImplementation(((timer: NodeJS.Timeout) => (pending.delete(timer), realClear(timer))) as typeof clearTimeout);
    try {
      const outcomes = await runGatewayCalls([call('a', e, { ms: 1 }), call('b', e, { ms: 1 }), call('c', e, { ms: 1 })], { maxConcurrent: 4 }, emitter, new AbortController().signal);
      expect(outcomes.map((o) => o.kind)).toEqual(['ok', 'ok', 'ok']);
      // the slots release their window after reporting their outcomes
      await new Promise((resolve) => setImmediate(resolve));
      expect(pending.size).toBe(0);
    } finally {
      setSpy.mockRestore();
      clearSpy.mockRestore();
    }
  });

  it('a timed-out call keeps its same-name turn until it really stops, so calls never overlap', async () => {
    let executing = 0;
    let maxExecuting = 0;
    const stubborn: GatewayExecution = {
      parallelSafe: false,
      timeoutMs: 50,
      begin: () => undefined,
      async run() {
        executing++;
        maxExecuting = Math.max(maxExecuting, executing);
        await sleep(120); // ignores inv.signal on purpose
        executing--;
        return { kind: 'ok', output: 'late' };
      },
      end: () => {},
    };
    const tool = entry('stubborn', stubborn);
    const outcomes = await runGatewayCalls([call('a', tool, {}), call('b', tool, {}), call('c', tool, {})], { maxConcurrent: 4 }, emitter, new AbortController().signal);
    expect(outcomes.every((o) => o.kind === 'fatal' && /timed out/.test(o.output))).toBe(true);
    expect(maxExecuting).toBe(1);
  });
});

describe('classifyRound', () => {
  const after = (hasClientCalls: boolean, gatewayResults: number, round: number, maxRounds: number) => classifyRound({ hasClientCalls, gatewayResults, round, maxRounds });

  it('decides continue, done, requires_client_action and incomplete', () => {
    expect(after(true, 2, 0, 10)).toEqual({ next: 'requires_client_action' });
    expect(after(false, 0, 0, 10)).toEqual({ next: 'done' });
    expect(after(false, 1, 0, 10)).toEqual({ next: 'continue' });
    expect(after(false, 1, 9, 10)).toEqual({ next: 'incomplete', reason: 'max_tool_rounds' });
    expect(after(true, 1, 9, 10)).toEqual({ next: 'requires_client_action' });
  });

  it('ends a cut-short output incomplete whatever it called, and a capped round unless the client must act', () => {
    expect(classifyRound({ cutShort: 'max_output_tokens', hasClientCalls: true, gatewayResults: 0, round: 0, maxRounds: 10 })).toEqual({ next: 'incomplete', reason: 'max_output_tokens' });
    expect(classifyRound({ cutShort: 'content_filter', hasClientCalls: false, gatewayResults: 0, round: 0, maxRounds: 10 })).toEqual({ next: 'incomplete', reason: 'content_filter' });
    expect(classifyRound({ hasClientCalls: false, gatewayResults: 1, toolCallsCapped: true, round: 0, maxRounds: 10 })).toEqual({ next: 'incomplete', reason: 'max_tool_calls' });
    expect(classifyRound({ hasClientCalls: true, gatewayResults: 1, toolCallsCapped: true, round: 0, maxRounds: 10 })).toEqual({ next: 'requires_client_action' });
  });
});

describe('registry invariant', () => {
  it('a registered name whose ownership and call shape disagree fails the round with server_error', async () => {
    const { ToolRegistry } = await import('../../src/tools/registry.js');
    const { RoundTranslator, RegistryInvariantError } = await import('../../src/engine/round.js');
    const { ResponseAccumulator } = await import('../../src/engine/accumulator.js');
    const registry = new ToolRegistry();
    registry.add({ modelName: 'broken', fn: { name: 'broken' }, shape: 'gateway', identity: { type: 'function', name: 'broken' }, owner: 'client', declaredAt: 'tools[0]' });
    const acc = new ResponseAccumulator({ output: [] } as any, null);
    const translator = new RoundTranslator(acc, registry);
    expect(() => translator.push({ kind: 'tool_call_start', index: 0, callId: 'c1', name: 'broken' })).toThrow(RegistryInvariantError);
    try {
      translator.push({ kind: 'tool_call_start', index: 1, callId: 'c2', name: 'broken' });
    } catch (err) {
      expect((err as InstanceType<typeof RegistryInvariantError>).status).toBe(500);
      expect((err as Error).message).toMatch(/tools\[0\]/);
    }
  });
});

describe('one scheduler per turn', () => {
  it('a timed-out non-parallel call still stopping blocks the next call to that tool in a later round', async () => {
    let executing = 0;
    let maxExecuting = 0;
    const stubborn: GatewayExecution = {
      parallelSafe: false,
      timeoutMs: 50,
      begin: () => undefined,
      async run() {
        executing++;
        maxExecuting = Math.max(maxExecuting, executing);
        await sleep(300); // ignores inv.signal on purpose
        executing--;
        return { kind: 'ok', output: 'late' };
      },
      end: () => {},
    };
    const tool = entry('stubborn', stubborn);
    const { TurnScheduler } = await import('../../src/engine/scheduler.js');
    const scheduler = new TurnScheduler({ maxConcurrent: 4 });
    const round0 = await scheduler.run([call('a', tool, {})], emitter, new AbortController().signal);
    expect(round0[0].output).toMatch(/timed out/);
    // round 0 is reported (timed out) while its call is still running: round 1's call must wait
    expect(executing).toBe(1);
    await scheduler.run([call('b', tool, {})], emitter, new AbortController().signal);
    expect(maxExecuting).toBe(1);
  });
});
