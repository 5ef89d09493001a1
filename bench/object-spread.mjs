// Why the hot path copies objects with `withFields` (src/util/objects.ts) and a client's objects with
// `withAddedFields` (src/protocol/client-objects.ts) instead of `{ ...base, extra }`:
// on the V8 that Node 20 ships, an object literal that starts with a spread and then adds keys the
// spread did not bring takes a slow path (≈ 1 µs per added key); a plain spread, a spread that only
// overrides existing keys, and Object.assign stay in the tens of nanoseconds.
//
//   node bench/object-spread.mjs      (after `npm run build`; prints ns per copy)
import { withAddedFields } from '../dist/protocol/client-objects.js';
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
  console.log(`${name.padEnd(58)} ${ns.toFixed(0).padStart(6)} ns`);
  return keep === undefined ? NaN : ns;
}

console.log(`node ${process.version}, ${N} copies each`);
const slow = measure('{ ...base, items, tools, toolChoice }', () => ({ ...base, items, tools: items, toolChoice: 'auto' }));
measure('{ ...base, model } (overrides a key)', () => ({ ...base, model: 'n' }));
measure('{ ...base }', () => ({ ...base }));
const fast = measure('withFields(base, { items, tools, toolChoice })', () => withFields(base, { items, tools: items, toolChoice: 'auto' }));
console.log(`ratio: ${(slow / fast).toFixed(1)} ×`);

// a client's object (parsed JSON): a function tool echoed with its optional fields made explicit
// (src/tools/function/handler.ts), declared without them and with them
const bare = JSON.parse('{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{}}}');
const full = JSON.parse('{"type":"function","name":"shell","description":"Runs a command.","strict":false,"parameters":{"type":"object","properties":{}}}');
const echoFields = (raw) => ({ description: raw.description ?? null, parameters: raw.parameters ?? null, strict: raw.strict ?? null });
const slowClient = measure('{ ...tool, description, parameters, strict } (adds 2)', () => ({ ...bare, description: bare.description ?? null, parameters: bare.parameters ?? null, strict: bare.strict ?? null }));
const fastClient = measure('withAddedFields(tool, …) (adds 2)', () => withAddedFields(bare, echoFields(bare)));
measure('{ ...tool, description, parameters, strict } (overrides)', () => ({ ...full, description: full.description ?? null, parameters: full.parameters ?? null, strict: full.strict ?? null }));
measure('withAddedFields(tool, …) (overrides: the spread)', () => withAddedFields(full, echoFields(full)));
console.log(`ratio (adds): ${(slowClient / fastClient).toFixed(1)} ×`);
