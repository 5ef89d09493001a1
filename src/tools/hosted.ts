import type { ItemValidator } from '../protocol/item-validation.js';
import type { ModelFunction } from '../protocol/model.js';
import type { JsonObject } from '../protocol/responses.js';
import type { ToolHandler } from './handler.js';
import type { RegistryEntry } from './types.js';

/**
 * A gateway-owned hosted tool type (web_search, file_search, code_interpreter): the model sees
 * synthetic functions; the configured execution side runs them. Without one, the type is omitted
 * from the model (logged once) and the request still succeeds.
 */
export function hostedToolHandler<D extends JsonObject>(spec: {
  types: readonly string[];
  /** The canonical type the execution side is registered under. */
  executionType: string;
  parse(raw: JsonObject, param: string): D;
  functions(decl: D): ModelFunction[];
  /** The public item type of its calls (`web_search_call`). */
  callItemType: string;
  /** The validator of a call item a client sends back. */
  validateCallItem: ItemValidator;
  replayCall?: ToolHandler<D>['replayCall'];
}): ToolHandler<D> {
  return {
    types: spec.types,
    owner: 'gateway',
    parse: spec.parse,
    callItemTypes: [spec.callItemType],
    items: { [spec.callItemType]: spec.validateCallItem },
    choiceType: spec.executionType,
    ...(spec.replayCall ? { replayCall: spec.replayCall } : {}),
    normalize(decl, param, ctx): RegistryEntry[] {
      const execution = ctx.executionFor(spec.executionType, decl, ctx.request);
      if (!execution) {
        ctx.logOnce(spec.executionType, `${spec.executionType} omitted from the model: no executor configured`);
        return [];
      }
      return spec.functions(decl).map((fn) => ({
        modelName: fn.name,
        fn,
        shape: 'gateway' as const,
        identity: { type: spec.executionType, name: fn.name },
        owner: 'gateway' as const,
        execution,
        declaredAt: param,
      }));
    },
  };
}
