// The floor a gateway is measured against: the leanest pass-through proxy Node.js and undici
// allow. node:http receives the request, undici's dispatch API (no stream objects, as the
// gateway's own upstream transport) forwards its body unchanged to the upstream, and each
// response chunk is written to the client as it arrives, and a client that leaves aborts its
// upstream request (as any correct proxy must). No parsing, no translation, no state.
// Usage: node bench/lib/bare-proxy.mjs <upstream origin>  (prints {"port": N} once listening),
// or `startBareProxy(origin)` in the benchmark's own process (bench/hotpath.mjs: the floor of an
// in-process HTTP hop beside the in-process gateway).
import http from 'node:http';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Pool } from 'undici';

/** The proxy in front of `upstream` (an origin), listening on a free port of 127.0.0.1; `close()` stops it. */
export async function startBareProxy(upstream) {
  const pool = new Pool(upstream, { connections: null, pipelining: 1, keepAliveTimeout: 30_000 });
  const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      let upstreamRequest = null;
      res.on('close', () => {
        if (!res.writableFinished) upstreamRequest?.abort(new Error('client gone'));
      });
      pool.dispatch(
        { path: req.url, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(body.length) }, body },
        {
          onRequestStart(controller) {
            upstreamRequest = controller;
          },
          onResponseStart(_controller, status, headers) {
            res.writeHead(status, { 'content-type': headers['content-type'] ?? 'application/json' });
          },
          onResponseData(_controller, chunk) {
            res.write(chunk);
          },
          onResponseEnd() {
            res.end();
          },
          onResponseError(_controller, err) {
            if (res.destroyed) return;
            if (!res.headersSent) res.writeHead(502);
            res.end(String(err));
          },
        },
      );
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => server.close(() => pool.close().then(resolve))),
  };
}

// run as a script (a child of bench/lib/procs.mjs), not imported
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const proxy = await startBareProxy(process.argv[2]);
  console.log(JSON.stringify({ port: proxy.port }));
  const stop = () => proxy.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
