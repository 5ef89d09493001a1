// Summarises a V8 .cpuprofile (node --cpu-prof) as text: the top functions by self time and the
// top files, so the profile can be kept in the repo without the multi-megabyte JSON.
//
//   node bench/lib/profile-summary.mjs <file.cpuprofile> [top=40] [skipMs=0]
import { readFileSync } from 'node:fs';

/** `skipMs`: samples in the first `skipMs` of the profile (start-up, warm-up) are left out. */
export function summarise(profile, top = 40, skipMs = 0) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  // samples[i] was taken in node samples[i], lasting timeDeltas[i + 1] (V8's convention)
  let t = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < skipMs * 1000) continue;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + dt);
  }
  let total = 0;
  const fns = new Map();
  const files = new Map();
  for (const [id, us] of selfUs) {
    total += us;
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    const file = url ? url.replace(/^file:\/\//, '').replace(/^.*?\/(dist|node_modules)\//, '$1/') : '(native/vm)';
    const key = `${functionName || '(anonymous)'}  ${file}${url ? `:${lineNumber + 1}` : ''}`;
    fns.set(key, (fns.get(key) ?? 0) + us);
    files.set(file, (files.get(file) ?? 0) + us);
  }
  const pct = (us) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
  const lines = [`total sampled ${(total / 1000).toFixed(0)} ms`, '', `top ${top} functions by self time:`];
  for (const [k, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${pct(us)}  ${(us / 1000).toFixed(1).padStart(8)} ms  ${k}`);
  lines.push('', 'top 25 files by self time:');
  for (const [k, us] of [...files].sort((a, b) => b[1] - a[1]).slice(0, 25)) lines.push(`${pct(us)}  ${(us / 1000).toFixed(1).padStart(8)} ms  ${k}`);
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const [file, top, skipMs] = process.argv.slice(2);
  console.log(summarise(JSON.parse(readFileSync(file, 'utf8')), Number(top ?? 40), Number(skipMs ?? 0)));
}
