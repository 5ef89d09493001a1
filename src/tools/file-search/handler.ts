import { GatewayError } from '../../errors.js';
import { parseSearchOptions } from '../../retrieval/request-options.js';
import { ToolDeclarationError } from '../types.js';
import { hostedToolHandler } from '../hosted.js';
import { validateFileSearchCall } from './items.js';

/** The model-visible function of `file_search`. */
export const FILE_SEARCH_FUNCTION = 'file_search';

export const fileSearchHandler = hostedToolHandler({
  types: ['file_search'],
  executionType: 'file_search',
  callItemType: 'file_search_call',
  validateCallItem: validateFileSearchCall,
  parse(raw, param) {
    const ids = raw.vector_store_ids;
    if (!Array.isArray(ids) || ids.length === 0 || ids.some((id) => typeof id !== 'string')) {
      throw new ToolDeclarationError(`Missing required parameter: '${param}.vector_store_ids'.`, `${param}.vector_store_ids`, 'missing_required_parameter');
    }
    try {
      // max_num_results (1–50), ranking_options and filters: validated here, so a bad one is a 400
      parseSearchOptions(raw, param, 10);
    } catch (err) {
      if (err instanceof GatewayError) throw new ToolDeclarationError(err.message, err.param ?? param, err.code ?? 'invalid_value');
      throw err;
    }
    return raw;
  },
  functions: () => [
    {
      name: FILE_SEARCH_FUNCTION,
      description:
        "Search the user's uploaded files. Give one or more search queries (rephrase the question, add key terms). Returns numbered passages [n] with their file names. Cite the passages you use as [n] right after the statement they support.",
      parameters: {
        type: 'object',
        properties: { queries: { type: 'array', items: { type: 'string' }, description: 'Search queries, one or more.' } },
        required: ['queries'],
        additionalProperties: false,
      },
    },
  ],
});
