import http, { type ServerResponse } from 'node:http';
import net, { type AddressInfo, type LookupFunction } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outboundPolicy } from '../../src/net/outbound-guard.js';
import { TtlCache } from '../../src/search/cache.js';
import { decodeEntities, htmlToText } from '../../src/search/html-to-text.js';
import { createPageReader, findInText, PageReadError, type Page } from '../../src/search/page-reader.js';

const ARTICLE_HTML = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Caf&eacute; Guide &amp; Notes</title>
  <style>body { font-family: sans-serif; } p::before { content: "<p>"; }</style>
  <script>window.tracking = "<div>not text</div>";</script>
  <link rel="stylesheet" href="/x.css">
</head>
<body>
  <nav><a href="/">Home</a> | <a href="/about">About</a></nav>
  <h1>Best caf&eacute;s in Lisbon</h1>
  <p>Lisbon&rsquo;s coffee scene is   small
     but &quot;excellent&quot; &mdash; here are three picks.</p>
  <ul>
    <li>Fábrica <em>Coffee</em> Roasters</li>
    <li>Hello, Kristof &#8211; a tiny bar</li>
    <li><a href="https://example.com/copenhagen">Copenhagen Coffee Lab</a></li>
  </ul>
  <noscript><img src="pixel.gif"> Please enable JavaScript</noscript>
  <svg width="10" height="10"><title>icon</title><circle r="4"/></svg>
  <p>Prices: 2&nbsp;&euro; &lt; 3&#x20AC;<br>Open daily.</p>
  <script type="application/ld+json">{"@type": "Article"}</script>
</body>
</html>`;

const ARTICLE_TEXT = [
  'Home | About',
  '',
  'Best cafés in Lisbon',
  '',
  'Lisbon’s coffee scene is small but "excellent" — here are three picks.',
  '',
  '- Fábrica Coffee Roasters',
  '- Hello, Kristof – a tiny bar',
  '- Copenhagen Coffee Lab',
  '',
  'Prices: 2 € < 3€',
  'Open daily.',
].join('\n');

/** Resolves invented names offline; anything else fails rather than reaching real DNS. */
function fakeLookup(names: Record<string, string>): LookupFunction {
  return (hostname, options, callback) => {
    const address = names[hostname.toLowerCase()];
    if (address === undefined) {
      const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      err.code = 'ENOTFOUND';
      return process.nextTick(() => callback(err, ''));
    }
    const found: LookupAddress[] = [{ address, family: net.isIP(address) }];
    process.nextTick(() => (options.all ? callback(null, found) : callback(null, address, net.isIP(address))));
  };
}

let pages: http.Server;
let forbidden: http.Server;
let port: number;
let forbiddenPort: number;
let forbiddenConnections = 0;
const lookup = fakeLookup({ 'a.test': '127.0.0.1', 'b.test': '127.0.0.1', 'evil.test': '127.0.0.1' });
// a.test and b.test are allowed although they resolve to loopback; everything else local is not.
const policy = outboundPolicy({ allowHosts: ['a.test', 'b.test'], allowHttp: true });
const reader = () => createPageReader(policy, { maxBytes: 64_000, timeoutMs: 2_000, maxRedirects: 3, lookup });
const signal = () => new AbortController().signal;

function redirect(res: ServerResponse, status: number, location: string): void {
  res.writeHead(status, { location, 'content-type': 'text/html' });
  res.end(`<a href="${location}">moved</a>`);
}

beforeAll(async () => {
  forbidden = http.createServer((_req, res) => res.end('secret'));
  forbidden.on('connection', () => forbiddenConnections++);
  await new Promise<void>((resolve) => forbidden.listen(0, '127.0.0.2', resolve));
  forbiddenPort = (forbidden.address() as AddressInfo).port;

  pages = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    switch (path) {
      case '/article':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        return res.end(ARTICLE_HTML);
      case '/r1':
        return redirect(res, 302, `http://b.test:${port}/r2`);
      case '/r2':
        return redirect(res, 301, '/article');
      case '/to-loopback':
        return redirect(res, 302, `http://127.0.0.2:${forbiddenPort}/secret`);
      case '/to-private':
        return redirect(res, 307, 'http://10.0.0.1/admin');
      case '/to-evil':
        return redirect(res, 302, `http://evil.test:${forbiddenPort}/secret`);
      case '/loop':
        return redirect(res, 302, '/loop');
      case '/big': {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const line = `${'lorem ipsum dolor sit amet '.repeat(3)}\n`;
        for (let i = 0; i < 12_000; i++) res.write(line);
        return res.end();
      }
      case '/slow':
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write('<p>first part'); // …and never the rest
        return;
      case '/image.png':
        res.writeHead(200, { 'content-type': 'image/png' });
        return res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      case '/doc.pdf':
        res.writeHead(200, { 'content-type': 'application/pdf' });
        return res.end('%PDF-1.7\n');
      case '/data.json':
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        return res.end('{"items":[1,2,3],"note":"<b>kept</b>"}');
      case '/notes.txt':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        return res.end('line one\r\nline  two\r\n');
      case '/latin1':
        res.writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' });
        return res.end(Buffer.from('<title>Caf\xe9</title><p>Cr\xe8me br\xfbl\xe9e</p>', 'latin1'));
      case '/untyped':
        // No Content-Type: sniffed.
        return res.end('<!doctype html><title>Untyped</title><p>sniffed as HTML</p>');
      default:
        res.writeHead(404, { 'content-type': 'text/html' });
        return res.end('<h1>Not found</h1>');
    }
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  port = (pages.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const server of [pages, forbidden]) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** The PageReadError a read rejected with. */
async function readError(url: string, read = reader()): Promise<PageReadError> {
  const err = await read.read(url, signal()).then(
    (page: Page) => expect.unreachable(`expected a failure, got ${page.finalUrl}`),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PageReadError);
  return err as PageReadError;
}

describe('page reader', () => {
  it('reads an HTML page as readable text', async () => {
    const url = `http://a.test:${port}/article`;
    const page = await reader().read(url, signal());
    expect(page).toEqual({ url, finalUrl: url, title: 'Café Guide & Notes', text: ARTICLE_TEXT, truncated: false, contentType: 'text/html' });
  });

  it('follows a redirect chain between allowed hosts and reports the final URL', async () => {
    const page = await reader().read(`http://a.test:${port}/r1`, signal());
    expect(page.url).toBe(`http://a.test:${port}/r1`);
    expect(page.finalUrl).toBe(`http://b.test:${port}/article`);
    expect(page.text).toBe(ARTICLE_TEXT);
  });

  it('refuses a redirect to a loopback or private address; nothing reaches the target', async () => {
    const loopback = await readError(`http://a.test:${port}/to-loopback`);
    expect(loopback.blocked).toBe(true);
    expect(loopback.message).toBe(`URL 'http://127.0.0.2:${forbiddenPort}/secret' is not allowed: 127.0.0.2 is a loopback address`);

    const evil = await readError(`http://a.test:${port}/to-evil`);
    expect(evil.blocked).toBe(true);
    expect(evil.message).toContain('evil.test resolves to 127.0.0.1, a loopback address');

    const direct = await readError(`http://127.0.0.2:${forbiddenPort}/secret`);
    expect(direct.blocked).toBe(true);

    const privateNet = await readError(`http://a.test:${port}/to-private`);
    expect(privateNet.blocked).toBe(true);
    expect(privateNet.message).toBe("URL 'http://10.0.0.1/admin' is not allowed: 10.0.0.1 is a private address");

    expect(forbiddenConnections).toBe(0);
  });

  it('refuses non-http schemes and gives up after maxRedirects', async () => {
    expect((await readError('file:///etc/passwd')).blocked).toBe(true);
    const loop = await readError(`http://a.test:${port}/loop`);
    expect(loop.blocked).toBe(false);
    expect(loop.message).toBe(`Too many redirects opening http://a.test:${port}/loop (more than 3)`);
  });

  it('caps an oversized page', async () => {
    const page = await reader().read(`http://a.test:${port}/big`, signal());
    expect(page.truncated).toBe(true);
    expect(page.text.length).toBe(64_000);
    expect(page.text.startsWith('lorem ipsum dolor sit amet lorem')).toBe(true);
    expect(page.contentType).toBe('text/plain');
  });

  it('times out on a page that never finishes', async () => {
    const slow = createPageReader(policy, { maxBytes: 64_000, timeoutMs: 300, maxRedirects: 3, lookup });
    const started = Date.now();
    const err = await readError(`http://a.test:${port}/slow`, slow);
    expect(err.message).toBe(`Timed out after 300 ms opening http://a.test:${port}/slow`);
    expect(err.blocked).toBe(false);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('refuses unsupported content types and reports HTTP errors', async () => {
    const image = await readError(`http://a.test:${port}/image.png`);
    expect(image.message).toBe(`http://a.test:${port}/image.png has an unsupported content type 'image/png' (only HTML, text and JSON pages can be read)`);
    expect((await readError(`http://a.test:${port}/doc.pdf`)).message).toContain("unsupported content type 'application/pdf'");
    const missing = await readError(`http://a.test:${port}/missing`);
    expect(missing.status).toBe(404);
    expect(missing.message).toBe(`http://a.test:${port}/missing answered HTTP 404`);
  });

  it('passes JSON and text through, honours charsets, sniffs untyped bodies', async () => {
    const json = await reader().read(`http://a.test:${port}/data.json`, signal());
    expect(json).toMatchObject({ title: '', text: '{"items":[1,2,3],"note":"<b>kept</b>"}', contentType: 'application/json', truncated: false });
    expect((await reader().read(`http://a.test:${port}/notes.txt`, signal())).text).toBe('line one\nline  two\n');
    const latin1 = await reader().read(`http://a.test:${port}/latin1`, signal());
    expect([latin1.title, latin1.text]).toEqual(['Café', 'Crème brûlée']);
    const untyped = await reader().read(`http://a.test:${port}/untyped`, signal());
    expect([untyped.contentType, untyped.title, untyped.text]).toEqual(['text/html', 'Untyped', 'sniffed as HTML']);
  });
});

describe('htmlToText', () => {
  it('keeps text and structure from malformed markup', () => {
    expect(htmlToText('<p>unclosed <b>bold <i>x < y and <3 <div a="b>c">in</div> <a href=\'x')).toEqual({ title: '', text: 'unclosed bold x < y and <3\nin' });
    expect(htmlToText('<div title="a > b">A</div><div>B').text).toBe('A\nB');
    expect(htmlToText('a<!-- hidden <p>x</p> -->b<!-- never closed').text).toBe('ab');
    expect(htmlToText('before<script>never closed <p>x</p>').text).toBe('before');
    expect(htmlToText('1 < 2 and 3 > 2, a<>b, </ odd>c').text).toBe('1 < 2 and 3 > 2, a<>b, c');
    expect(htmlToText('<title>T</title>Hello <head><p>World').text).toBe('Hello\n\nWorld');
    expect(htmlToText('<svg><text>drawn</text><p>para</p>').text).toBe('para');
    expect(htmlToText('<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>').text).toBe('- a\n  - b\n- c');
    expect(htmlToText('<table><tr><th>Name</th><th>Qty</th></tr><tr><td>Tea</td><td>2</td></tr></table>').text).toBe('Name | Qty\nTea | 2');
    expect(htmlToText('<pre>\n  indented\n    code</pre><p>after</p>').text).toBe('indented\n    code\n\nafter');
    expect(htmlToText(`<a data-x="${'x'.repeat(100_000)}">link</a> after`).text).toBe('link after');
  });

  it('decodes named and numeric entities, leaving unknown ones', () => {
    expect(decodeEntities('AT&T &amp &lt;b&gt; &#0; &#x110000; &#150; &unknown; &eacute;&Eacute; &#x1F600;')).toBe('AT&T & <b> \ufffd \ufffd – &unknown; éÉ 😀');
  });

  it('runs in linear time on large and hostile inputs', () => {
    // A ratio, not a wall-clock limit (a loaded machine slows both sizes alike): 8× the input must
    // cost about 8× the time — a quadratic pass would cost 64×. Fastest of five runs each, and the
    // small input large enough (250 kB) that timer and GC noise do not dominate its few milliseconds.
    const MB = 1_000_000;
    const repeatTo = (unit: string, size: number) => unit.repeat(Math.ceil(size / unit.length));
    const fastest = (input: string) => Math.min(...[0, 1, 2, 3, 4].map(() => {
      const started = performance.now();
      htmlToText(input);
      return performance.now() - started;
    }));
    const units = [
      'word &amp; <b>bold</b> <a href="https://e.com/?q=1&x=2">link</a> ',
      '<a x="',
      '<',
      '<a ',
      '<!--',
      '&',
      `<a b='"`,
      '<script>',
      '<p x=',
      '<svg><p>',
      '<li><ul><td>',
    ];
    const inputs = units.map((unit) => repeatTo(unit, MB));
    for (const unit of units) {
      const small = fastest(repeatTo(unit, MB / 4));
      const large = fastest(repeatTo(unit, 2 * MB));
      expect(large / Math.max(small, 1), `'${unit}': ${small.toFixed(1)} ms for 250 kB, ${large.toFixed(1)} ms for 2 MB`).toBeLessThan(24);
    }
    expect(htmlToText(inputs[0]!).text.startsWith('word & bold link word & bold link')).toBe(true);
  });
});

describe('findInText', () => {
  const text = 'The quick brown fox jumps over the lazy dog.\nThe QUICK red fox naps at the École.';

  it('finds case-insensitive plain-text matches with offsets and context', () => {
    const found = findInText(text, 'quick');
    expect(found).toEqual([
      { index: 4, context: 'The quick brown fox jumps over the lazy dog. The QUICK red fox naps at the École.' },
      { index: 49, context: 'The quick brown fox jumps over the lazy dog. The QUICK red fox naps at the École.' },
    ]);
    expect(text.slice(49, 54)).toBe('QUICK');
    expect(findInText(text, 'fox', 1)).toHaveLength(1);
    expect(findInText(text, 'dog.   the')).toEqual([{ index: 40, context: expect.stringContaining('lazy dog. The QUICK') }]);
    expect(findInText(text, 'école')[0]!.index).toBe(text.indexOf('École'));
    expect(findInText(text, 'zebra')).toEqual([]);
    expect(findInText(text, '   ')).toEqual([]);
  });

  it('treats the pattern as text, not a regex', () => {
    expect(findInText('cost is $5.00 (approx) or 5x00', '$5.00 (approx)')).toEqual([{ index: 8, context: 'cost is $5.00 (approx) or 5x00' }]);
    expect(findInText('abc', '.*')).toEqual([]);
  });

  it('keeps about 200 characters of context around a match in long text', () => {
    const words = Array.from({ length: 400 }, (_, i) => `w${i}`);
    words[200] = 'NEEDLE';
    const long = words.join(' ');
    const [hit] = findInText(long, 'needle');
    expect(hit!.index).toBe(long.indexOf('NEEDLE'));
    expect(hit!.context.startsWith('…')).toBe(true);
    expect(hit!.context.endsWith('…')).toBe(true);
    expect(hit!.context).toContain('w199 NEEDLE w201');
    expect(hit!.context.length).toBeGreaterThan(150);
    expect(hit!.context.length).toBeLessThanOrEqual(210);
  });
});

describe('TtlCache', () => {
  it('evicts the least recently used entry beyond maxEntries', () => {
    const cache = new TtlCache<number>(2, 1_000, () => 0);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1); // a is now the most recently used
    cache.set('c', 3);
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
  });

  it('expires entries ttlMs after they were set; reads do not extend them', () => {
    let now = 0;
    const cache = new TtlCache<string>(10, 1_000, () => now);
    cache.set('x', 'one');
    now = 999;
    expect(cache.get('x')).toBe('one');
    now = 1_000;
    expect(cache.get('x')).toBeUndefined();
    expect(cache.size).toBe(0);
    cache.set('y', 'two');
    now = 1_500;
    cache.set('y', 'three'); // setting again restarts the clock
    now = 2_400;
    expect(cache.get('y')).toBe('three');
  });

  it('drops expired entries before evicting live ones, and can be disabled', () => {
    let now = 0;
    const cache = new TtlCache<string>(2, 100, () => now);
    cache.set('old', '1');
    now = 50;
    cache.set('mid', '2');
    now = 120; // "old" has expired
    cache.set('new', '3');
    expect([cache.get('old'), cache.get('mid'), cache.get('new')]).toEqual([undefined, '2', '3']);

    const off = new TtlCache<string>(0, 1_000);
    off.set('k', 'v');
    expect(off.get('k')).toBeUndefined();
    expect(off.size).toBe(0);
  });
});
