// Why the hot path freezes the objects it shares across requests but not the long lists that hold
// them (src/protocol/chat-messages.ts `keep`, src/engine/loop.ts): on the V8 that Node 20 ships,
// `concat` (as receiver or argument), `slice`, `some`, `every`, `filter` and `for … of` over a
// frozen array take a generic element-by-element path, 4–100 × slower than over the same array
// unfrozen; indexing, spread and `map` are alike. A resent history of 12,000 items went through such
// copies on every request (stop 44 in bench/README.md).
//
//   node bench/frozen-arrays.mjs      (no build needed; prints µs per operation)

const N = Number(process.env.BENCH_FROZEN_ITEMS ?? 12_000);
const REPEAT = Number(process.env.BENCH_FROZEN_REPEAT ?? 500);
const items = Array.from({ length: N }, (_, i) => Object.freeze({ role: 'user', content: `message ${i}` }));
const plain = items.slice();
const frozen = Object.freeze(items.slice());
const one = [{ role: 'user', content: 'new' }];

const operations = {
  'list.concat(one)': (list) => list.concat(one).length,
  'one.concat(list)': (list) => one.concat(list).length,
  'list.slice()': (list) => list.slice().length,
  'list.some(…)': (list) => (list.some((x) => x === null) ? 0 : 1),
  'list.every(…)': (list) => (list.every((x) => x !== null) ? 1 : 0),
  'list.filter(…)': (list) => list.filter((x) => x !== null).length,
  '[...list]': (list) => [...list].length,
  'list.map(…)': (list) => list.map((x) => x).length,
  'for (const x of list)': (list) => {
    let n = 0;
    for (const x of list) if (x !== null) n++;
    return n;
  },
};

/** µs per operation on `list`, after a warm-up. */
function measure(operation, list) {
  let sink = 0;
  for (let i = 0; i < 50; i++) sink += operation(list);
  const started = process.hrtime.bigint();
  for (let i = 0; i < REPEAT; i++) sink += operation(list);
  const us = Number(process.hrtime.bigint() - started) / 1000 / REPEAT;
  return sink > 0 ? us : NaN;
}

console.log(`node ${process.version}, arrays of ${N} frozen objects, ${REPEAT} operations each`);
console.log(`${'operation'.padEnd(24)} ${'unfrozen'.padStart(10)} ${'frozen'.padStart(10)}  ratio`);
for (const [name, operation] of Object.entries(operations)) {
  const unfrozenUs = measure(operation, plain);
  const frozenUs = measure(operation, frozen);
  console.log(`${name.padEnd(24)} ${unfrozenUs.toFixed(1).padStart(8)} µs ${frozenUs.toFixed(1).padStart(8)} µs  ${(frozenUs / unfrozenUs).toFixed(1)} ×`);
}

// a long unfrozen list joined with a frozen list of two: the frozen argument alone sends the whole
// join down the slow path (src/engine/held-history.ts `appended` joins a turn's new model items so)
const two = [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }];
const joinUs = measure((list) => plain.concat(list).length, two);
const frozenJoinUs = measure((list) => plain.concat(list).length, Object.freeze(two.slice()));
console.log(`${'long.concat(two)'.padEnd(24)} ${joinUs.toFixed(1).padStart(8)} µs ${frozenJoinUs.toFixed(1).padStart(8)} µs  ${(frozenJoinUs / joinUs).toFixed(1)} ×  (only the two-item argument frozen or not)`);
