import type { JsonObject } from '../../protocol/responses.js';
import type { ToolHandler } from '../handler.js';
import { ToolDeclarationError, type RegistryEntry } from '../types.js';
import { isPlainObject, requireFunctionName, requireString } from '../validate.js';
import { flattenedName, NAMESPACE_SEPARATOR } from '../names.js';
import { customEntry, parseCustom, type CustomDeclaration } from '../custom/handler.js';
import { parseFunction, type FunctionDeclaration } from '../function/handler.js';
import { keptFunction } from '../kept-functions.js';

export interface NamespaceDeclaration {
  name: string;
  description: string;
  members: Array<{ kind: 'function'; decl: FunctionDeclaration; param: string } | { kind: 'custom'; decl: CustomDeclaration; param: string }>;
}

export { flattenedName, NAMESPACE_SEPARATOR };

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
        fn: keptFunction({
          name: modelName,
          description: fn.description ? `${decl.description}\n\n${fn.description}` : decl.description,
          parameters: fn.parameters ?? { type: 'object', properties: {} },
          ...(fn.strict !== undefined ? { strict: fn.strict } : {}),
        }),
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
