// Why src/util/utf8.ts exists: Node 20's own UTF-8 conversions against ICU's (`buffer.transcode`)
// for text with wide characters (above U+00FF), at the sizes a gateway meets — a Codex request
// (test/fixtures/codex, 42–47 KB with some seventy typographic quotes, dashes and arrows) and
// synthetic texts of 0.5–32 KB — and for long ASCII text (which utf8.ts encodes as its Latin-1
// bytes after a SIMD check), e.g. the events of one tick of a Codex request's stream, which echo its
// 18 KB tool list three times.
//
//   node bench/utf8.mjs        (after `npm run build`; prints µs per conversion, median of 5 runs)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { utf8Bytes, utf8Text } from '../dist/util/utf8.js';
import { median } from './lib/stats.mjs';

const codex = readFileSync(fileURLToPath(new URL('../test/fixtures/codex/fallback-tool/0002-request.json', import.meta.url)));

/** µs per call: the median of 5 timed runs of `n` calls each, after a warm-up. */
function time(fn, n) {
  for (let i = 0; i < n; i++) fn();
  const runs = [];
  for (let r = 0; r < 5; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn();
    runs.push(Number(process.hrtime.bigint() - started) / n / 1000);
  }
  return median(runs);
}

/** About `size` bytes of prose with a wide character every few words (whole characters only). */
function wide(size) {
  const piece = 'It’s “quoted” — see → 中文 and some more plain words. ';
  const bytes = Buffer.from(piece.repeat(Math.max(1, Math.round(size / Buffer.byteLength(piece)))));
  return [`${(bytes.length / 1024).toFixed(1)} KB, wide characters`, bytes];
}

const cases = [
  ['Codex request (fallback-tool/0002)', codex],
  ...[512, 4096, 8192, 32768].map((size) => wide(size)),
  ['32 KB, ASCII', Buffer.from('plain ascii {"json": [1, 2, 3]} '.repeat(1024))],
  ['64 KB, ASCII (a Codex stream tick)', Buffer.from(codexTick())],
];

/** The SSE text of `response.created`, `response.in_progress` and a few deltas, each echoing the Codex request's tools. */
function codexTick() {
  const tools = JSON.stringify(JSON.parse(codex.toString('utf8')).tools);
  let text = '';
  for (const type of ['response.created', 'response.in_progress', 'response.completed']) text += `event: ${type}\ndata: {"type":"${type}","response":{"id":"resp_1","tools":${tools}}}\n\n`;
  for (let i = 0; i < 20; i++) text += `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":" w${i}"}\n\n`;
  return text;
}

console.log(`node ${process.version}; µs per conversion (median of 5 runs)`);
console.log(`${'text'.padEnd(36)} ${'decode: toString'.padStart(17)} ${'utf8Text'.padStart(9)}   ${'encode: Buffer.from'.padStart(19)} ${'utf8Bytes'.padStart(9)}`);
for (const [name, bytes] of cases) {
  const text = bytes.toString('utf8');
  if (utf8Text(bytes) !== text || !utf8Bytes(text).equals(Buffer.from(text))) throw new Error(`${name}: the conversions disagree`);
  const n = Math.max(200, Math.round(2_000_000 / bytes.length));
  const row = [time(() => bytes.toString('utf8'), n), time(() => utf8Text(bytes), n), time(() => Buffer.from(text), n), time(() => utf8Bytes(text), n)];
  console.log(`${name.padEnd(36)} ${row[0].toFixed(1).padStart(17)} ${row[1].toFixed(1).padStart(9)}   ${row[2].toFixed(1).padStart(19)} ${row[3].toFixed(1).padStart(9)}`);
}
