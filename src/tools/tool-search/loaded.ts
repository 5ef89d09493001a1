import type { Item, ToolSearchOutputItem } from '../../protocol/responses.js';
import type { LoadableRegistry } from '../types.js';
import { entriesNamedBy } from './catalog.js';
import { searchResultText } from './execution.js';

/**
 * Tools a hosted search loaded earlier in the conversation (stored chain, conversation, or
 * `tool_search_output` items echoed back) stay loaded: they are callable on later turns without
 * searching again. Only tools this request still declares deferred can be loaded.
 */
export function markSearchedTools(items: readonly Item[], registry: LoadableRegistry): void {
  for (const item of items) {
    if (item.type !== 'tool_search_output' || item.execution !== 'server') continue;
    for (const entry of entriesNamedBy(item.tools, registry)) if (entry.deferred) registry.markLoaded(entry.modelName);
  }
}

/** What the model read as an earlier hosted search's result, rebuilt from the tools it loaded. */
export function replaySearchResult(item: ToolSearchOutputItem, registry: LoadableRegistry): string {
  return searchResultText(entriesNamedBy(item.tools, registry), registry.deferral);
}
