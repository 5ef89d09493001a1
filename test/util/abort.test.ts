import { describe, expect, it } from 'vitest';
import { abortSignalOf, TurnAbort, untilAborted } from '../../src/util/abort.js';

describe('TurnAbort (a request abort that behaves as AbortController and its signal)', () => {
  it('aborts once: the first reason wins, listeners run once in order, a removed one does not', () => {
    const abort = new TurnAbort();
    const calls: string[] = [];
    const removed = () => calls.push('removed');
    abort.addEventListener('abort', () => calls.push(`first ${String(abort.reason)}`));
    abort.addEventListener('abort', removed);
    abort.addEventListener('abort', () => calls.push('second'), { once: true });
    abort.removeEventListener('abort', removed);
    expect(abort.aborted).toBe(false);
    abort.abort('why');
    abort.abort('again');
    expect(abort.aborted).toBe(true);
    expect(abort.reason).toBe('why');
    expect(calls).toEqual(['first why', 'second']);
    // as on an AbortSignal: a listener added after the abort never runs
    abort.addEventListener('abort', () => calls.push('late'));
    abort.abort('third');
    expect(calls).toEqual(['first why', 'second']);
  });

  it('without a reason aborts with an AbortError DOMException, as AbortController does', () => {
    const abort = new TurnAbort();
    abort.abort();
    const native = new AbortController();
    native.abort();
    expect(abort.reason).toBeInstanceOf(DOMException);
    expect((abort.reason as DOMException).name).toBe((native.signal.reason as DOMException).name);
  });

  it('a listener that throws does not keep the others from running', async () => {
    const abort = new TurnAbort();
    const ran: string[] = [];
    const uncaught = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    abort.addEventListener('abort', () => {
      throw new Error('listener failed');
    });
    abort.addEventListener('abort', () => ran.push('after'));
    abort.abort();
    expect(ran).toEqual(['after']);
    expect(((await uncaught) as Error).message).toBe('listener failed');
  });

  it('makes a real AbortSignal only when asked, and it follows the abort (before and after it was made)', () => {
    const early = new TurnAbort();
    const signal = early.signal;
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(early.signal).toBe(signal);
    let heard: unknown;
    signal.addEventListener('abort', () => (heard = signal.reason));
    early.abort('stop');
    expect(signal.aborted).toBe(true);
    expect(heard).toBe('stop');

    const late = new TurnAbort();
    late.abort('gone');
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toBe('gone');
  });

  it('abortSignalOf gives a real AbortSignal for either kind', () => {
    const native = new AbortController().signal;
    expect(abortSignalOf(native)).toBe(native);
    const abort = new TurnAbort();
    expect(abortSignalOf(abort)).toBe(abort.signal);
  });

  it('untilAborted rejects with the reason and stops watching once settled', async () => {
    const abort = new TurnAbort();
    const never = new Promise<string>(() => undefined);
    const waiting = untilAborted(never, abort);
    abort.abort('client left');
    await expect(waiting).rejects.toBe('client left');

    const other = new TurnAbort();
    await expect(untilAborted(Promise.resolve('done'), other)).resolves.toBe('done');
    // its listener was removed: aborting later calls nothing that could reject twice
    expect((other as unknown as { listeners: unknown[] }).listeners).toHaveLength(0);
  });
});
