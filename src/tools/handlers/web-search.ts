import { ToolDeclarationError } from '../types.js';
import { isPlainObject, optionalBoolean, optionalObject, optionalStringArray } from '../validate.js';
import { hostedToolHandler } from './hosted.js';

const CONTEXT_SIZES = new Set(['low', 'medium', 'high']);

export const webSearchHandler = hostedToolHandler({
  types: ['web_search', 'web_search_2025_08_26', 'web_search_preview', 'web_search_preview_2025_03_11'],
  executionType: 'web_search',
  parse(raw, param) {
    const filters = optionalObject(raw, 'filters', param);
    if (filters) optionalStringArray(filters, 'allowed_domains', `${param}.filters`);
    const size = raw.search_context_size;
    if (size !== undefined && size !== null && !CONTEXT_SIZES.has(size as string)) {
      throw new ToolDeclarationError(`Invalid '${param}.search_context_size': expected 'low', 'medium' or 'high'.`, `${param}.search_context_size`, 'invalid_value');
    }
    const location = raw.user_location;
    if (location !== undefined && location !== null && !isPlainObject(location)) {
      throw new ToolDeclarationError(`Invalid type for '${param}.user_location': expected an object.`, `${param}.user_location`, 'invalid_type');
    }
    optionalBoolean(raw, 'external_web_access', param);
    return raw;
  },
  functions: () => [
    {
      name: 'web_search',
      description: 'Search the web. Returns numbered sources with title, URL and snippet; cite them as [n].',
      parameters: { type: 'object', properties: { query: { type: 'string', description: 'The search query.' } }, required: ['query'], additionalProperties: false },
    },
  ],
});
