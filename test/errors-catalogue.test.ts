// The error catalogue and the README's error table say the same: every code the gateway can send
// is documented with its status, type and retryability, and every documented code exists. Also
// the named constructors send what the catalogue says.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, Errors, GatewayError, toGatewayError, type ErrorCode } from '../src/errors.js';

interface Row {
  statuses: string;
  type: string;
  retry: string;
}

function readmeTable(): Map<string, Row> {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('<!-- error-table:start -->');
  const end = readme.indexOf('<!-- error-table:end -->');
  expect(start, 'README has an error table').toBeGreaterThan(-1);
  expect(end).toBeGreaterThan(start);
  const rows = new Map<string, Row>();
  for (const line of readme.slice(start, end).split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const code = /^`([a-z0-9_]+)`$/.exec(cells[1] ?? '')?.[1];
    if (!code) continue;
    expect(rows.has(code), `${code} is listed once`).toBe(false);
    rows.set(code, { statuses: cells[2], type: cells[3].replaceAll('`', ''), retry: cells[4] });
  }
  return rows;
}

describe('error catalogue', () => {
  const table = readmeTable();
  const codes = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

  it('documents every code, and documents no code that does not exist', () => {
    expect(codes.length).toBeGreaterThan(40);
    expect(codes.filter((c) => !table.has(c)), 'codes missing from the README').toEqual([]);
    expect([...table.keys()].filter((c) => !(c in ERROR_CATALOGUE)), 'README codes not in the catalogue').toEqual([]);
  });

  it('documents each code with its status, type and retryability', () => {
    for (const code of codes) {
      const entry = ERROR_CATALOGUE[code] as { status: number; alsoStatus?: readonly number[] | string; type: string; retryable: boolean };
      const row = table.get(code)!;
      const also = entry.alsoStatus === undefined ? [] : typeof entry.alsoStatus === 'string' ? [entry.alsoStatus] : entry.alsoStatus;
      expect(row.statuses, code).toBe([entry.status, ...also].join(', '));
      expect(row.type, code).toBe(entry.type);
      expect(row.retry, code).toBe(entry.retryable ? 'yes' : 'no');
    }
  });

  it('named constructors send the catalogued status, type and retryability (or their documented variant)', () => {
    const built: GatewayError[] = [
      Errors.conversationLocked(),
      Errors.runTakenOver(),
      Errors.storeUnavailable(),
      Errors.shuttingDown(),
      Errors.requestTooLarge(10),
      Errors.modelNotFound('m'),
      Errors.upstreamUnavailable('ECONNREFUSED'),
      Errors.upstreamFailed(500, 'boom'),
      Errors.upstreamRateLimited('slow down'),
      Errors.mcpListToolsFailed('srv', 'down', 'tools[0]'),
      Errors.clientDisconnected(),
    ];
    for (const err of built) {
      const entry = ERROR_CATALOGUE[err.code!];
      expect([err.code, err.status, err.type, err.retryable]).toEqual([err.code, entry.status, entry.type, entry.retryable]);
    }
    // the documented variants
    const lost = Errors.conversationLeaseLost();
    expect([lost.code, lost.status, lost.retryable]).toEqual(['conversation_locked', 409, true]);
    expect(Errors.upstreamRejected(422, 'no', 'input').status).toBe(422);
    expect(Errors.upstreamRejected(302, 'odd', null).status).toBe(502);
    expect(Errors.invalidWebSocketHandshake('bad method', 405).status).toBe(405);
    expect(Errors.conversationLocked().toBody()).toEqual({
      error: { message: expect.any(String), type: 'invalid_request_error', param: 'conversation', code: 'conversation_locked' },
    });
  });

  it('maps an unreachable database to a retryable 503 and anything else to a 500', () => {
    const down = toGatewayError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    expect([down.status, down.code, down.retryable]).toEqual([503, 'store_unavailable', true]);
    const bug = toGatewayError(new TypeError('x is undefined'));
    expect([bug.status, bug.code, bug.retryable]).toEqual([500, 'server_error', false]);
  });
});
