// Why the hot path copies objects with `withFields` (src/util/objects.ts) instead of `{ ...base, extra }`:
// on the V8 that Node 20 ships, an object literal that starts with a spread and then adds keys the
// spread did not bring takes a slow path (≈ 1 µs per added key); a plain spread, a spread that only
// overrides existing keys, and Object.assign stay in the tens of nanoseconds.
//
//   node bench/object-spread.mjs      (after `npm run build`; prints ns per copy)
import { withFields } from '../dist/util/objects.js';

const N = Number(process.env.BENCH_SPREAD_N ?? 300_000);
const base = { model: 'm', temperature: 1, maxOutputTokens: 100 };
const items = [];

function measure(name, make) {
  for (let i = 0; i < 10_000; i++) make();
  const started = process.hrtime.bigint();
  let keep;
  for (let i = 0; i < N; i++) keep = make();
  const ns = Number(process.hrtime.bigint() - started) / N;
  console.log(`${name.padEnd(48)} ${ns.toFixed(0).padStart(6)} ns`);
  return keep === undefined ? NaN : ns;
}

console.log(`node ${process.version}, ${N} copies each`);
const slow = measure('{ ...base, items, tools, toolChoice }', () => ({ ...base, items, tools: items, toolChoice: 'auto' }));
measure('{ ...base, model } (overrides a key)', () => ({ ...base, model: 'n' }));
measure('{ ...base }', () => ({ ...base }));
const fast = measure('withFields(base, { items, tools, toolChoice })', () => withFields(base, { items, tools: items, toolChoice: 'auto' }));
console.log(`ratio: ${(slow / fast).toFixed(1)} ×`);
