// Bursts of work spread over event-loop turns (src/http/loop-slices.ts): a lone request starts at
// once; in a burst each loop turn does at most a slice of work, in arrival order; a disconnect's
// abort never runs inside the close burst itself.
import { describe, expect, it } from 'vitest';
import { later, turnSlot } from '../../src/http/loop-slices.js';

/** Busy-waits `ms` of wall time (a request's synchronous work). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** Counts loop turns: a setImmediate chain ticking until stopped. */
function loopTurns(): { current: () => number; stop: () => void } {
  let turns = 0;
  let running = true;
  const tick = () => {
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  return { current: () => turns, stop: () => (running = false) };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('loop slices', () => {
  it('a lone request on an idle loop starts at once', async () => {
    await nextTurn();
    expect(turnSlot()).toBeUndefined();
  });

  it('a burst of 100 requests of 1 ms each is spread over loop turns, at most a slice per turn, in order', async () => {
    await nextTurn();
    const turns = loopTurns();
    const ranIn: number[] = [];
    const order: number[] = [];
    const burst = Array.from({ length: 100 }, async (_, i) => {
      await turnSlot();
      order.push(i);
      ranIn.push(turns.current());
      busy(1);
    });
    await Promise.all(burst);
    turns.stop();
    expect(order).toEqual([...order].sort((a, b) => a - b));
    const perTurn = new Map<number, number>();
    for (const turn of ranIn) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
    const [first, ...rest] = [...perTurn.values()];
    // the burst's first turn grants at most 16 starts before any work is done (they all ask first)
    expect(first).toBeLessThanOrEqual(16);
    // later turns run queued starts one after the other until the 4 ms slice is spent: 4 of them
    // plus the one that crossed the line
    expect(Math.max(...rest)).toBeLessThanOrEqual(5);
    expect(perTurn.size).toBeGreaterThanOrEqual(17);
  });

  it('work queued with later() runs in a later loop turn, in order', async () => {
    const ran: string[] = [];
    later(() => ran.push('a'));
    later(() => ran.push('b'));
    expect(ran).toEqual([]);
    await nextTurn();
    await nextTurn();
    expect(ran).toEqual(['a', 'b']);
  });
});
