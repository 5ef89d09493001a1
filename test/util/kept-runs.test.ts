// `mapWithKeptRun` (src/util/kept-runs.ts): a list whose leading objects are shared (frozen, the same
// objects every request: a history resent whole) is mapped as `items.map(map)` would, the results
// for those objects taken from the run the last request kept — by reference, never for another
// list's objects — and only what follows them mapped.
import { describe, expect, it } from 'vitest';
import { KeptRuns, mapWithKeptRun } from '../../src/util/kept-runs.js';
import { prng } from '../reliability/hostile-input.js';

const frozen = (n: number, tag: string) => Array.from({ length: n }, (_, i) => Object.freeze({ tag, i }));

describe('mapWithKeptRun', () => {
  it('maps what follows a kept run only, and gives what items.map gives', () => {
    const runs = new KeptRuns<readonly string[]>(64);
    const mapped: object[] = [];
    const map = (item: { tag: string; i: number }, index: number) => {
      mapped.push(item);
      return `${item.tag}${item.i}@${index}`;
    };
    const shared = frozen(20, 'a');
    const first = mapWithKeptRun(runs, [...shared, { tag: 'fresh', i: 0 }], map);
    expect(first).toEqual([...shared, { tag: 'fresh', i: 0 }].map(map));
    mapped.length = 0;
    // the next request: the same objects, two more shared ones and a fresh one
    const grown = [...shared, ...frozen(2, 'b')];
    const second = mapWithKeptRun(runs, [...grown, { tag: 'fresh', i: 1 }], map);
    expect(mapped).toEqual([grown[20], grown[21], { tag: 'fresh', i: 1 }]);
    expect(second.slice(0, 20)).toEqual(first.slice(0, 20));
    expect(second.slice(20)).toEqual(['b0@20', 'b1@21', 'fresh1@22']);
  });

  it('never takes results for other objects: equal copies, an edited item, a fork; short lists are mapped whole', () => {
    const runs = new KeptRuns<readonly string[]>(64);
    const map = (item: { tag: string; i: number }) => `${item.tag}${item.i}`;
    const shared = frozen(30, 'a');
    mapWithKeptRun(runs, shared, map);
    const copies = shared.map((item) => Object.freeze({ ...item, tag: 'c' }));
    expect(mapWithKeptRun(runs, copies, map)).toEqual(copies.map(map));
    const edited = [...shared];
    edited[5] = Object.freeze({ tag: 'edited', i: 5 });
    expect(mapWithKeptRun(runs, edited, map)).toEqual(edited.map(map));
    const fork = [...shared.slice(0, 18), ...frozen(4, 'f')];
    expect(mapWithKeptRun(runs, fork, map)).toEqual(fork.map(map));
    const short = frozen(3, 's');
    expect(mapWithKeptRun(runs, short, map)).toEqual(short.map(map));
  });

  it('keeps nothing of a list whose mapping throws', () => {
    const runs = new KeptRuns<readonly string[]>(64);
    const shared = frozen(20, 'a');
    const map = (item: { tag: string; i: number }) => {
      if (item.tag === 'bad') throw new Error(`bad at ${item.i}`);
      return `${item.tag}${item.i}`;
    };
    expect(() => mapWithKeptRun(runs, [...shared, Object.freeze({ tag: 'bad', i: 20 })], map)).toThrow('bad at 20');
    expect(runs.find(shared, 20)).toBeUndefined();
  });

  it('random resent histories, grown, forked and edited, map as items.map does', () => {
    const random = prng(424242);
    const runs = new KeptRuns<readonly string[]>(64);
    const map = (item: { tag: string; i: number }, index: number) => `${item.tag}${item.i}@${index}`;
    let history: object[] = frozen(16, 'h');
    for (let turn = 0; turn < 300; turn++) {
      const roll = random();
      if (roll < 0.6) history = [...history, ...frozen(1 + Math.floor(random() * 4), `t${turn}`)];
      else if (roll < 0.8) history = history.slice(0, Math.max(16, history.length - Math.floor(random() * 10)));
      else if (history.length > 0) {
        history = [...history];
        history[Math.floor(random() * history.length)] = Object.freeze({ tag: `e${turn}`, i: 0 });
      }
      const sent = [...history, { tag: 'fresh', i: turn }] as Array<{ tag: string; i: number }>;
      expect(mapWithKeptRun(runs, sent, map)).toEqual(sent.map(map));
    }
  });
});
