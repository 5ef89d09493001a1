// Image URLs in input (issue 9, defect 13): by default the gateway fetches them itself, through
// the outbound guard, and the model server gets a data URL — it never opens a client-chosen URL.
// `forward` keeps the old behaviour, `reject` refuses; private addresses stay refused under the guard.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { createImageUrlHandler } from '../../src/net/image-inline.js';
import type { ModelItem } from '../../src/protocol/model.js';
import { TurnAbort } from '../../src/util/abort.js';

type Json = Record<string, any>;

// a real (1×1) PNG: what a model server would decode
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const LOOPBACK_ALLOWED = { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true };

let images: Server;
let imageBase: string;
const imageHits: string[] = [];
let simulator: Simulator;

beforeAll(async () => {
  images = createServer((req, res) => {
    imageHits.push(req.url ?? '');
    if (req.url === '/cat.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length });
      res.end(PNG);
    } else if (req.url === '/redirect-to-cat') {
      res.writeHead(302, { location: '/cat.png' });
      res.end();
    } else if (req.url === '/redirect-to-metadata') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      res.end();
    } else if (req.url === '/huge.png') {
      // no content-length: the cap must hold while reading
      res.writeHead(200, { 'content-type': 'image/png' });
      const chunk = Buffer.alloc(64 * 1024);
      let sent = 0;
      const pump = () => {
        while (sent < 8 * 1024 * 1024 && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return;
        }
        res.end();
      };
      res.on('drain', pump);
      pump();
    } else if (req.url === '/page.html') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html></html>');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imageBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  simulator = await startSimulator({ port: 0 });
});

afterAll(async () => {
  images.closeAllConnections();
  await new Promise((resolve) => images.close(resolve));
  await simulator.close();
});

function imageInput(url: string): Json[] {
  return [{ role: 'user', content: [{ type: 'input_text', text: scripted({ rounds: [{ text: 'a cat' }] }, 'what is this?') }, { type: 'input_image', image_url: url }] }];
}

async function create(tg: TestGateway, input: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input }) });
  return { status: res.status, body: (await res.json()) as Json };
}

/** The image URL the model server was handed in the last request. */
function imageUrlSentUpstream(): string | undefined {
  const messages = simulator.requests.at(-1)!.body.messages as Json[];
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content) if (part.type === 'image_url') return part.image_url.url;
  }
  return undefined;
}

describe('limits.imageUrls: inline (the default)', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway({ simulator, config: { limits: { imageOutbound: LOOPBACK_ALLOWED, maxImageBytes: 1024 * 1024 } } });
  });
  afterAll(() => tg.close());

  it('fetches the image through the guard and sends the model a data URL; the stored input keeps the URL', async () => {
    imageHits.length = 0;
    const { status, body } = await create(tg, imageInput(`${imageBase}/cat.png`));
    expect(status).toBe(200);
    expect(body.status).toBe('completed');
    expect(imageHits).toEqual(['/cat.png']);
    expect(imageUrlSentUpstream()).toBe(`data:image/png;base64,${PNG.toString('base64')}`);
    const items = (await (await fetch(`${tg.baseURL}/responses/${body.id}/input_items`)).json()) as Json;
    expect(items.data[0].content[1].image_url).toBe(`${imageBase}/cat.png`);
  });

  it('follows a redirect (each hop re-checked) and refuses one that leads to a private address', async () => {
    imageHits.length = 0;
    const ok = await create(tg, imageInput(`${imageBase}/redirect-to-cat`));
    expect(ok.status).toBe(200);
    expect(imageUrlSentUpstream()).toMatch(/^data:image\/png;base64,/);
    const before = simulator.requests.length;
    const refused = await create(tg, imageInput(`${imageBase}/redirect-to-metadata`));
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('image_url_not_allowed');
    expect(simulator.requests.length).toBe(before);
  });

  it('a too large image, something not an image, or a 404 is a 400 — and nothing goes upstream', async () => {
    const before = simulator.requests.length;
    for (const path of ['/huge.png', '/page.html', '/missing.png']) {
      const { status, body } = await create(tg, imageInput(`${imageBase}${path}`));
      expect(status).toBe(400);
      expect(body.error.code).toBe('invalid_image_url');
      expect(body.error.type).toBe('invalid_request_error');
    }
    expect(simulator.requests.length).toBe(before);
  });

  it('an image in a continued chain is fetched again for every turn after it, and never sent as its URL', async () => {
    imageHits.length = 0;
    const first = await create(tg, imageInput(`${imageBase}/cat.png`));
    expect(first.status).toBe(200);
    let previous = first.body.id as string;
    // long enough a chain for the held history's model items to be kept and reused
    for (let turn = 0; turn < 4; turn++) {
      const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: `and then ${turn}?`, previous_response_id: previous }) });
      const body = (await res.json()) as Json;
      expect(res.status).toBe(200);
      expect(imageUrlSentUpstream()).toBe(`data:image/png;base64,${PNG.toString('base64')}`);
      previous = body.id;
    }
    expect(imageHits).toEqual(Array(5).fill('/cat.png'));
  });

  it('a data URL is passed on as it is, nothing fetched', async () => {
    imageHits.length = 0;
    const dataUrl = `data:image/png;base64,${PNG.toString('base64')}`;
    const { status } = await create(tg, imageInput(dataUrl));
    expect(status).toBe(200);
    expect(imageHits).toEqual([]);
    expect(imageUrlSentUpstream()).toBe(dataUrl);
  });
});

describe('limits.imageUrls: inline under the default guard (loopback and private addresses not allowed)', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway({ simulator });
  });
  afterAll(() => tg.close());

  it('private-address image URLs are refused with a 400 and never connected to', async () => {
    imageHits.length = 0;
    const before = simulator.requests.length;
    for (const url of [`${imageBase}/cat.png`, 'https://127.0.0.1/cat.png', 'https://10.0.0.7/cat.png', 'https://169.254.169.254/latest/meta-data/', 'https://[::1]/cat.png', 'https://user:secret@192.168.1.1/x.png?token=abc']) {
      const { status, body } = await create(tg, imageInput(url));
      expect(status).toBe(400);
      expect(['image_url_not_allowed']).toContain(body.error.code);
      expect(body.error.message).not.toContain('secret');
      expect(body.error.message).not.toContain('token=abc');
    }
    expect(imageHits).toEqual([]);
    expect(simulator.requests.length).toBe(before);
  });
});

describe('limits.imageUrls: forward and reject', () => {
  it('forward: the model server is handed the URL, the gateway fetches nothing', async () => {
    const tg = await startTestGateway({ simulator, config: { limits: { imageUrls: 'forward' } } });
    try {
      imageHits.length = 0;
      const { status } = await create(tg, imageInput(`${imageBase}/cat.png`));
      expect(status).toBe(200);
      expect(imageHits).toEqual([]);
      expect(imageUrlSentUpstream()).toBe(`${imageBase}/cat.png`);
    } finally {
      await tg.close();
    }
  });

  it('reject: an image URL is a 400, a data URL still works', async () => {
    const tg = await startTestGateway({ simulator, config: { limits: { imageUrls: 'reject' } } });
    try {
      const before = simulator.requests.length;
      const { status, body } = await create(tg, imageInput(`${imageBase}/cat.png`));
      expect(status).toBe(400);
      expect(body.error.code).toBe('image_url_not_allowed');
      expect(simulator.requests.length).toBe(before);
      const ok = await create(tg, imageInput(`data:image/png;base64,${PNG.toString('base64')}`));
      expect(ok.status).toBe(200);
    } finally {
      await tg.close();
    }
  });
});

describe('limits.imageUrls applies to compaction and token counts too', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway({ simulator, config: { limits: { imageOutbound: LOOPBACK_ALLOWED } } });
  });
  afterAll(() => tg.close());

  it('POST /v1/responses/compact sends the summarizing model a data URL, never the URL', async () => {
    imageHits.length = 0;
    const input = [...imageInput(`${imageBase}/cat.png`), { role: 'assistant', content: 'a cat' }, { role: 'user', content: 'thanks' }];
    const res = await fetch(`${tg.baseURL}/responses/compact`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input }) });
    expect(res.status).toBe(200);
    expect(imageHits).toEqual(['/cat.png']);
    expect(JSON.stringify(simulator.requests.at(-1)!.body)).not.toContain(imageBase);
  });

  it('a private image URL in a compaction request is refused before the model is asked', async () => {
    const base = await startTestGateway({ simulator });
    try {
      const before = simulator.requests.length;
      const input = [...imageInput('https://169.254.169.254/latest/meta-data/'), { role: 'assistant', content: 'x' }, { role: 'user', content: 'y' }];
      const res = await fetch(`${base.baseURL}/responses/compact`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input }) });
      expect(res.status).toBe(400);
      expect(((await res.json()) as Json).error.code).toBe('image_url_not_allowed');
      expect(simulator.requests.length).toBe(before);
    } finally {
      await base.close();
    }
  });
});

describe('the image handler answers at once when there is nothing to fetch', () => {
  const text: ModelItem = { type: 'message', role: 'user', content: [{ type: 'text', text: 'hi' }] };
  const dataImage: ModelItem = { type: 'message', role: 'user', content: [{ type: 'image', url: `data:image/png;base64,${PNG.toString('base64')}` }] };
  // made in the test: the image server's address is known only after beforeAll
  const urlImage = (): ModelItem => ({ type: 'message', role: 'user', content: [{ type: 'image', url: `${imageBase}/cat.png` }] });
  const handler = (mode: 'inline' | 'forward' | 'reject') => createImageUrlHandler({ mode, maxBytes: 1 << 20, outbound: LOOPBACK_ALLOWED });

  it('no promise (no turn of the microtask queue) for a turn without an image URL, in every mode', () => {
    for (const mode of ['inline', 'forward', 'reject'] as const) {
      expect(handler(mode).prepare([text, dataImage], new TurnAbort()), mode).toBeUndefined();
    }
    // the items before `from` are known to hold none
    expect(handler('inline').prepare([urlImage(), text], new TurnAbort(), 1)).toBeUndefined();
  });

  it('a promise that inlines the image when there is one; reject refuses at once', async () => {
    const items = [text, urlImage()];
    const pending = handler('inline').prepare(items, new TurnAbort());
    expect(pending).toBeInstanceOf(Promise);
    await pending;
    expect((items[1] as Extract<ModelItem, { type: 'message' }>).content[0]).toMatchObject({ type: 'image', url: `data:image/png;base64,${PNG.toString('base64')}` });
    expect(() => handler('reject').prepare([urlImage()], new TurnAbort())).toThrow(/not accepted/);
    expect(handler('forward').prepare([urlImage()], new TurnAbort())).toBeUndefined();
  });
});
