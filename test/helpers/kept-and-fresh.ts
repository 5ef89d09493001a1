// A differential test of what the gateway keeps across requests (a resent history parsed,
// decoded and converted once): two gateways get the same bodies, one as a client sends them
// (compact, the same bytes turn after turn: kept), the other each with an indent of its own,
// which nothing kept matches (parsed, decoded and converted whole every time).
import { afterAll, beforeAll } from 'vitest';
import { startTestGateway, type TestGateway } from './gateway.js';

/** The two gateways, started before the suite's tests and closed after them. */
export function keptAndFreshGateways(): { kept: TestGateway; fresh: TestGateway } {
  const pair = {} as { kept: TestGateway; fresh: TestGateway };
  beforeAll(async () => {
    [pair.kept, pair.fresh] = await Promise.all([startTestGateway(), startTestGateway()]);
  });
  afterAll(async () => {
    await pair.kept?.close();
    await pair.fresh?.close();
  });
  return pair;
}

let bodies = 0;
/** `body` as JSON with an indent no other body here had: bytes nothing kept matches. */
export function uniquelyIndented(body: unknown): string {
  return JSON.stringify(body, null, (++bodies).toString(2).replaceAll('0', ' ').replaceAll('1', '\t'));
}
