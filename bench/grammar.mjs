// Grammar-check benchmark (run after `npm run build`):  node bench/grammar.mjs
//
// 1. Codex's apply_patch grammar (test/fixtures/codex/catalog-apply-patch) checking a 14 KB
//    patch (add, update with context and moves, delete, unicode, quotes): median of
//    BENCH_GRAMMAR_RUNS (200) checks after warm-up. Target < 30 ms.
// 2. Compiling that grammar (what the first request declaring apply_patch pays; cached after).
// 3. Pathological regexes — (a*)*b and (a|aa)*c against 100,000 "a"s — to show the time stays
//    linear (a backtracking engine would not finish). Reported, with the engine's step counts.
//
// Prints a table and PASS/MISS; exits 0 whatever the figures (a benchmark, not a test).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { FormatChecker } from '../dist/grammar/format-checker.js';
import { median, round } from './lib/stats.mjs';

const RUNS = Number(process.env.BENCH_GRAMMAR_RUNS ?? 200);
const TARGET_MS = 30;

const request = JSON.parse(readFileSync(new URL('../test/fixtures/codex/catalog-apply-patch/0001-request.json', import.meta.url), 'utf8'));
const grammar = (request.body ?? request).tools.find((t) => t.name === 'apply_patch').format.definition;

function patchOf(bytes) {
  const hunks = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    let hunk;
    if (i % 5 === 0) {
      hunk = `*** Add File: src/generated/file_${i}.ts\n` + Array.from({ length: 12 }, (_, k) => `+export const item${k} = "value ${k} — é 🚀 \\"quoted\\"";`).join('\n') + '\n';
    } else if (i % 7 === 0) {
      hunk = `*** Delete File: src/old/file_${i}.ts\n`;
    } else {
      hunk = `*** Update File: src/module_${i}.ts\n` + (i % 3 === 0 ? `*** Move to: src/moved/module_${i}.ts\n` : '');
      hunk += `@@ export function handler${i}(request: Request) {\n`;
      hunk += Array.from({ length: 10 }, (_, k) => `${' -+'[k % 3]}    const line${k} = compute(${k}, 'text with \\\\ backslash');`).join('\n') + '\n';
      if (i % 4 === 0) hunk += '*** End of File\n';
    }
    hunks.push(hunk);
    size += Buffer.byteLength(hunk);
  }
  return `*** Begin Patch\n${hunks.join('')}*** End Patch\n`;
}

function time(fn, runs) {
  for (let i = 0; i < Math.min(20, runs); i++) fn(); // warm-up
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    fn();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

const patch = patchOf(14 * 1024);
const compileMs = (() => {
  const start = performance.now();
  FormatChecker.compile('lark', grammar);
  return performance.now() - start;
})();
const checker = FormatChecker.compile('lark', grammar);
if (checker.check(patch) !== undefined) throw new Error(`sanity: the benchmark patch was rejected: ${checker.check(patch).message}`);
const broken = patch.replace('*** Delete File:', '*** Remove File:');
if (checker.check(broken) === undefined) throw new Error('sanity: a broken patch was accepted');

const checkMs = time(() => checker.check(patch), RUNS);
const steps = FormatChecker.countSteps(checker, patch);
const rejectMs = time(() => checker.check(broken), RUNS);

const rows = [
  ['apply_patch: compile grammar (first declaration)', `${round(compileMs, 2)} ms`, ''],
  [`apply_patch: check ${round(Buffer.byteLength(patch) / 1024, 1)} KB patch (median of ${RUNS})`, `${round(checkMs, 2)} ms`, checkMs < TARGET_MS ? `PASS (< ${TARGET_MS} ms)` : `MISS (target < ${TARGET_MS} ms)`],
  ['apply_patch: steps per code point', `${round(steps / [...patch].length, 1)}`, ''],
  ['apply_patch: reject a broken 14 KB patch', `${round(rejectMs, 2)} ms`, ''],
];

for (const pattern of ['(a*)*b', '(a|aa)*c']) {
  const regex = FormatChecker.compile('regex', pattern);
  for (const n of [10_000, 100_000]) {
    const input = 'a'.repeat(n);
    const ms = time(() => regex.check(input), 5);
    rows.push([`regex ${pattern} vs "a"×${n.toLocaleString('en')} (rejected)`, `${round(ms, 2)} ms`, `${FormatChecker.countSteps(regex, input).toLocaleString('en')} steps`]);
  }
}

const width = Math.max(...rows.map((r) => r[0].length));
console.log('\nGrammar checks (node ' + process.version + ')\n');
for (const [name, value, note] of rows) console.log(`${name.padEnd(width)}  ${value.padStart(10)}  ${note}`);
