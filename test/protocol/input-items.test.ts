// Items a client sends, checked by one validator per item type (issue #10): the engine's own
// (message, reasoning, compaction, item_reference) here, through the same entry point the
// routes use; each error names the exact field with its catalogued code.
import { describe, expect, it } from 'vitest';
import { parseCreateRequest, validateInputItem } from '../../src/engine/request.js';
import { GatewayError } from '../../src/errors.js';
import { ENGINE_ITEM_VALIDATORS, validateMessage } from '../../src/protocol/input-items.js';
import { InvalidItemError } from '../../src/protocol/item-validation.js';

/** The 400 an item gets, as `{param, code}` (fails the test when it is accepted). */
function rejection(item: unknown, param = 'input[0]'): { param: string | null; code: string | null } {
  try {
    validateInputItem(item, param);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    const e = err as GatewayError;
    expect(e.status).toBe(400);
    return { param: e.param, code: e.code };
  }
  throw new Error(`accepted: ${JSON.stringify(item)}`);
}

describe('dispatch by type', () => {
  it('the engine owns only messages, reasoning, compactions and item references', () => {
    expect([...ENGINE_ITEM_VALIDATORS.keys()].sort()).toEqual(['compaction', 'item_reference', 'message', 'reasoning']);
  });

  it('an unknown type, a missing type, a non-object and a non-string id are refused by name', () => {
    expect(rejection({ type: 'telepathy' }, 'input[3]')).toEqual({ param: 'input[3].type', code: 'invalid_value' });
    expect(rejection({ content: 'x' })).toEqual({ param: 'input[0].type', code: 'missing_required_parameter' });
    expect(rejection('hello')).toEqual({ param: 'input[0]', code: 'invalid_type' });
    expect(rejection({ type: 'message', role: 'user', content: 'x', id: 7 })).toEqual({ param: 'input[0].id', code: 'invalid_type' });
  });

  it('names on Object.prototype are not item types', () => {
    expect(rejection({ type: 'constructor' })).toEqual({ param: 'input[0].type', code: 'invalid_value' });
    expect(rejection({ type: 'toString' })).toEqual({ param: 'input[0].type', code: 'invalid_value' });
  });

  it('the position in the request is part of the param', () => {
    let err: GatewayError | undefined;
    try {
      parseCreateRequest({ model: 'm', input: [{ role: 'user', content: 'hi' }, { type: 'function_call_output', output: 'x' }] });
    } catch (e) {
      err = e as GatewayError;
    }
    expect({ param: err?.param, code: err?.code }).toEqual({ param: 'input[1].call_id', code: 'missing_required_parameter' });
  });
});

describe('message', () => {
  it('a typed, valid message comes back as the same object (no copy on the hot path)', () => {
    const item = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] };
    expect(validateInputItem(item, 'input[0]')).toBe(item);
    const stringContent = { type: 'message', role: 'assistant', content: 'hello' };
    expect(validateInputItem(stringContent, 'input[0]')).toBe(stringContent);
  });

  it('the easy form ({role, content}) becomes a message', () => {
    expect(validateInputItem({ role: 'developer', content: 'be brief' }, 'input[0]')).toEqual({ type: 'message', role: 'developer', content: 'be brief' });
  });

  it('a bad role, content or part is refused with its exact param', () => {
    expect(rejection({ type: 'message', role: 'robot', content: 'x' })).toEqual({ param: 'input[0].role', code: 'invalid_value' });
    expect(rejection({ type: 'message', role: 'user', content: 5 })).toEqual({ param: 'input[0].content', code: 'invalid_type' });
    expect(rejection({ type: 'message', role: 'user', content: ['x'] })).toEqual({ param: 'input[0].content[0]', code: 'invalid_type' });
    expect(rejection({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'a' }, { type: 'hologram' }] })).toEqual({ param: 'input[0].content[1].type', code: 'invalid_value' });
    expect(rejection({ type: 'message', role: 'user', content: [{ type: 'output_text', text: 1 }] })).toEqual({ param: 'input[0].content[0].text', code: 'invalid_type' });
  });

  it('the validator itself throws InvalidItemError (pure: no 400 built in protocol/)', () => {
    expect(() => validateMessage({ type: 'message', role: 'x', content: '' }, 'items[2]')).toThrow(InvalidItemError);
  });
});

describe('reasoning, compaction, item_reference', () => {
  it('valid items pass unchanged', () => {
    for (const item of [
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 's' }], encrypted_content: 'abc' },
      { type: 'reasoning', summary: [], content: null },
      { type: 'compaction', encrypted_content: 'eyJ2IjoxfQ' },
      { type: 'item_reference', id: 'msg_1' },
    ]) {
      expect(validateInputItem(item, 'input[0]')).toBe(item);
    }
  });

  it('malformed fields are refused by name', () => {
    expect(rejection({ type: 'reasoning', summary: 'text' })).toEqual({ param: 'input[0].summary', code: 'invalid_type' });
    expect(rejection({ type: 'reasoning', summary: [], content: {} })).toEqual({ param: 'input[0].content', code: 'invalid_type' });
    expect(rejection({ type: 'compaction', encrypted_content: 42 })).toEqual({ param: 'input[0].encrypted_content', code: 'invalid_type' });
    expect(rejection({ type: 'item_reference' })).toEqual({ param: 'input[0].id', code: 'missing_required_parameter' });
    expect(rejection({ type: 'item_reference', id: '' })).toEqual({ param: 'input[0].id', code: 'invalid_type' });
  });
});
