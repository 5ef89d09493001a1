// The upstream body of a coding agent's request (`chatRequestBody`, src/upstream/chat-body.ts)
// with the Codex system prompt (test/fixtures/codex: 20 KB with wide characters) and a history
// the client resends whole (Codex over HTTP: `store: false`, every message a new object): µs per
// body for 1 to 901 messages, for one or several builds side by side.
//
//   node bench/chat-body.mjs [folder …]     (after `npm run build`; default: this checkout)
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const folders = (process.argv.length > 2 ? process.argv.slice(2) : [fileURLToPath(new URL('..', import.meta.url))]).map((f) => resolve(f));
const builds = await Promise.all(folders.map((folder) => import(pathToFileURL(join(folder, 'dist/upstream/chat-body.js')).href)));
const codex = JSON.parse(readFileSync(fileURLToPath(new URL('../test/fixtures/codex/fallback-tool/0002-request.json', import.meta.url)), 'utf8'));
const prompt = codex.input.find((item) => item.role === 'developer').content.map((part) => part.text).join('\n\n');
const tools = codex.tools.filter((tool) => tool.type === 'function').map(({ name, description, parameters }) => ({ type: 'function', function: { name, description, parameters } }));

/** A chat request with the prompt and `turns` resent turns (question, call, output), all new objects. */
function request(turns, wide) {
  const messages = [{ role: 'system', content: prompt }];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: 'user', content: `question ${i} ${'x'.repeat(200)}${wide ? ' “quoted” —' : ''}` });
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: 'exec_command', arguments: JSON.stringify({ cmd: `ls -la dir${i}` }) } }] });
    messages.push({ role: 'tool', tool_call_id: `call_${i}`, content: 'file '.repeat(300) });
  }
  return { model: 'local-model', messages, stream: true, stream_options: { include_usage: true }, tools, tool_choice: 'auto', parallel_tool_calls: true };
}

/** µs per body, the median of 3 timed runs (each after a warm-up), a new request every time. */
function time(build, turns, wide) {
  const runs = [];
  for (let r = 0; r < 3; r++) {
    for (let i = 0; i < 100; i++) build.chatRequestBody(request(turns, wide));
    const n = 300;
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) build.chatRequestBody(request(turns, wide));
    runs.push(Number(process.hrtime.bigint() - started) / n / 1000);
  }
  return runs.sort((x, y) => x - y)[1];
}

console.log(`µs per upstream body (building the request included), node ${process.version}; builds: ${folders.map((f, i) => `${'ABCD'[i]} ${f}`).join(', ')}`);
for (const [turns, wide] of [[0, false], [10, false], [100, false], [100, true], [300, false]]) {
  const figures = builds.map((build) => time(build, turns, wide).toFixed(1));
  console.log(`${String(1 + turns * 3).padStart(4)} messages${wide ? ', wide history' : ''}: ${figures.map((f, i) => `${'ABCD'[i]} ${f}`).join('  ')}`);
}
