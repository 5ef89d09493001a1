import type { JsonObject } from '../../protocol/responses.js';
import type { ToolHandler } from '../handler.js';
import { ToolDeclarationError, type RegistryEntry } from '../types.js';
import { optionalBoolean, optionalObject, optionalString, requireFunctionName, requireString } from '../validate.js';

export interface CustomDeclaration {
  name: string;
  description?: string;
  format: { type: 'text' } | { type: 'grammar'; syntax: 'lark' | 'regex'; definition: string };
  deferred: boolean;
}

/** The single string parameter a custom tool's input travels in. */
export const CUSTOM_INPUT_KEY = 'input';

export function parseCustom(raw: JsonObject, param: string): CustomDeclaration {
  const name = requireFunctionName(raw, param);
  const format = optionalObject(raw, 'format', param);
  let parsedFormat: CustomDeclaration['format'] = { type: 'text' };
  if (format !== undefined) {
    if (format.type === 'grammar') {
      const syntax = format.syntax;
      if (syntax !== 'lark' && syntax !== 'regex') {
        throw new ToolDeclarationError(`Invalid '${param}.format.syntax': expected 'lark' or 'regex'.`, `${param}.format.syntax`, 'invalid_value');
      }
      parsedFormat = { type: 'grammar', syntax, definition: requireString(format, 'definition', `${param}.format`) };
    } else if (format.type !== 'text') {
      throw new ToolDeclarationError(`Invalid '${param}.format.type': expected 'text' or 'grammar'.`, `${param}.format.type`, 'invalid_value');
    }
  }
  return {
    name,
    description: optionalString(raw, 'description', param),
    format: parsedFormat,
    deferred: optionalBoolean(raw, 'defer_loading', param) ?? false,
  };
}

/** How the model is told what the freeform input must look like. */
export function customToolDescription(decl: CustomDeclaration): string {
  const parts: string[] = [];
  if (decl.description) parts.push(decl.description);
  parts.push(`Put the raw freeform input in the "${CUSTOM_INPUT_KEY}" string, not wrapped in any further JSON.`);
  if (decl.format.type === 'grammar') {
    parts.push(`The input must match this ${decl.format.syntax} grammar:\n${decl.format.definition}`);
  }
  return parts.join('\n\n');
}

/**
 * Client-owned freeform tool: the model sees a function with one required string `input`;
 * calls return to the client as `custom_tool_call` with the raw input.
 */
export const customHandler: ToolHandler<CustomDeclaration> = {
  types: ['custom'],
  owner: 'client',
  parse: parseCustom,
  normalize(decl, param): RegistryEntry[] {
    return [customEntry(decl, decl.name, param)];
  },
};

export function customEntry(decl: CustomDeclaration, modelName: string, param: string, namespace?: string): RegistryEntry {
  return {
    modelName,
    fn: {
      name: modelName,
      description: customToolDescription(decl),
      parameters: {
        type: 'object',
        properties: { [CUSTOM_INPUT_KEY]: { type: 'string', description: 'The raw freeform input.' } },
        required: [CUSTOM_INPUT_KEY],
        additionalProperties: false,
      },
    },
    shape: 'custom',
    identity: { type: 'custom', name: decl.name, ...(namespace !== undefined ? { namespace } : {}) },
    owner: 'client',
    declaredAt: param,
    deferred: decl.deferred,
  };
}
