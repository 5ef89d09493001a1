// The foreground turns a shutdown waits for (src/http/inflight.ts): counted while they run, drained
// when the last one ends, and every one still running aborted with the shutdown's reason.
import { describe, expect, it } from 'vitest';
import { InflightTurns } from '../../src/http/inflight.js';

describe('InflightTurns', () => {
  it('counts the running turns in any order of ending; ending one twice changes nothing', () => {
    const turns = new InflightTurns();
    const [a, b, c] = [new AbortController(), new AbortController(), new AbortController()].map((controller) => turns.add(controller));
    expect(turns.size).toBe(3);
    turns.delete(b!);
    turns.delete(b!);
    expect(turns.size).toBe(2);
    turns.delete(c!);
    turns.delete(a!);
    expect(turns.size).toBe(0);
    // the list is whole again: a new turn after all others ended is counted and aborted alone
    const d = new AbortController();
    turns.add(d);
    expect(turns.abortAll(new Error('stop'))).toBe(1);
    expect(d.signal.aborted).toBe(true);
  });

  it('drained() resolves true when the last turn ends, false when the time runs out first', async () => {
    const turns = new InflightTurns();
    await expect(turns.drained(10)).resolves.toBe(true);
    const first = turns.add(new AbortController());
    const second = turns.add(new AbortController());
    const waiting = turns.drained(5_000);
    turns.delete(first);
    setTimeout(() => turns.delete(second), 10);
    await expect(waiting).resolves.toBe(true);
    turns.add(new AbortController());
    await expect(turns.drained(20)).resolves.toBe(false);
  });

  it('abortAll aborts every running turn with the reason, the ended ones not', () => {
    const turns = new InflightTurns();
    const controllers = Array.from({ length: 5 }, () => new AbortController());
    const entries = controllers.map((controller) => turns.add(controller));
    turns.delete(entries[0]!);
    turns.delete(entries[3]!);
    const reason = new Error('shutting down');
    expect(turns.abortAll(reason)).toBe(3);
    expect(controllers.map((controller) => controller.signal.aborted)).toEqual([false, true, true, false, true]);
    expect(controllers[1]!.signal.reason).toBe(reason);
  });
});
