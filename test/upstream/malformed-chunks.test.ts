// Upstream chunks are checked where they are parsed (issue #10): a chunk whose fields are not what
// the decoders read ends the response as upstream_invalid_response naming the bad field — a 502
// for a blocking request, a terminal response.failed saying so for a streamed one — never a TypeError deep
// in the engine. The upstream here is a tiny local server that streams the chunks given to it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>;

/** An upstream that answers every completion request with `next()` as SSE data lines (then [DONE]). */
async function chunkUpstream(next: () => readonly unknown[]): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const chunk of next()) res.write(`data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}

const hello = { choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' } }] };
const call = (fields: Json) => ({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' }, ...fields }] } }] });

const CHAT_CASES: Array<{ name: string; chunk: unknown; path: string }> = [
  { name: 'choices not an array', chunk: { choices: { delta: { content: 'x' } } }, path: "'choices' is not an array" },
  { name: 'a choice not an object', chunk: { choices: ['x'] }, path: "'choices[0]' is not an object" },
  { name: 'content not a string', chunk: { choices: [{ delta: { content: 42 } }] }, path: "'choices[0].delta.content' is not a string" },
  { name: 'tool_calls not an array', chunk: { choices: [{ delta: { tool_calls: { index: 0 } } }] }, path: "'choices[0].delta.tool_calls' is not an array" },
  { name: 'a tool call index not a number', chunk: call({ index: '0' }), path: "'choices[0].delta.tool_calls[0].index' is not an integer" },
  { name: 'arguments not a string', chunk: call({ function: { name: 'f', arguments: { a: 1 } } }), path: "'choices[0].delta.tool_calls[0].function.arguments' is not a string" },
  { name: 'a chunk that is not an object', chunk: '[1,2]', path: "'(chunk)' is not a JSON object" },
];

const RESPONSES_CASES: Array<{ name: string; chunk: unknown; path: string }> = [
  { name: 'a text delta not a string', chunk: { type: 'response.output_text.delta', delta: ['x'] }, path: "'delta' is not a string" },
  { name: 'a function call without a name', chunk: { type: 'response.output_item.added', output_index: 0, item: { type: 'function_call', call_id: 'c' } }, path: "'item.name' is not a string" },
  { name: 'an output_index not a number', chunk: { type: 'response.function_call_arguments.delta', output_index: 'zero', delta: '{}' }, path: "'output_index' is not an integer" },
  { name: 'an event without a type', chunk: { delta: 'x' }, path: "'type' is not a string" },
];

for (const dialect of ['chat', 'responses'] as const) {
  describe(`malformed ${dialect} upstream chunks`, () => {
    let queue: unknown[][] = [];
    let upstream: { server: Server; url: string };
    let tg: TestGateway;
    beforeAll(async () => {
      upstream = await chunkUpstream(() => queue.shift() ?? []);
      tg = await startTestGateway({ config: { upstream: { url: upstream.url, maxRetries: 0, ...(dialect === 'responses' ? { api: 'responses' } : {}) } } });
    });
    afterAll(async () => {
      await tg.close();
      upstream.server.closeAllConnections();
      await new Promise((resolve) => upstream.server.close(resolve));
    });
    const cases = dialect === 'chat' ? CHAT_CASES : RESPONSES_CASES;
    const first = dialect === 'chat' ? hello : { type: 'response.output_text.delta', output_index: 0, delta: 'Hel' };
    const post = (stream: boolean) =>
      fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi', stream, tools: [{ type: 'function', name: 'f' }] }) });

    for (const { name, chunk, path } of cases) {
      it(`${name}: a blocking request is a 502 upstream_invalid_response naming the field`, async () => {
        queue = [[first, chunk]];
        const res = await post(false);
        const body = (await res.json()) as Json;
        expect(res.status).toBe(502);
        expect(body.error.code).toBe('upstream_invalid_response');
        expect(body.error.message).toContain(path);
      });

      it(`${name}: a streamed request ends with response.failed naming the field`, async () => {
        queue = [[first, chunk]];
        const events = await readSse(await post(true));
        expect(events[0].type).toBe('response.created');
        const last = events.at(-1)!;
        expect(last.type).toBe('response.failed');
        // a failed response's error carries OpenAI's code for a failure on the serving side; the message says what the upstream sent
        expect(last.response.error.code).toBe('server_error');
        expect(last.response.error.message).toContain(path);
        expect(last.response.error.message).toContain('The upstream sent an invalid');
      });
    }
  });
}
