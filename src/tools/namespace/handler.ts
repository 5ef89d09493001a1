import { createHash } from 'node:crypto';
import type { JsonObject } from '../../protocol/responses.js';
import type { ToolHandler } from '../handler.js';
import { ToolDeclarationError, type RegistryEntry } from '../types.js';
import { isPlainObject, requireFunctionName, requireString } from '../validate.js';
import { customEntry, parseCustom, type CustomDeclaration } from '../custom/handler.js';
import { parseFunction, type FunctionDeclaration } from '../function/handler.js';

export interface NamespaceDeclaration {
  name: string;
  description: string;
  members: Array<{ kind: 'function'; decl: FunctionDeclaration; param: string } | { kind: 'custom'; decl: CustomDeclaration; param: string }>;
}

/** Separator between a namespace and a member in model-visible names: `crm__lookup`. */
export const NAMESPACE_SEPARATOR = '__';

/**
 * The model-visible name of a namespace member: `<namespace>__<member>`, cut to 64 characters
 * with an 8-hex-digit hash suffix when longer, so it is deterministic and stays within the
 * Chat Completions name limit. The registry, not this string, restores the identity.
 */
export function flattenedName(namespace: string, member: string): string {
  const name = `${namespace}${NAMESPACE_SEPARATOR}${member}`;
  if (name.length <= 64) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, 55)}_${hash}`;
}

export const namespaceHandler: ToolHandler<NamespaceDeclaration> = {
  types: ['namespace'],
  owner: 'client',
  parse(raw, param) {
    const name = requireFunctionName(raw, param);
    const description = requireString(raw, 'description', param);
    const tools = raw.tools;
    if (!Array.isArray(tools)) {
      throw new ToolDeclarationError(`Missing required parameter: '${param}.tools'.`, `${param}.tools`, 'missing_required_parameter');
    }
    const members: NamespaceDeclaration['members'] = tools.map((member: unknown, i) => {
      const memberParam = `${param}.tools[${i}]`;
      if (!isPlainObject(member)) throw new ToolDeclarationError(`Invalid '${memberParam}': expected an object.`, memberParam, 'invalid_type');
      const type = member.type ?? 'function';
      if (type === 'function') return { kind: 'function' as const, decl: parseFunction(member, memberParam), param: memberParam };
      if (type === 'custom') return { kind: 'custom' as const, decl: parseCustom(member, memberParam), param: memberParam };
      throw new ToolDeclarationError(`Invalid '${memberParam}.type': namespace members must be 'function' or 'custom' tools.`, `${memberParam}.type`, 'invalid_value');
    });
    return { name, description, members };
  },
  normalize(decl, _param, ctx): RegistryEntry[] {
    return decl.members.map((member) => {
      const modelName = flattenedName(decl.name, member.decl.name);
      if (member.kind === 'custom') return customEntry(member.decl, modelName, member.param, decl.name, ctx.grammar);
      const fn = member.decl;
      return {
        modelName,
        fn: {
          name: modelName,
          description: fn.description ? `${decl.description}\n\n${fn.description}` : decl.description,
          parameters: fn.parameters ?? { type: 'object', properties: {} },
          ...(fn.strict !== undefined ? { strict: fn.strict } : {}),
        },
        shape: 'function',
        identity: { type: 'function', name: fn.name, namespace: decl.name },
        owner: 'client',
        declaredAt: member.param,
        deferred: fn.deferred,
      } satisfies RegistryEntry;
    });
  },
};

export type { JsonObject };
