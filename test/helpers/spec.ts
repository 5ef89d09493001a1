// Validation against the Open Responses OpenAPI document (test/fixtures/spec/openresponses-openapi.json).
// OpenAPI 3.1 schemas are JSON Schema 2020-12: the whole document is registered once under the id
// `openresponses`, and each check references `openresponses#/components/schemas/<Name>`.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';

// A copy kept in the repo (test/fixtures/spec), so a clone stands alone.
const SPEC_URL = new URL('../fixtures/spec/openresponses-openapi.json', import.meta.url);
const SPEC_ID = 'openresponses';

interface SchemaObject {
  properties?: Record<string, { enum?: unknown[] }>;
  [key: string]: unknown;
}

const spec = JSON.parse(readFileSync(fileURLToPath(SPEC_URL), 'utf8')) as {
  components: { schemas: Record<string, SchemaObject> };
};
export const SCHEMAS: Readonly<Record<string, SchemaObject>> = spec.components.schemas;

// CJS interop: under NodeNext the default import of ajv-formats is the module namespace.
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as unknown as FormatsPlugin;

const ajv = new Ajv2020({ strict: false, allErrors: true, discriminator: true });
addFormats(ajv);
ajv.addSchema(spec as object, SPEC_ID);

const compiled = new Map<string, ValidateFunction>();
function validatorFor(schemaName: string): ValidateFunction {
  const cached = compiled.get(schemaName);
  if (cached) return cached;
  if (!SCHEMAS[schemaName]) throw new Error(`spec: no schema named ${schemaName}`);
  const fn = ajv.compile({ $ref: `${SPEC_ID}#/components/schemas/${schemaName}` });
  compiled.set(schemaName, fn);
  return fn;
}

function formatErrors(errors: ErrorObject[] | null | undefined, label: string): string[] {
  if (!errors || errors.length === 0) return [];
  // With `discriminator` on, a oneOf keyed by `type` reports only the branch the type selects.
  return errors.map((e) => `${label}${e.instancePath || '/'} ${e.message ?? 'invalid'}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''} (schema ${e.schemaPath})`);
}

/** Validates `value` against `components.schemas[schemaName]`; returns error strings (empty = valid). */
export function validateAgainst(schemaName: string, value: unknown, label = schemaName): string[] {
  const fn = validatorFor(schemaName);
  return fn(value) ? [] : formatErrors(fn.errors, label);
}

/**
 * A Response object (ResponseResource). The spec's `Tool` union has only FunctionTool, so a
 * Response declaring any other tool type cannot be validated: that is a test mistake (throws).
 */
export function validateResponse(obj: unknown): string[] {
  const tools = (obj as { tools?: unknown } | null)?.tools;
  if (Array.isArray(tools)) {
    const other = tools.filter((t) => (t as { type?: unknown } | null)?.type !== 'function');
    if (other.length > 0) {
      throw new Error(`spec: validateResponse only handles plain function tools (spec Tool = FunctionTool); got ${other.map((t) => JSON.stringify((t as { type?: unknown }).type)).join(', ')}`);
    }
  }
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

// ---------- stream invariants (responses-api.md §5) ----------

export const TERMINAL_TYPES: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete', 'response.failed', 'response.cancelled', 'error']);

/** Id prefix by output item type, as OpenAI mints them. */
export const ITEM_ID_PREFIX: Readonly<Record<string, string>> = {
  message: 'msg_',
  function_call: 'fc_',
  reasoning: 'rs_',
  custom_tool_call: 'ctc_',
};

type Ev = Record<string, any>;

interface OpenItem {
  id: string;
  type: string;
  done: boolean;
  /** Content parts opened by content_part.added (message or reasoning content). */
  parts: Array<{ type: string; text: string; done: boolean; textDone: boolean }>;
  args: string;
  argsDone: boolean;
}

/**
 * Checks the ordering rules of one complete stream: sequence numbers, lifecycle, exactly one
 * terminal event, output/content indexes, item ids, and that deltas add up to the done events and
 * to the final response. Returns human-readable problems (empty = fine).
 */
export function checkStreamInvariants(events: readonly Ev[]): string[] {
  const problems: string[] = [];
  const fail = (msg: string) => problems.push(msg);
  if (events.length === 0) return ['stream has no events'];

  events.forEach((e, i) => {
    if (e.sequence_number !== i) fail(`event #${i} (${e.type}) has sequence_number ${String(e.sequence_number)}, expected ${i}`);
  });
  if (events[0]?.type !== 'response.created') fail(`first event is ${events[0]?.type}, expected response.created`);
  // a background response is created queued: created → queued → in_progress
  const queued = (events[0] as { response?: { status?: string } } | undefined)?.response?.status === 'queued';
  const lifecycle = queued ? ['response.queued', 'response.in_progress'] : ['response.in_progress'];
  lifecycle.forEach((type, k) => {
    if (events[k + 1]?.type !== type) fail(`event #${k + 1} is ${events[k + 1]?.type}, expected ${type}`);
  });
  const terminals = events.map((e, i) => [e.type, i] as const).filter(([t]) => TERMINAL_TYPES.has(t));
  if (terminals.length !== 1) fail(`expected exactly one terminal event, got ${JSON.stringify(terminals)}`);
  else if (terminals[0][1] !== events.length - 1) fail(`terminal event ${terminals[0][0]} is at #${terminals[0][1]}, not last (#${events.length - 1})`);

  const responseId = events[0]?.response?.id;
  if (typeof responseId !== 'string' || !responseId.startsWith('resp_')) fail(`response id ${String(responseId)} lacks the resp_ prefix`);

  const items: OpenItem[] = [];
  const doneItems: Ev[] = [];
  for (const e of events) {
    const at = `#${String(e.sequence_number)} ${String(e.type)}`;
    if (e.response !== undefined && e.response?.id !== responseId) fail(`${at}: response.id ${String(e.response?.id)} differs from ${String(responseId)}`);
    if (e.type === 'response.output_item.added') {
      if (e.output_index !== items.length) fail(`${at}: output_index ${String(e.output_index)}, expected ${items.length} (strictly increasing from 0, no gaps)`);
      const item = e.item ?? {};
      const prefix = ITEM_ID_PREFIX[item.type];
      if (prefix && !(typeof item.id === 'string' && item.id.startsWith(prefix))) fail(`${at}: ${String(item.type)} id ${String(item.id)} lacks the ${prefix} prefix`);
      if (items.some((it) => it.id === item.id)) fail(`${at}: item id ${String(item.id)} reused`);
      items.push({ id: item.id, type: item.type, done: false, parts: [], args: '', argsDone: false });
      continue;
    }
    if (e.output_index === undefined) continue;
    const item = items[e.output_index];
    if (!item) {
      fail(`${at}: output_index ${String(e.output_index)} references no item added before`);
      continue;
    }
    if (item.done) fail(`${at}: event for item ${item.id} after its output_item.done`);
    if (e.type === 'response.output_item.done') {
      if (e.item?.id !== item.id) fail(`${at}: item.id ${String(e.item?.id)} differs from the added item ${item.id}`);
      if (e.item?.type !== item.type) fail(`${at}: item.type ${String(e.item?.type)} differs from the added type ${item.type}`);
      if (item.parts.some((p) => !p.done)) fail(`${at}: item done with a content part still open`);
      if (item.type === 'function_call' && !item.argsDone) fail(`${at}: function_call done before function_call_arguments.done`);
      if (item.type === 'function_call' && e.item?.arguments !== item.args) fail(`${at}: item.arguments ${JSON.stringify(e.item?.arguments)} differs from the deltas ${JSON.stringify(item.args)}`);
      item.done = true;
      doneItems[e.output_index] = e.item;
      continue;
    }
    if (e.item_id !== item.id) fail(`${at}: item_id ${String(e.item_id)} does not match the item at output_index ${String(e.output_index)} (${item.id})`);
    switch (e.type) {
      case 'response.content_part.added': {
        if (e.content_index !== item.parts.length) fail(`${at}: content_index ${String(e.content_index)}, expected ${item.parts.length}`);
        if (item.parts.some((p) => !p.done)) fail(`${at}: a new part opened while another is open`);
        const partType = e.part?.type;
        if (item.type === 'message' && partType !== 'output_text' && partType !== 'refusal') fail(`${at}: message part type ${String(partType)}`);
        if (item.type === 'reasoning' && partType !== 'reasoning_text') fail(`${at}: reasoning part type ${String(partType)}`);
        item.parts.push({ type: partType, text: '', done: false, textDone: false });
        break;
      }
      case 'response.content_part.done': {
        const part = item.parts[e.content_index];
        if (!part) fail(`${at}: content_index ${String(e.content_index)} was never added`);
        else {
          if (part.done) fail(`${at}: part done twice`);
          if (!part.textDone) fail(`${at}: part done before its text/refusal done event`);
          if (e.part?.type !== part.type) fail(`${at}: part.type ${String(e.part?.type)} differs from the added ${part.type}`);
          const text = part.type === 'refusal' ? e.part?.refusal : e.part?.text;
          if (text !== part.text) fail(`${at}: part text ${JSON.stringify(text)} differs from the deltas ${JSON.stringify(part.text)}`);
          part.done = true;
        }
        break;
      }
      case 'response.output_text.delta':
      case 'response.output_text.done':
      case 'response.refusal.delta':
      case 'response.refusal.done':
      case 'response.reasoning_text.delta':
      case 'response.reasoning_text.done': {
        const want = e.type.startsWith('response.output_text') ? 'output_text' : e.type.startsWith('response.refusal') ? 'refusal' : 'reasoning_text';
        const part = item.parts[e.content_index];
        if (!part) {
          fail(`${at}: content_index ${String(e.content_index)} references no open part`);
          break;
        }
        if (part.type !== want) fail(`${at}: targets a ${part.type} part`);
        if (part.done || part.textDone) fail(`${at}: targets a finished part`);
        if (e.type.endsWith('.delta')) part.text += e.delta;
        else {
          const text = want === 'refusal' ? e.refusal : e.text;
          if (text !== part.text) fail(`${at}: final text ${JSON.stringify(text)} differs from the deltas ${JSON.stringify(part.text)}`);
          part.textDone = true;
        }
        break;
      }
      case 'response.function_call_arguments.delta':
        if (item.type !== 'function_call') fail(`${at}: targets a ${item.type}`);
        if (item.argsDone) fail(`${at}: delta after arguments.done`);
        item.args += e.delta;
        break;
      case 'response.function_call_arguments.done':
        if (item.type !== 'function_call') fail(`${at}: targets a ${item.type}`);
        if (e.arguments !== item.args) fail(`${at}: arguments ${JSON.stringify(e.arguments)} differ from the deltas ${JSON.stringify(item.args)}`);
        item.argsDone = true;
        break;
      default:
        break;
    }
  }

  const last = events[events.length - 1];
  if (last?.response) {
    const open = items.filter((it) => !it.done);
    if (open.length > 0) fail(`items never done: ${open.map((it) => it.id).join(', ')}`);
    const output: Ev[] = last.response.output ?? [];
    if (output.length !== items.length) fail(`final response has ${output.length} output items, the stream added ${items.length}`);
    output.forEach((item, i) => {
      if (doneItems[i] && JSON.stringify(item) !== JSON.stringify(doneItems[i])) fail(`final output[${i}] differs from its output_item.done item`);
    });
  }
  return problems;
}
