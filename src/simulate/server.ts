// `switchyard simulate`: a vLLM-like OpenAI-compatible server on node:http, driven by `#sim`
// scripts in the conversation (see ./README.md). Used by the quick start, the tests and as the
// "direct upstream" baseline of the benchmarks, so the hot path stays lean: no timers when no
// delay is asked for, one `res.write` per chunk, keep-alive on, compact JSON.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  MID_STREAM_ERROR,
  buildChatChunks,
  buildChatCompletion,
  errorBody,
  newChatCompletionId,
  type ChatEncodeContext,
} from './chat-stream.js';
import { buildResponse, buildResponsesEvents, newResponseId, responsesErrorEvent } from './responses-stream.js';
import { embeddingsResponse } from './embeddings.js';
import { planRound, promptTokensOf } from './planner.js';
import type { RoundPlan, SimRequest } from './script-types.js';
import { chatRequestToSim, responsesRequestToSim } from './sim-request.js';
import { Exchange, type SimulatorRequestRecord } from './exchange.js';
import { MAX_LOGGED_BODY_BYTES, RequestBodyBudget } from './request-log.js';

export type { SimulatorRequestRecord };

export interface SimulatorOptions {
  port?: number;
  host?: string /* default 127.0.0.1 */;
  modelName?: string /* default "switchyard-sim" */;
  defaultDelayMs?: number /* default 0 */;
  /** Delay before each `/v1/embeddings` answer (default 0). */
  embeddingsDelayMs?: number;
  /**
   * The model's context length, as vLLM's `--max-model-len`: listed as `max_model_len` by
   * `/v1/models`, and a request whose prompt (plus `max_tokens`) is longer is refused with vLLM's
   * 400. Default: none (nothing listed, nothing refused).
   */
  maxModelLen?: number;
  /** How many bytes of recent request bodies the request log keeps (default 64 MB; see `MAX_LOGGED_BODY_BYTES`). */
  maxLoggedBodyBytes?: number;
}

export interface Simulator {
  /** Base URL including `/v1`, e.g. "http://127.0.0.1:45678/v1". */
  url: string;
  port: number;
  /** Every POST received, oldest first (the last ~10,000 are kept; bodies beyond the newest 64 MB are `null`). */
  requests: SimulatorRequestRecord[];
  /** Requests whose client went away before we finished writing. */
  abortedCount(): number;
  /** Requests currently being answered. */
  activeCount(): number;
  /**
   * Resolves on an abort not yet claimed by an earlier call (one that already happened, or the
   * next one); rejects after `timeoutMs` (default 5000).
   */
  waitForAbort(timeoutMs?: number): Promise<void>;
  /** Closes the server and destroys open sockets (hanging requests included). */
  close(): Promise<void>;
}

const MAX_RECORDS = 10_000;
const MAX_BODY_BYTES = 64 * 1024 * 1024;
const MAX_FAIL_KEYS = 10_000;
const JSON_HEADERS = { 'content-type': 'application/json' };
const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };
const DONE_LINE = 'data: [DONE]\n\n';

/** vLLM's refusal of a prompt longer than the model's context (both of its message forms), or null. */
function contextOverflow(sim: SimRequest, maxModelLen: number): string | null {
  const input = promptTokensOf(sim.messages);
  const completion = sim.maxTokens ?? 0;
  if (input + completion <= maxModelLen) return null;
  if (completion > 0) {
    return `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${input + completion} tokens (${input} in the messages, ${completion} in the completion). Please reduce the length of the messages or completion.`;
  }
  return `This model's maximum context length is ${maxModelLen} tokens. However, your request has ${input} input tokens. Please reduce the length of the input messages.`;
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const host = opts.host ?? '127.0.0.1';
  const modelName = opts.modelName ?? 'switchyard-sim';
  const defaultDelayMs = opts.defaultDelayMs ?? 0;
  const embeddingsDelayMs = opts.embeddingsDelayMs ?? 0;
  const startedAt = Math.floor(Date.now() / 1000);
  const modelsBody = JSON.stringify({
    object: 'list',
    data: [{ id: modelName, object: 'model', created: startedAt, owned_by: 'switchyard', ...(opts.maxModelLen ? { max_model_len: opts.maxModelLen } : {}) }],
  });

  const requests: SimulatorRequestRecord[] = [];
  const bodies = new RequestBodyBudget(opts.maxLoggedBodyBytes ?? MAX_LOGGED_BODY_BYTES, MAX_RECORDS);
  const failCounts = new Map<string, number>();
  const exchanges = new Set<Exchange>();
  const sockets = new Set<Socket>();
  let aborted = 0;
  let abortsClaimed = 0;
  let abortWaiters: Array<() => void> = [];
  let closing = false;

  const noteAbort = () => {
    aborted++;
    abortWaiters.shift()?.(); // each abort is claimed by at most one waiter
  };

  const sendJson = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, JSON_HEADERS);
    res.end(JSON.stringify(body));
  };

  const server = createServer({ keepAlive: true }, (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (req.method === 'POST' && (path === '/v1/chat/completions' || path === '/v1/responses' || path === '/v1/embeddings')) {
      readBody(req, res, path);
    } else if (req.method === 'GET' && path === '/v1/models') {
      res.writeHead(200, JSON_HEADERS);
      res.end(modelsBody);
    } else if (req.method === 'GET' && path === '/health') {
      res.writeHead(200);
      res.end();
    } else if (path === '/v1/models' || path === '/v1/chat/completions' || path === '/v1/responses' || path === '/v1/embeddings' || path === '/health') {
      sendJson(res, 405, { detail: 'Method Not Allowed' }); // FastAPI's shape, as vLLM answers
    } else {
      sendJson(res, 404, { detail: 'Not Found' });
    }
  });
  server.keepAliveTimeout = 30_000;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.once('close', () => sockets.delete(socket));
  });

  function readBody(req: IncomingMessage, res: ServerResponse, path: string): void {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) parts.push(c);
    });
    req.on('end', () => {
      const raw = parts.length === 1 ? parts[0]!.toString('utf8') : Buffer.concat(parts).toString('utf8');
      let body: any;
      let bad: string | null = null;
      if (size > MAX_BODY_BYTES) bad = 'Request body too large';
      else {
        try {
          body = JSON.parse(raw);
        } catch (e) {
          bad = `Invalid JSON body: ${(e as Error).message}`;
        }
      }
      const record: SimulatorRequestRecord = {
        path,
        body: bad === null ? body : raw,
        receivedAt: Date.now(),
        aborted: false,
        finished: false,
      };
      requests.push(record);
      if (requests.length > MAX_RECORDS) requests.splice(0, requests.length - MAX_RECORDS + MAX_RECORDS / 10);
      bodies.logged(record, Math.min(size, MAX_BODY_BYTES));

      const ex = new Exchange(res, record);
      exchanges.add(ex);
      res.once('finish', () => {
        record.finished = true;
      });
      res.once('close', () => {
        exchanges.delete(ex);
        ex.onClose();
        if (!record.finished && !ex.selfClosed && !closing) {
          record.aborted = true;
          noteAbort();
        }
      });

      if (bad !== null) return sendJson(res, 400, errorBody(400, bad, 'BadRequestError'));
      if (path === '/v1/embeddings') {
        const answer = embeddingsResponse(body, modelName);
        if (typeof answer === 'string') return sendJson(res, 400, errorBody(400, answer, 'BadRequestError'));
        if (!embeddingsDelayMs) return sendJson(res, 200, answer);
        void ex.sleep(embeddingsDelayMs).then((open) => open && sendJson(res, 200, answer));
        return;
      }
      const sim =
        path === '/v1/responses' ? responsesRequestToSim(body, modelName) : chatRequestToSim(body, modelName);
      if (typeof sim === 'string') return sendJson(res, 400, errorBody(400, sim, 'BadRequestError'));
      const tooLong = opts.maxModelLen ? contextOverflow(sim, opts.maxModelLen) : null;
      if (tooLong !== null) return sendJson(res, 400, errorBody(400, tooLong, 'BadRequestError'));
      answer(ex, sim, body).catch((err) => {
        // Should not happen; never leave a request dangling.
        if (!res.headersSent) sendJson(res, 500, errorBody(500, String(err), 'InternalServerError'));
        else res.destroy();
      });
    });
  }

  /** Applies `fail_times`: true when this request must fail. */
  function shouldFail(plan: RoundPlan): boolean {
    const f = plan.failure;
    if (!f) return false;
    if (f.failTimes === null) return true;
    const seen = failCounts.get(f.key) ?? 0;
    if (seen >= f.failTimes) return false;
    if (failCounts.size >= MAX_FAIL_KEYS && !failCounts.has(f.key)) failCounts.clear();
    failCounts.set(f.key, seen + 1);
    return true;
  }

  async function answer(ex: Exchange, sim: SimRequest, body: any): Promise<void> {
    const plan = planRound(sim, { defaultDelayMs });
    const res = ex.res;
    if (shouldFail(plan)) {
      const f = plan.failure!;
      if (plan.firstDelayMs > 0 && !(await ex.sleep(plan.firstDelayMs))) return;
      return sendJson(res, f.status, errorBody(f.status, f.message, f.type));
    }

    let lines: string[];
    let terminal: string | null;
    let errorLine: (written: number) => string;
    const created = Math.floor(Date.now() / 1000);
    if (sim.dialect === 'chat') {
      const ctx: ChatEncodeContext = { id: newChatCompletionId(), created, model: sim.model, includeUsage: sim.includeUsage };
      if (!sim.stream) return answerWhole(ex, plan, () => buildChatCompletion(plan, ctx));
      lines = buildChatChunks(plan, ctx).map((c) => `data: ${JSON.stringify(c)}\n\n`);
      terminal = DONE_LINE;
      errorLine = () => `data: ${JSON.stringify(MID_STREAM_ERROR)}\n\n`;
    } else {
      const ctx = { id: newResponseId(), createdAt: created, model: sim.model, request: body };
      if (!sim.stream) return answerWhole(ex, plan, () => buildResponse(plan, ctx));
      const events = buildResponsesEvents(plan, ctx) as Array<{ type: string }>;
      lines = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
      terminal = null; // vLLM ends Responses streams without [DONE]
      errorLine = (written) => `event: error\ndata: ${JSON.stringify(responsesErrorEvent(written))}\n\n`;
    }
    return stream(ex, plan, lines, terminal, errorLine);
  }

  /** Non-stream answer, after the simulated generation time. */
  async function answerWhole(ex: Exchange, plan: RoundPlan, build: () => object): Promise<void> {
    if (plan.hang || plan.hangAfterChunks !== null) return; // never answer; the client will give up
    let pieces = plan.reasoning.length + plan.text.length + plan.refusal.length;
    for (const c of plan.toolCalls) pieces += c.pieces.length;
    const wait = plan.firstDelayMs + plan.delayMs * pieces;
    if (wait > 0 && !(await ex.sleep(wait))) return;
    if (plan.closeAfterChunks !== null) {
      ex.selfClosed = true;
      ex.res.destroy();
      return;
    }
    if (plan.errorAfterChunks !== null) {
      return sendJson(ex.res, 500, errorBody(500, 'simulated mid-stream error', 'InternalServerError'));
    }
    sendJson(ex.res, 200, build());
  }

  async function stream(
    ex: Exchange,
    plan: RoundPlan,
    lines: string[],
    terminal: string | null,
    errorLine: (written: number) => string,
  ): Promise<void> {
    const res = ex.res;
    res.writeHead(200, SSE_HEADERS);
    if (plan.hang) {
      res.flushHeaders();
      return;
    }

    // The earliest interruption wins; N counts `data:` chunks / events written.
    let stopAt = lines.length;
    let stopKind = 'none' as 'none' | 'hang' | 'close' | 'error';
    const candidates = [
      [plan.closeAfterChunks, 'close'],
      [plan.errorAfterChunks, 'error'],
      [plan.hangAfterChunks, 'hang'],
    ] as const;
    for (const [n, kind] of candidates) {
      if (n !== null && (stopKind === 'none' || n < stopAt)) {
        stopAt = Math.min(n, lines.length);
        stopKind = kind;
      }
    }

    const delay = plan.delayMs;
    const firstDelay = plan.firstDelayMs + delay;
    if (firstDelay > 0 || stopKind === 'hang') res.flushHeaders();

    if (firstDelay === 0 && delay === 0) {
      // Hot path: everything synchronously; Node corks the socket within the tick.
      for (let i = 0; i < stopAt; i++) {
        if (!res.write(lines[i]!) && i + 1 < stopAt && !(await ex.drain())) return;
      }
    } else {
      for (let i = 0; i < stopAt; i++) {
        if (!(await ex.sleep(i === 0 ? firstDelay : delay))) return;
        if (!res.write(lines[i]!) && i + 1 < stopAt && !(await ex.drain())) return;
      }
    }
    if (ex.closed) return;

    switch (stopKind) {
      case 'hang':
        return; // keep the socket open until the client gives up
      case 'close':
        ex.selfClosed = true;
        // Flush what was written, then cut the connection in the middle of the response.
        if (res.socket) res.socket.end();
        else res.destroy();
        return;
      case 'error':
        res.write(errorLine(stopAt));
        if (terminal !== null) res.end(terminal);
        else res.end();
        return;
      case 'none':
        if (terminal !== null) res.end(terminal);
        else res.end();
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}/v1`,
    port,
    requests,
    abortedCount: () => aborted,
    activeCount: () => exchanges.size,
    waitForAbort(timeoutMs = 5000) {
      if (aborted > abortsClaimed) {
        abortsClaimed++;
        return Promise.resolve();
      }
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          abortWaiters = abortWaiters.filter((w) => w !== onAbort);
          reject(new Error(`simulator: no client abort observed within ${timeoutMs} ms`));
        }, timeoutMs);
        const onAbort = () => {
          clearTimeout(timer);
          abortsClaimed++;
          resolve();
        };
        abortWaiters.push(onAbort);
      });
    },
    close() {
      closing = true;
      for (const ex of exchanges) {
        ex.selfClosed = true;
        ex.onClose();
      }
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const s of sockets) s.destroy();
      });
    },
  };
}
