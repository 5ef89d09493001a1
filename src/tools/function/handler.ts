import { withAddedFields } from '../../protocol/client-objects.js';
import type { ModelFunction } from '../../protocol/model.js';
import type { JsonObject } from '../../protocol/responses.js';
import type { ToolHandler } from '../handler.js';
import { ToolDeclarationError, type RegistryEntry } from '../types.js';
import { replayedName, replayedOutput } from '../replay.js';
import { optionalBoolean, optionalObject, optionalString, requireFunctionName } from '../validate.js';
import { validateFunctionCall, validateFunctionCallOutput } from './items.js';
import { keptFunction } from '../kept-functions.js';

export interface FunctionDeclaration {
  name: string;
  description?: string;
  parameters?: JsonObject;
  strict?: boolean;
  deferred: boolean;
}

export function parseFunction(raw: JsonObject, param: string): FunctionDeclaration {
  const name = requireFunctionName(raw, param);
  const parameters = optionalObject(raw, 'parameters', param);
  if (parameters !== undefined && parameters.type !== undefined && parameters.type !== 'object') {
    throw new ToolDeclarationError(`Invalid schema for function '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${String(parameters.type)}"'.`, `${param}.parameters`, 'invalid_function_parameters');
  }
  return {
    name,
    description: optionalString(raw, 'description', param),
    parameters,
    strict: optionalBoolean(raw, 'strict', param),
    deferred: optionalBoolean(raw, 'defer_loading', param) ?? false,
  };
}

/** Client-owned plain function: shown to the model as declared. */
export const functionHandler: ToolHandler<FunctionDeclaration> = {
  types: ['function'],
  owner: 'client',
  parse: parseFunction,
  items: { function_call: validateFunctionCall, function_call_output: validateFunctionCallOutput },
  clientCallItems: { call: 'function_call', output: 'function_call_output' },
  replayItemTypes: ['function_call', 'function_call_output'],
  replay(item, ctx) {
    if (item.type === 'function_call_output') return [replayedOutput(item)];
    if (item.type !== 'function_call') return [];
    return [{ type: 'function_call', callId: item.call_id, name: replayedName(ctx, 'function', item.name, item.namespace), arguments: item.arguments }];
  },
  // echoed with the optional fields made explicit, as OpenAI does
  echo: (raw) => withAddedFields(raw, { description: raw.description ?? null, parameters: raw.parameters ?? null, strict: raw.strict ?? null }),
  normalize(decl, param): RegistryEntry[] {
    return [
      {
        modelName: decl.name,
        fn: keptFunction(modelFunction(decl)),
        shape: 'function',
        identity: { type: 'function', name: decl.name },
        owner: 'client',
        declaredAt: param,
        deferred: decl.deferred,
      },
    ];
  },
};

/** The function as the model sees it: `name`, `description`, `parameters`, `strict`, the optional ones when declared (set one by one, not by conditional spreads). */
function modelFunction(decl: FunctionDeclaration): ModelFunction {
  const fn: ModelFunction = { name: decl.name };
  if (decl.description !== undefined) fn.description = decl.description;
  fn.parameters = decl.parameters ?? { type: 'object', properties: {} };
  if (decl.strict !== undefined) fn.strict = decl.strict;
  return fn;
}
