// responseJson (src/engine/response-json.ts) is exactly JSON.stringify of the Response, whose echoed
// tools it serialises once per distinct list.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseCreateRequest } from '../../src/engine/request.js';
import { newResponseObject } from '../../src/engine/response-object.js';
import { responseJson } from '../../src/engine/response-json.js';
import type { Item } from '../../src/protocol/responses.js';

const codexBody = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/codex/${name}-request.json`, import.meta.url), 'utf8'));

describe('responseJson', () => {
  it('is JSON.stringify of a Codex response, for every request and after the tools change', () => {
    for (const name of ['fallback-tool/0001', 'catalog-apply-patch/0002', 'fallback-tool/0002', 'fallback-tool/0002']) {
      const response = newResponseObject('resp_1', 1, parseCreateRequest(codexBody(name)));
      expect(responseJson(response)).toBe(JSON.stringify(response));
    }
    const changed = codexBody('fallback-tool/0002');
    changed.tools[0].description += ' (changed)';
    const response = newResponseObject('resp_2', 2, parseCreateRequest(changed));
    expect(responseJson(response)).toBe(JSON.stringify(response));
    expect(responseJson(response)).toContain('(changed)');
  });

  it('stays JSON.stringify as the same Response changes between its events (output, status, usage)', () => {
    const response = newResponseObject('resp_5', 5, parseCreateRequest(codexBody('fallback-tool/0002')));
    expect(responseJson(response)).toBe(JSON.stringify(response));
    response.status = 'completed';
    response.output.push({ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'done', annotations: [], logprobs: [] }] } as unknown as Item);
    expect(responseJson(response)).toBe(JSON.stringify(response));
    // another Response with a list of the same names but other content: its own text
    const other = codexBody('fallback-tool/0002');
    other.tools[1].description = 'another description';
    const second = newResponseObject('resp_6', 6, parseCreateRequest(other));
    expect(responseJson(second)).toBe(JSON.stringify(second));
    expect(responseJson(response)).toBe(JSON.stringify(response));
  });

  it('is JSON.stringify when an output item also holds "tools":[], and without tools', () => {
    const response = newResponseObject('resp_3', 3, parseCreateRequest({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }] }));
    response.output.push({ type: 'tool_search_output', id: 'tso_1', call_id: 'c', status: 'completed', execution: 'client', tools: [] } as unknown as Item);
    expect(responseJson(response)).toBe(JSON.stringify(response));
    const bare = newResponseObject('resp_4', 4, parseCreateRequest({ model: 'm', input: 'hi' }));
    expect(responseJson(bare)).toBe(JSON.stringify(bare));
  });
});
