import { ToolDeclarationError } from '../types.js';
import { hostedToolHandler } from './hosted.js';

export const fileSearchHandler = hostedToolHandler({
  types: ['file_search'],
  executionType: 'file_search',
  callItemType: 'file_search_call',
  parse(raw, param) {
    const ids = raw.vector_store_ids;
    if (!Array.isArray(ids) || ids.length === 0 || ids.some((id) => typeof id !== 'string')) {
      throw new ToolDeclarationError(`Missing required parameter: '${param}.vector_store_ids'.`, `${param}.vector_store_ids`, 'missing_required_parameter');
    }
    const max = raw.max_num_results;
    if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > 50)) {
      throw new ToolDeclarationError(`Invalid '${param}.max_num_results': expected an integer from 1 to 50.`, `${param}.max_num_results`, 'invalid_value');
    }
    return raw;
  },
  functions: () => [
    {
      name: 'file_search',
      description: 'Search the attached files. Returns the most relevant passages.',
      parameters: { type: 'object', properties: { query: { type: 'string', description: 'What to look for.' } }, required: ['query'], additionalProperties: false },
    },
  ],
});
