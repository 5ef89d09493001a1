import { ToolDeclarationError } from '../types.js';
import { isPlainObject } from '../validate.js';
import { hostedToolHandler } from './hosted.js';

export const codeInterpreterHandler = hostedToolHandler({
  types: ['code_interpreter'],
  executionType: 'code_interpreter',
  callItemType: 'code_interpreter_call',
  parse(raw, param) {
    const container = raw.container;
    if (typeof container !== 'string' && !isPlainObject(container)) {
      throw new ToolDeclarationError(`Missing required parameter: '${param}.container'.`, `${param}.container`, 'missing_required_parameter');
    }
    return raw;
  },
  functions: () => [
    {
      name: 'code_interpreter',
      description: 'Run Python code in a sandbox and get its output.',
      parameters: { type: 'object', properties: { code: { type: 'string', description: 'The Python code to run.' } }, required: ['code'], additionalProperties: false },
    },
  ],
});
