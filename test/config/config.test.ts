import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { ConfigError, DEFAULT_CONFIG, loadConfig } from '../../src/config/config.js';
import { configTable } from '../../src/config/describe.js';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');
const SECRET = 'sk-test-5ecret-never-printed';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-config-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('config files', () => {
  it('names the file and key path of a typo (with a suggestion), a wrong type and a bad URL', () => {
    const file = write('config.yaml', ['prot: 9000', 'tools:', '  maxToolRounds: "many"', 'upstreams:', '  - {name: a, url: "http://127.0.0.1:1/v1"}', '  - {name: b, url: "not a url"}', ''].join('\n'));
    const message = errorOf(() => loadConfig({ file, env: {} }));
    expect(message).toContain(`${file}: prot: unknown key (did you mean 'port'?)`);
    expect(message).toContain(`${file}: tools.maxToolRounds: expected a number, got the string 'many'`);
    expect(message).toContain(`${file}: upstreams[1].url: expected a URL`);
  });

  it('reads JSON too, and reports an unknown nested key', () => {
    const file = write('config.json', JSON.stringify({ mcp: { breaker: { failures: 3, coolDown: 5 } } }));
    expect(errorOf(() => loadConfig({ file, env: {} }))).toBe(`${file}: mcp.breaker.coolDown: unknown key (did you mean 'cooldownMs'?)`);
  });

  it('interpolates ${VAR} and ${VAR:-default}; a missing variable names the key', () => {
    const file = write('interp.yaml', 'port: ${PORT_FROM_ENV:-8123}\nupstream:\n  url: http://127.0.0.1:9/v1\n  apiKey: ${UPSTREAM_SECRET}\ndataDir: $${literal}\n');
    const config = loadConfig({ file, env: { UPSTREAM_SECRET: SECRET } });
    expect(config.upstream.apiKey).toBe(SECRET);
    expect(config.port).toBe(8123);
    expect(config.dataDir).toBe('${literal}');
    expect(errorOf(() => loadConfig({ file, env: {} }))).toBe(`${file}: upstream.apiKey: environment variable UPSTREAM_SECRET is not set (use \${UPSTREAM_SECRET:-default} for a default)`);
  });

  it('environment variables are typed and named in errors; flags win over both', () => {
    expect(errorOf(() => loadConfig({ env: { SWITCHYARD_PORT: 'eighty' } }))).toBe("SWITCHYARD_PORT: port: expected a number, got 'eighty'");
    const file = write('layers.yaml', 'port: 1111\nhost: 0.0.0.0\n');
    const config = loadConfig({ file, env: { SWITCHYARD_PORT: '2222' }, overrides: { host: '127.0.0.1' } });
    expect([config.port, config.host]).toEqual([2222, '127.0.0.1']);
  });

  it('refuses aliases that name no upstream, and upstream.url together with upstreams', () => {
    const file = write('alias.yaml', 'upstreams:\n  - {name: a, url: "http://127.0.0.1:1/v1"}\nmodels:\n  fast: {upstream: b, model: m}\n');
    expect(errorOf(() => loadConfig({ file, env: {} }))).toBe(`${file}: models.fast.upstream: no upstream named 'b' (known: a)`);
    expect(errorOf(() => loadConfig({ file: write('both.yaml', 'upstreams:\n  - {name: a, url: "http://127.0.0.1:1/v1"}\n'), env: { SWITCHYARD_UPSTREAM_URL: 'http://127.0.0.1:2/v1' } }))).toMatch(/upstream\.url: set either/);
  });

  it('defaults are the schema defaults, and the README table is the generated one', () => {
    expect(DEFAULT_CONFIG.port).toBe(8080);
    expect(DEFAULT_CONFIG.tools.maxToolRounds).toBe(10);
    const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
    const table = readme.split('<!-- config-table:start -->')[1]?.split('<!-- config-table:end -->')[0]?.trim();
    // regenerate with: npm run docs:config
    expect(table).toBe(configTable());
  });
});

describe('an interpolated secret', () => {
  let upstream: Server;
  const seenAuth: string[] = [];
  beforeAll(async () => {
    upstream = createServer((req, res) => {
      seenAuth.push(req.headers.authorization ?? '');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model', created: 0, owned_by: 'x' }] }));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

  it('is sent to the upstream and never printed by config check or the logs', async () => {
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    const file = write('secret.yaml', `upstreams:\n  - name: main\n    url: ${url}\n    apiKey: \${MY_UPSTREAM_KEY}\nstore:\n  kind: sqlite\n`);
    const env = { ...process.env, MY_UPSTREAM_KEY: SECRET };
    const check = await run(process.execPath, [CLI, 'config', 'check', file], { env });
    expect(check.stdout + check.stderr).not.toContain(SECRET);
    expect(JSON.parse(check.stdout).upstreams[0].apiKey).toBe('***');

    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
    const config = loadConfig({ file, env: { MY_UPSTREAM_KEY: SECRET }, overrides: { port: 0, dataDir: join(dir, 'data') } });
    const gateway = await startGateway({ config, logger });
    try {
      const models = await fetch(`${gateway.url}/v1/models`, { headers: { 'x-request-id': 'req-abc.123' } });
      expect(models.status).toBe(200);
      expect(models.headers.get('x-request-id')).toBe('req-abc.123');
      expect(seenAuth.at(-1)).toBe(`Bearer ${SECRET}`);
      // an insane client id is replaced
      const odd = await fetch(`${gateway.url}/health`, { headers: { 'x-request-id': 'has space' } });
      expect(odd.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      await gateway.close();
    }
    const access = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request' && l.reqId === 'req-abc.123');
    expect(access).toMatchObject({ method: 'GET', route: '/v1/models', status: 200, tenant: '' });
    expect(lines.join('\n')).not.toContain(SECRET);
  });
});

describe('the command line', () => {
  it('--help lists the flags from the schema; --version prints the package version', async () => {
    const help = await run(process.execPath, [CLI, '--help']);
    for (const flag of ['--config FILE', '--port N', '--upstream VALUE', '--log-level VALUE', 'SWITCHYARD_DATABASE_URL', 'config check FILE']) expect(help.stdout).toContain(flag);
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8'));
    expect((await run(process.execPath, [CLI, '--version'])).stdout.trim()).toBe(`${pkg.name} ${pkg.version}`);
  });

  it('tells the operator about an upstream URL without /v1 (config check and at start)', async () => {
    const file = write('nov1.yaml', 'upstreams:\n  - {name: local, url: "http://127.0.0.1:8000"}\n');
    const check = await run(process.execPath, [CLI, 'config', 'check', file]);
    expect(check.stderr).toContain("upstream 'local': http://127.0.0.1:8000 has no /v1 in its path; OpenAI-compatible servers usually want http://127.0.0.1:8000/v1");
    const lines: string[] = [];
    const gateway = await startGateway({ config: loadConfig({ file, env: {}, overrides: { port: 0, dataDir: join(dir, 'nov1') } }), logger: pino({ level: 'warn' }, { write: (l: string) => void lines.push(l) }) });
    await gateway.close();
    expect(lines.some((l) => l.includes('has no /v1 in its path'))).toBe(true);
  });

  it('startup errors are one line saying what to fix', async () => {
    const fail = (args: string[], env: NodeJS.ProcessEnv = {}) =>
      run(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } }).then(
        () => '',
        (err: { stderr: string }) => err.stderr.trim(),
      );
    expect(await fail(['serve', '--config', join(dir, 'missing.yaml')])).toBe(`switchyard: ${join(dir, 'missing.yaml')}: cannot read the config file (no such file); check --config / SWITCHYARD_CONFIG`);
    expect(await fail(['serve', '--port', 'x'])).toBe("switchyard: --port: expected a number, got 'x'");
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as AddressInfo).port;
    try {
      const message = await fail(['serve', '--port', String(port), '--data-dir', join(dir, 'busy'), '--log-level', 'error']);
      expect(message).toBe(`switchyard: port ${port} on 127.0.0.1 is already in use: stop the other process or choose another port with --port / SWITCHYARD_PORT`);
    } finally {
      busy.close();
    }
    const db = await fail(['serve', '--port', '0', '--log-level', 'error'], { SWITCHYARD_DATABASE_URL: 'postgres://nobody:pw@127.0.0.1:1/x' });
    expect(db).toBe('switchyard: cannot reach PostgreSQL at postgres://nobody:***@127.0.0.1:1/x (ECONNREFUSED): is it running? check store.url / SWITCHYARD_DATABASE_URL');
  }, 60_000);
});
