import type { JsonObject } from '../../protocol/responses.js';
import { ToolDeclarationError } from '../types.js';
import { isPlainObject, optionalBoolean, optionalObject, optionalStringArray } from '../validate.js';
import { hostedToolHandler } from '../hosted.js';
import { validateWebSearchCall } from './items.js';

const CONTEXT_SIZES = new Set(['low', 'medium', 'high']);

/** Model-visible functions of `web_search`: search, open a page, find text in a page. */
export const WEB_SEARCH_FUNCTIONS = { search: 'web_search', openPage: 'open_page', findInPage: 'find_in_page' } as const;

export const webSearchHandler = hostedToolHandler({
  types: ['web_search', 'web_search_2025_08_26', 'web_search_preview', 'web_search_preview_2025_03_11'],
  executionType: 'web_search',
  callItemType: 'web_search_call',
  validateCallItem: validateWebSearchCall,
  // the call from its public action (the results the model read are only in its record)
  replayCall(item) {
    const action = (isPlainObject(item.action) ? item.action : {}) as JsonObject;
    if (action.type === 'open_page') return { name: WEB_SEARCH_FUNCTIONS.openPage, arguments: JSON.stringify({ url: action.url ?? '' }) };
    if (action.type === 'find_in_page') return { name: WEB_SEARCH_FUNCTIONS.findInPage, arguments: JSON.stringify({ url: action.url ?? '', pattern: action.pattern ?? '' }) };
    return { name: WEB_SEARCH_FUNCTIONS.search, arguments: JSON.stringify({ query: action.query ?? '' }) };
  },
  parse(raw, param) {
    const filters = optionalObject(raw, 'filters', param);
    if (filters) {
      optionalStringArray(filters, 'allowed_domains', `${param}.filters`);
      // an extension (the Messages web search tool's `blocked_domains` arrives here)
      optionalStringArray(filters, 'blocked_domains', `${param}.filters`);
    }
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
      name: WEB_SEARCH_FUNCTIONS.search,
      description: 'Search the web. Returns numbered sources [n] with title, URL and snippet. Cite the sources you use in your answer as [n].',
      parameters: { type: 'object', properties: { query: { type: 'string', description: 'The search query.' } }, required: ['query'], additionalProperties: false },
    },
    {
      name: WEB_SEARCH_FUNCTIONS.openPage,
      description: 'Open a web page (usually one from the search results) and read its text. Cite it as [n].',
      parameters: { type: 'object', properties: { url: { type: 'string', description: 'The absolute URL to open.' } }, required: ['url'], additionalProperties: false },
    },
    {
      name: WEB_SEARCH_FUNCTIONS.findInPage,
      description: 'Find a piece of text in a web page and return the passages around each match.',
      parameters: {
        type: 'object',
        properties: { url: { type: 'string', description: 'The page URL.' }, pattern: { type: 'string', description: 'The text to look for (not a regex).' } },
        required: ['url', 'pattern'],
        additionalProperties: false,
      },
    },
  ],
});
