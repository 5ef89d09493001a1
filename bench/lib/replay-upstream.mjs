// A chat-completions upstream that reads every request body to its end and answers each with the
// same recorded bytes (an answer the simulator gave, sent by the parent over IPC). For measuring
// what a gateway adds to a request of several MB: the simulator parses every body (≈ 20–80 ms for
// 5 MB, most of it allocation and GC) and its spread hides the gateway's milliseconds; this
// upstream's cost is the bytes on the socket, the same for the direct request and the gateway's.
// It keeps the last body it read, for the parent to replay directly.
import { createServer } from 'node:http';

let answer = { status: 200, contentType: 'application/json', body: Buffer.from('{}') };
let lastBody = Buffer.alloc(0);

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    lastBody = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    res.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': answer.body.length });
    res.end(answer.body);
  });
});
server.keepAliveTimeout = 30_000;

process.on('message', (msg) => {
  if (msg?.cmd === 'answer') {
    answer = { status: 200, contentType: msg.contentType, body: Buffer.from(msg.body, 'utf8') };
    process.send?.({ id: msg.id });
  } else if (msg?.cmd === 'last') {
    process.send?.({ id: msg.id, body: lastBody.toString('utf8') });
  }
});
process.on('disconnect', () => server.close(() => process.exit(0)));
const stop = () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

server.listen(0, '127.0.0.1', () => process.send?.({ ready: true, port: server.address().port }));
