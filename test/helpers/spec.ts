// Validation against the Open Responses OpenAPI document (shared/spec/openresponses-openapi.json).
// OpenAPI 3.1 schemas are JSON Schema 2020-12: the whole document is registered once under the id
// `openresponses`, and each check references `openresponses#/components/schemas/<Name>`.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// The repo is <root>/main and the shared folder is <root>/shared (in CI: <clone>/../shared).
const SPEC_URL = new URL('../../../shared/spec/openresponses-openapi.json', import.meta.url);
const SPEC_ID = 'openresponses';

interface SchemaObject {
  properties?: Record<string, { enum?: unknown[] }>;
  [key: string]: unknown;
}

const spec = JSON.parse(readFileSync(fileURLToPath(SPEC_URL), 'utf8')) as {
  components: { schemas: Record<string, SchemaObject> };
};
export const SCHEMAS: Readonly<Record<string, SchemaObject>> = spec.components.schemas;

// CJS interop: under NodeNext these default imports may arrive as the module namespace.
const AjvCtor = ((Ajv2020 as unknown as { default?: typeof Ajv2020 }).default ?? Ajv2020) as typeof Ajv2020;
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as typeof addFormatsModule;

const ajv = new AjvCtor({ strict: false, allErrors: true, discriminator: true });
addFormats(ajv);
ajv.addSchema(spec as object, SPEC_ID);

const compiled = new Map<string, ValidateFunction>();
function validatorFor(schemaName: string): ValidateFunction {
  let fn = compiled.get(schemaName);
  if (!fn) {
    if (!SCHEMAS[schemaName]) throw new Error(`spec: no schema named ${schemaName}`);
    fn = ajv.compile({ $ref: `${SPEC_ID}#/components/schemas/${schemaName}` });
    compiled.set(schemaName, fn);
  }
  return fn;
}

function formatErrors(errors: ErrorObject[] | null | undefined, label: string): string[] {
  if (!errors || errors.length === 0) return [];
  // oneOf failures cascade into one error per branch; keep them all but make each one readable.
  return errors.map((e) => `${label}${e.instancePath || '/'} ${e.message ?? 'invalid'}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''} (schema ${e.schemaPath})`);
}

/** Validates `value` against `components.schemas[schemaName]`; returns error strings (empty = valid). */
export function validateAgainst(schemaName: string, value: unknown, label = schemaName): string[] {
  const fn = validatorFor(schemaName);
  return fn(value) ? [] : formatErrors(fn.errors, label);
}

/** A Response object (ResponseResource). Only meaningful for responses whose tools are plain functions. */
export function validateResponse(obj: unknown): string[] {
  return validateAgainst('ResponseResource', obj, 'response');
}

/** One output/input item (ItemField). */
export function validateItem(item: unknown): string[] {
  return validateAgainst('ItemField', item, 'item');
}

/** Event type → `*StreamingEvent` schema name, from each schema's `properties.type.enum[0]`. */
export const EVENT_SCHEMAS: ReadonlyMap<string, string> = new Map(
  Object.entries(SCHEMAS)
    .filter(([name, schema]) => name.endsWith('StreamingEvent') && typeof schema.properties?.type?.enum?.[0] === 'string')
    .map(([name, schema]) => [schema.properties!.type!.enum![0] as string, name]),
);

/**
 * OpenAI (and its SDK) name the raw-reasoning events `response.reasoning_text.*`; the Open
 * Responses spec names them `response.reasoning.*`. We emit OpenAI's names and validate them
 * against the spec's schemas after renaming the type (for validation only).
 */
export const EVENT_TYPE_ALIASES: Readonly<Record<string, string>> = {
  'response.reasoning_text.delta': 'response.reasoning.delta',
  'response.reasoning_text.done': 'response.reasoning.done',
};

/**
 * Event types in the OpenAI union (responses-api.md §5) that the Open Responses spec does not
 * define: tool-specific, not core. They are accepted without validation.
 */
export const NON_CORE_EVENT_TYPES: ReadonlySet<string> = new Set([
  'response.custom_tool_call_input.delta',
  'response.custom_tool_call_input.done',
  'response.mcp_call_arguments.delta',
  'response.mcp_call_arguments.done',
  'response.mcp_call.in_progress',
  'response.mcp_call.completed',
  'response.mcp_call.failed',
  'response.mcp_list_tools.in_progress',
  'response.mcp_list_tools.completed',
  'response.mcp_list_tools.failed',
  'response.web_search_call.in_progress',
  'response.web_search_call.searching',
  'response.web_search_call.completed',
  'response.file_search_call.in_progress',
  'response.file_search_call.searching',
  'response.file_search_call.completed',
  'response.code_interpreter_call.in_progress',
  'response.code_interpreter_call.interpreting',
  'response.code_interpreter_call.completed',
  'response.code_interpreter_call_code.delta',
  'response.code_interpreter_call_code.done',
  'response.image_generation_call.in_progress',
  'response.image_generation_call.generating',
  'response.image_generation_call.completed',
  'response.image_generation_call.partial_image',
]);

/**
 * Validates one stream event against the schema its `type` selects. Throws for a type the spec
 * does not define (unless it is a known non-core type: those return []).
 */
export function validateStreamEvent(event: unknown): string[] {
  if (event === null || typeof event !== 'object' || typeof (event as { type?: unknown }).type !== 'string') {
    return [`event: not an object with a string 'type': ${JSON.stringify(event)?.slice(0, 200)}`];
  }
  const type = (event as { type: string }).type;
  if (NON_CORE_EVENT_TYPES.has(type)) return [];
  const specType = EVENT_TYPE_ALIASES[type] ?? type;
  const schemaName = EVENT_SCHEMAS.get(specType);
  if (!schemaName) {
    throw new Error(`spec: event type '${type}' is not defined by the Open Responses spec (and is not an allowed non-core type)`);
  }
  const value = specType === type ? event : { ...(event as object), type: specType };
  const label = `event ${type} #${String((event as { sequence_number?: unknown }).sequence_number)}`;
  return validateAgainst(schemaName, value, label);
}
