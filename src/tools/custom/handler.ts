import { FormatCache, GrammarDefinitionError, type FormatChecker } from '../../grammar/index.js';
import type { JsonObject } from '../../protocol/responses.js';
import type { GrammarSettings, ToolHandler } from '../handler.js';
import { CUSTOM_INPUT_KEY, ToolDeclarationError, type InputCheck, type RegistryEntry } from '../types.js';
import { replayedName, replayedOutput } from '../replay.js';
import { optionalBoolean, optionalObject, optionalString, requireFunctionName, requireString } from '../validate.js';

export interface CustomDeclaration {
  name: string;
  description?: string;
  format: { type: 'text' } | { type: 'grammar'; syntax: 'lark' | 'regex'; definition: string };
  deferred: boolean;
  /** The compiled grammar (grammar formats only), shared by every request declaring the same one. */
  checker?: FormatChecker;
  /** Why a grammar format is not checked (it uses LLGuidance syntax the recognizer lacks). */
  unchecked?: string;
}

/** Compiled grammars by definition text: Codex's apply_patch grammar is compiled once per process. */
const formats = new FormatCache(256);

/** Grammar mismatches since start, by what the engine did with them (`repair`, `reject`, `returned`). */
export const grammarMismatches = { repair: 0, reject: 0, returned: 0 };

/** The single string parameter a custom tool's input travels in. */
export { CUSTOM_INPUT_KEY };

export function parseCustom(raw: JsonObject, param: string): CustomDeclaration {
  const name = requireFunctionName(raw, param);
  const format = optionalObject(raw, 'format', param);
  let parsedFormat: CustomDeclaration['format'] = { type: 'text' };
  let checker: FormatChecker | undefined;
  let unchecked: string | undefined;
  if (format !== undefined) {
    if (format.type === 'grammar') {
      const syntax = format.syntax;
      if (syntax !== 'lark' && syntax !== 'regex') {
        throw new ToolDeclarationError(`Invalid '${param}.format.syntax': expected 'lark' or 'regex'.`, `${param}.format.syntax`, 'invalid_value');
      }
      parsedFormat = { type: 'grammar', syntax, definition: requireString(format, 'definition', `${param}.format`) };
      const compiled = compileFormat(syntax, parsedFormat.definition, `${param}.format.definition`);
      if (typeof compiled === 'string') unchecked = compiled;
      else checker = compiled;
    } else if (format.type !== 'text') {
      throw new ToolDeclarationError(`Invalid '${param}.format.type': expected 'text' or 'grammar'.`, `${param}.format.type`, 'invalid_value');
    }
  }
  return {
    name,
    description: optionalString(raw, 'description', param),
    format: parsedFormat,
    deferred: optionalBoolean(raw, 'defer_loading', param) ?? false,
    ...(checker ? { checker } : {}),
    ...(unchecked ? { unchecked } : {}),
  };
}

/**
 * The compiled grammar; a 400 for an invalid one. A grammar using LLGuidance extensions this
 * recognizer lacks is valid for the client's model provider, so the request is served and the
 * input left unchecked (the returned reason is logged).
 */
function compileFormat(syntax: 'lark' | 'regex', definition: string, param: string): FormatChecker | string {
  try {
    return formats.get(syntax, definition);
  } catch (err) {
    if (err instanceof GrammarDefinitionError && err.unsupported) return err.message;
    if (err instanceof GrammarDefinitionError) throw new ToolDeclarationError(`Invalid '${param}': the ${syntax} grammar cannot be compiled: ${err.message}.`, param, 'invalid_value');
    throw err;
  }
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
  // the model called a function whose one parameter is the raw input
  clientCallItems: { call: 'custom_tool_call', output: 'custom_tool_call_output' },
  replayItemTypes: ['custom_tool_call', 'custom_tool_call_output'],
  replay: (item, ctx) =>
    item.type === 'custom_tool_call_output'
      ? [replayedOutput(item)]
      : [{ type: 'function_call', callId: item.call_id as string, name: replayedName(ctx, 'custom', item.name as string, item.namespace), arguments: JSON.stringify({ [CUSTOM_INPUT_KEY]: item.input }) }],
  normalize(decl, param, ctx): RegistryEntry[] {
    if (decl.unchecked) ctx.logOnce(`grammar-unchecked:${decl.name}`, `custom tool '${decl.name}': input not checked, its grammar uses unsupported syntax (${decl.unchecked})`);
    return [customEntry(decl, decl.name, param, undefined, ctx.grammar)];
  },
};

export function customEntry(decl: CustomDeclaration, modelName: string, param: string, namespace?: string, grammar?: GrammarSettings): RegistryEntry {
  const inputCheck = decl.checker ? grammarCheck(decl, decl.checker, grammar) : undefined;
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
    ...(inputCheck ? { inputCheck } : {}),
    ...(decl.checker && decl.format.type === 'grammar'
      ? { constrained: { grammar: { syntax: decl.format.syntax, definition: decl.format.definition }, callArguments: (input: string) => JSON.stringify({ [CUSTOM_INPUT_KEY]: input }) } }
      : {}),
  };
}

/** The engine-side check of a custom tool's input against its grammar. */
function grammarCheck(decl: CustomDeclaration, checker: FormatChecker, grammar: GrammarSettings | undefined): InputCheck {
  return {
    policy: grammar?.policy ?? 'retry',
    check(input) {
      const mismatch = checker.check(input);
      if (!mismatch) return undefined;
      return `the input does not match the tool's ${checker.syntax} grammar at ${mismatch.message}`;
    },
    onMismatch(action, problem) {
      grammarMismatches[action]++;
      grammar?.log?.(`custom tool input does not match its grammar (${action})`, { tool: decl.name, action, problem: problem.slice(0, 500) });
    },
  };
}
