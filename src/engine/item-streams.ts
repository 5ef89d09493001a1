import type { ModelItem } from '../protocol/model.js';
import { JsonStringFieldDecoder } from '../protocol/json-string-field.js';
import { ID_PREFIX, type Annotation, type CustomToolCallItem, type FunctionCallItem, type OutputMessageItem, type OutputTextPart, type ReasoningItem, type RefusalPart, type ToolSearchCallItem } from '../protocol/responses.js';
import { CUSTOM_INPUT_KEY, type RegistryEntry } from '../tools/types.js';
import { newId } from '../util/ids.js';
import { jsonString } from '../util/json.js';
import type { ResponseAccumulator } from './accumulator.js';
import type { DeltaHead } from './types.js';
import { scanCitations, scanFileCitations, takeFileCitations, type CitationBook } from './citations.js';

/**
 * Small stream-state objects, one per open public item, each with `push()` / `finish()`.
 * They translate gateway-level deltas into public events through the accumulator.
 */

export class MessageStream {
  private readonly item: OutputMessageItem;
  private readonly outputIndex: number;
  private part: OutputTextPart | RefusalPart | null = null;
  /** The fixed fields of the open part's delta events (set when a part opens). */
  private partHead!: DeltaHead;
  private citationScan = 0;
  /** Text held back because it may be the start of a file marker cut by a delta boundary. */
  private heldText = '';
  /**
   * While streaming, the item's events are written from their fixed text (`messageJson`,
   * `partJson`: exactly `JSON.stringify` of the objects, a part's text serialised once for its
   * events and the item's): the item's id as JSON, and each closed part's JSON.
   */
  private readonly idJson: string;
  private readonly partsJson: string[] = [];

  /** With a citation book, `[n]` markers naming known sources become `url_citation` annotations. */
  constructor(private readonly acc: ResponseAccumulator, private readonly citations?: CitationBook) {
    const id = newId(ID_PREFIX.message);
    this.item = { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] };
    this.idJson = acc.streaming ? JSON.stringify(id) : '';
    this.outputIndex = acc.addItem(this.item, acc.streaming ? messageJson(this.idJson, 'in_progress', '') : undefined);
  }

  pushText(delta: string): void {
    if (this.part?.type !== 'output_text') this.openPart({ type: 'output_text', text: '', annotations: [], logprobs: [] });
    if (this.citations?.hasFiles) return this.pushCitingFiles(delta, false);
    this.appendText(delta);
  }

  private appendText(delta: string): void {
    const part = this.part as OutputTextPart;
    part.text += delta;
    this.acc.emitDelta('response.output_text.delta', this.partHead, delta, ',"logprobs":[]');
    if (this.citations && this.citations.size > 0) {
      const { annotations, next } = scanCitations(part.text, this.citationScan, this.citations);
      this.citationScan = next;
      for (const annotation of annotations) this.addAnnotation(annotation);
    }
  }

  /** File sources were shown: their `[n]` markers leave the text and become `file_citation`s. */
  private pushCitingFiles(delta: string, final: boolean): void {
    const part = this.part as OutputTextPart;
    const { emit, held, annotations } = takeFileCitations(this.heldText + delta, part.text.length, this.citations!, final);
    this.heldText = held;
    if (emit.length > 0) this.appendText(emit);
    for (const annotation of annotations) this.addAnnotation(annotation);
  }

  private addAnnotation(annotation: Annotation): void {
    const part = this.part as OutputTextPart;
    part.annotations.push(annotation);
    this.acc.emit('response.output_text.annotation.added', {
      item_id: this.item.id,
      output_index: this.outputIndex,
      content_index: this.item.content.length - 1,
      annotation_index: part.annotations.length - 1,
      annotation,
    });
  }

  private annotateFiles(part: OutputTextPart, contentIndex: number): void {
    for (const annotation of scanFileCitations(part.text, this.citations!.citedFiles)) {
      part.annotations.push(annotation);
      this.acc.emit('response.output_text.annotation.added', { item_id: this.item.id, output_index: this.outputIndex, content_index: contentIndex, annotation_index: part.annotations.length - 1, annotation });
    }
  }

  pushRefusal(delta: string): void {
    if (this.part?.type !== 'refusal') this.openPart({ type: 'refusal', refusal: '' });
    (this.part as RefusalPart).refusal += delta;
    this.acc.emitDelta('response.refusal.delta', this.partHead, delta);
  }

  /** The text as the model will see it in the next round. */
  toModelItem(): ModelItem {
    let text = '';
    for (const part of this.item.content) text += part.type === 'output_text' ? part.text : part.refusal;
    return { type: 'message', role: 'assistant', content: [{ type: 'text', text }] };
  }

  finish(status: 'completed' | 'incomplete' = 'completed'): void {
    this.closePart();
    this.item.status = status;
    this.acc.doneItem(this.outputIndex, this.item, this.acc.streaming ? messageJson(this.idJson, status, this.partsJson.join(',')) : undefined);
  }

  /** The fields every event of the part at `contentIndex` starts with (`"item_id":…,"output_index":…,"content_index":…`). */
  private partFields(contentIndex: number): string {
    return `"item_id":${this.idJson},"output_index":${this.outputIndex},"content_index":${contentIndex}`;
  }

  private openPart(part: OutputTextPart | RefusalPart): void {
    this.closePart();
    this.citationScan = 0;
    // the part object is announced empty, then filled by deltas
    this.item.content.push(part);
    this.part = part;
    const contentIndex = this.item.content.length - 1;
    this.partHead = this.acc.deltaHead(this.item.id, this.outputIndex, contentIndex);
    const announced = part.type === 'output_text' ? EMPTY_TEXT_PART_JSON : EMPTY_REFUSAL_PART_JSON;
    this.acc.emitFields('response.content_part.added', this.acc.streaming ? `${this.partFields(contentIndex)},"part":${announced}` : '');
  }

  private closePart(): void {
    if (this.heldText.length > 0 && this.part?.type === 'output_text') this.pushCitingFiles('', true);
    const part = this.part;
    if (part === null) return;
    const contentIndex = this.item.content.length - 1;
    if (part.type === 'output_text' && this.citations && this.citations.citedFiles.size > 0) this.annotateFiles(part, contentIndex);
    const doneType = part.type === 'output_text' ? 'response.output_text.done' : 'response.refusal.done';
    if (!this.acc.streaming) {
      this.acc.emitFields(doneType, '');
      this.acc.emitFields('response.content_part.done', '');
    } else {
      const fields = this.partFields(contentIndex);
      let json: string;
      if (part.type === 'output_text') {
        const text = jsonString(part.text);
        this.acc.emitFields(doneType, `${fields},"text":${text},"logprobs":[]`);
        json = `{"type":"output_text","text":${text},"annotations":${jsonArray(part.annotations)}${part.logprobs === undefined ? '' : `,"logprobs":${jsonArray(part.logprobs)}`}}`;
      } else {
        const refusal = jsonString(part.refusal);
        this.acc.emitFields(doneType, `${fields},"refusal":${refusal}`);
        json = `{"type":"refusal","refusal":${refusal}}`;
      }
      this.acc.emitFields('response.content_part.done', `${fields},"part":${json}`);
      this.partsJson.push(json);
    }
    this.part = null;
  }
}

/** An assistant message's JSON as `JSON.stringify` writes its object (`MessageStream.item`), its parts' JSON given. */
function messageJson(idJson: string, status: OutputMessageItem['status'], partsJson: string): string {
  return `{"type":"message","id":${idJson},"status":"${status}","role":"assistant","content":[${partsJson}]}`;
}

/** The parts as `content_part.added` announces them, empty. */
const EMPTY_TEXT_PART_JSON = '{"type":"output_text","text":"","annotations":[],"logprobs":[]}';
const EMPTY_REFUSAL_PART_JSON = '{"type":"refusal","refusal":""}';

/** `JSON.stringify(list)`, without the call for the empty list a part nearly always has. */
function jsonArray(list: readonly unknown[]): string {
  return list.length === 0 ? '[]' : JSON.stringify(list);
}

/** Raw reasoning of open models: one `reasoning_text` content part (OpenAI's event names). */
export class ReasoningStream {
  private readonly item: ReasoningItem;
  private readonly outputIndex: number;
  private readonly part = { type: 'reasoning_text' as const, text: '' };
  private readonly head: DeltaHead;

  constructor(private readonly acc: ResponseAccumulator) {
    this.item = { type: 'reasoning', id: newId(ID_PREFIX.reasoning), summary: [], content: [] };
    this.outputIndex = acc.addItem(this.item);
    this.head = acc.deltaHead(this.item.id, this.outputIndex, 0);
    this.item.content!.push(this.part);
    acc.emit('response.content_part.added', { item_id: this.item.id, output_index: this.outputIndex, content_index: 0, part: { type: 'reasoning_text', text: '' } });
  }

  push(delta: string): void {
    this.part.text += delta;
    this.acc.emitDelta('response.reasoning_text.delta', this.head, delta);
  }

  toModelItem(): ModelItem {
    return { type: 'reasoning', text: this.part.text };
  }

  finish(): void {
    const itemId = this.item.id;
    this.acc.emit('response.reasoning_text.done', { item_id: itemId, output_index: this.outputIndex, content_index: 0, text: this.part.text });
    this.acc.emit('response.content_part.done', { item_id: itemId, output_index: this.outputIndex, content_index: 0, part: this.part });
    this.acc.doneItem(this.outputIndex, this.item);
  }
}

/** A client function call (plain or namespaced), streamed as it arrives. */
export class FunctionCallStream {
  readonly item: FunctionCallItem;
  private readonly outputIndex: number;
  /** The fixed fields of its delta events. */
  private readonly head: DeltaHead;

  constructor(private readonly acc: ResponseAccumulator, callId: string, entry: RegistryEntry) {
    this.item = {
      type: 'function_call',
      id: newId(ID_PREFIX.functionCall),
      call_id: callId,
      name: entry.identity.name,
      ...(entry.identity.namespace !== undefined ? { namespace: entry.identity.namespace } : {}),
      arguments: '',
      status: 'in_progress',
    };
    this.outputIndex = acc.addItem(this.item);
    this.head = acc.deltaHead(this.item.id, this.outputIndex);
  }

  push(delta: string): void {
    this.item.arguments += delta;
    this.acc.emitDelta('response.function_call_arguments.delta', this.head, delta);
  }

  finish(status: 'completed' | 'incomplete' = 'completed'): void {
    this.acc.emit('response.function_call_arguments.done', { item_id: this.item.id, output_index: this.outputIndex, arguments: this.item.arguments, name: this.item.name });
    this.item.status = status;
    this.acc.doneItem(this.outputIndex, this.item);
  }
}

/**
 * A client custom tool call: the model writes `{"input": "<raw text>"}`; the raw text is decoded
 * incrementally and streamed as `custom_tool_call_input.delta`, never with JSON escaping.
 */
export class CustomToolCallStream {
  readonly item: CustomToolCallItem;
  private outputIndex = -1;
  private readonly decoder = new JsonStringFieldDecoder(CUSTOM_INPUT_KEY);
  private rawArguments = '';

  /**
   * `held`: nothing is emitted until `finish()` (the item appears then, its input as one delta),
   * so a call whose input fails its grammar check can be dropped without the client seeing it.
   */
  constructor(private readonly acc: ResponseAccumulator, callId: string, entry: RegistryEntry, private readonly held = false) {
    this.item = {
      type: 'custom_tool_call',
      id: newId(ID_PREFIX.customToolCall),
      call_id: callId,
      name: entry.identity.name,
      ...(entry.identity.namespace !== undefined ? { namespace: entry.identity.namespace } : {}),
      input: '',
      status: 'in_progress',
    };
    if (!held) this.outputIndex = acc.addItem(this.item);
  }

  get arguments(): string {
    return this.rawArguments;
  }

  /** The raw input of the complete call (what `finish('completed')` will report). */
  get input(): string {
    return resolveCustomInput(this.rawArguments);
  }

  push(fragment: string): void {
    this.rawArguments += fragment;
    if (this.held) return;
    const decoded = this.decoder.push(fragment);
    if (decoded) this.emitDelta(decoded);
  }

  finish(status: 'completed' | 'incomplete' = 'completed'): void {
    // held: the decoder reads everything now; what it decoded is what live deltas would have shown
    const decoded = this.held ? this.decoder.push(this.rawArguments) : this.item.input;
    if (this.held) this.outputIndex = this.acc.addItem(this.item);
    let input = resolveCustomInput(this.rawArguments);
    // cut off mid-string (token cap): what was decoded so far is the input, not the broken JSON
    if (!input.startsWith(decoded) && this.decoder.decoding) input = decoded;
    // The incremental decoder only streams the common `{"input": "…"}` shape; anything else is
    // resolved from the complete text and sent as one delta so deltas always add up to `input`.
    if (input.startsWith(this.item.input)) {
      const rest = input.slice(this.item.input.length);
      if (rest) this.emitDelta(rest);
    } else {
      this.item.input = input;
    }
    this.acc.emit('response.custom_tool_call_input.done', { item_id: this.item.id, output_index: this.outputIndex, input: this.item.input });
    this.item.status = status;
    this.acc.doneItem(this.outputIndex, this.item);
  }

  private emitDelta(delta: string): void {
    this.item.input += delta;
    this.acc.emitDelta('response.custom_tool_call_input.delta', this.acc.deltaHead(this.item.id, this.outputIndex), delta);
  }
}

/** The raw input of a custom call from the model's complete arguments text. */
export function resolveCustomInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (typeof parsed === 'string') return parsed;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const record = parsed as Record<string, unknown>;
      if (typeof record[CUSTOM_INPUT_KEY] === 'string') return record[CUSTOM_INPUT_KEY] as string;
      const values = Object.values(record);
      if (values.length === 1 && typeof values[0] === 'string') return values[0];
    }
  } catch {
    // not JSON: the model wrote the freeform input directly
  }
  return args;
}

/** A client-executed tool search: announced whole once its arguments are complete. */
export function emitToolSearchCall(acc: ResponseAccumulator, callId: string, args: string): ToolSearchCallItem {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args || '{}');
  } catch {
    parsed = { query: args };
  }
  const item: ToolSearchCallItem = { type: 'tool_search_call', id: newId(ID_PREFIX.toolSearch), call_id: callId, arguments: parsed, execution: 'client', status: 'in_progress' };
  const index = acc.addItem(item);
  item.status = 'completed';
  acc.doneItem(index, item);
  return item;
}
