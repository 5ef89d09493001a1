import type { Item, ResponseObject, ResponseStatus, Usage } from '../protocol/responses.js';
import { jsonString } from '../util/json.js';
import { responseJson } from './response-json.js';
import type { DeltaHead, EventSink } from './types.js';

export interface TerminalState {
  status: Extract<ResponseStatus, 'completed' | 'incomplete' | 'failed' | 'cancelled'>;
  incompleteReason?: string;
  error?: { code: string; message: string };
}

/** The fixed part of an item's delta events (`"item_id":…,"output_index":…[,"content_index":…],"delta":`) for `ResponseAccumulator.emitDelta`. */
export function deltaHead(itemId: string, outputIndex: number, contentIndex?: number): DeltaHead {
  const content = contentIndex === undefined ? '' : `,"content_index":${contentIndex}`;
  return { json: `"item_id":${JSON.stringify(itemId)},"output_index":${outputIndex}${content},"delta":`, outputIndex, contentIndex };
}

/** A blocking response's delta head: its deltas are only counted, never written. */
const UNWRITTEN_HEAD: DeltaHead = { json: '', outputIndex: -1, contentIndex: undefined };

/**
 * The one accumulator: every change to the response goes through `emit`, which numbers the
 * event, hands it to the sink and applies it to the snapshot. Blocking responses are the same
 * snapshot with no sink — one code path decides what any client sees.
 */
export class ResponseAccumulator {
  private sequence = 0;
  private terminal: TerminalState | null = null;
  private readonly usage: Usage = {
    input_tokens: 0,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 0,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 0,
  };
  private sawUsage = false;
  /**
   * The settled response's JSON, made at most once per settlement: its stored row, its terminal
   * event and a blocking client's body are the same text (`settledResponseJson`).
   */
  private settledJson: string | null = null;

  /** `withResponse`: lifecycle events carry the Response (false: the sink reads it from the run, `RunHooks.readsResponse`). */
  constructor(
    readonly response: ResponseObject,
    private readonly sink: EventSink | null,
    private readonly withResponse = true,
  ) {}

  get started(): boolean {
    return this.sequence > 0;
  }

  get finished(): boolean {
    return this.terminal !== null;
  }

  get nextOutputIndex(): number {
    return this.response.output.length;
  }

  /** Whether events are serialised (a stream or a background run); a blocking response's are only counted. */
  get streaming(): boolean {
    return this.sink !== null;
  }

  /** Sends an event (payload without `type`/`sequence_number`). */
  emit(type: string, payload: Record<string, unknown>): void {
    if (this.sink === null) {
      this.sequence++;
      return;
    }
    this.emitFields(type, JSON.stringify(payload).slice(1, -1));
  }

  /** The fixed part of an item's delta events (`deltaHead`), made only while `streaming`. */
  deltaHead(itemId: string, outputIndex: number, contentIndex?: number): DeltaHead {
    return this.sink === null ? UNWRITTEN_HEAD : deltaHead(itemId, outputIndex, contentIndex);
  }

  /**
   * A delta event, the most frequent event of a stream (one per token): `head` is the fixed part
   * of its payload (`deltaHead`), built once per item, so each delta serialises only its text —
   * the same JSON as `emit(type, {…fields, delta, …tail})`, without an object per token.
   */
  emitDelta(type: string, head: DeltaHead, delta: string, tail = ''): void {
    const sequence = this.sequence++;
    if (this.sink === null) return;
    this.sink(type, `{"type":"${type}","sequence_number":${sequence},${head.json}${jsonString(delta)}${tail}}`, head, delta);
  }

  /**
   * `emit` of a payload already serialised, given as its members without the braces
   * (`"a":1,"b":[…]`; '' for none) — exactly `JSON.stringify(payload)` between them — and made only
   * while `streaming` (without a sink the event is only counted, and any text will do). For the
   * events of an item's life whose JSON is mostly fixed text: the members go behind the type and
   * sequence number as they are (a payload cut out of a joined text would be copied whole first:
   * the echoed tool list of a coding agent's `response.created`, twice).
   */
  emitFields(type: string, fields: string): void {
    const sequence = this.sequence++;
    if (this.sink === null) return;
    this.sink(type, fields === '' ? `{"type":"${type}","sequence_number":${sequence}}` : `{"type":"${type}","sequence_number":${sequence},${fields}}`);
  }

  /**
   * `response.created` (+ `response.queued` for a background run) → `response.in_progress`.
   * Returns the running response's JSON as the events carried it (null without a sink), for a
   * caller that stores the running response next (the same text, not serialised again).
   */
  start(): string | null {
    const queued = this.response.status === 'queued';
    if (this.sink === null) {
      this.sequence += queued ? 3 : 2;
      this.response.status = 'in_progress';
      return null;
    }
    if (queued) {
      const fields = `"response":${responseJson(this.response)}`;
      this.emitFields('response.created', fields);
      this.emitFields('response.queued', fields);
      this.response.status = 'in_progress';
      const running = responseJson(this.response);
      this.emitFields('response.in_progress', `"response":${running}`);
      return running;
    }
    if (!this.withResponse) {
      this.emitFields('response.created', '');
      this.emitFields('response.in_progress', '');
      return null;
    }
    // created and in_progress carry the same snapshot: serialize it once
    const running = responseJson(this.response);
    const fields = `"response":${running}`;
    this.emitFields('response.created', fields);
    this.emitFields('response.in_progress', fields);
    return running;
  }

  addUsage(input: number, output: number, cached: number, reasoning: number): void {
    this.sawUsage = true;
    this.usage.input_tokens += input;
    this.usage.output_tokens += output;
    this.usage.input_tokens_details.cached_tokens += cached;
    this.usage.output_tokens_details.reasoning_tokens += reasoning;
    this.usage.total_tokens = this.usage.input_tokens + this.usage.output_tokens;
  }

  /**
   * Appends an item to `output` and announces it; returns its output index. `itemJson`: the item's
   * JSON when the caller has made it (exactly `JSON.stringify(item)`; only while `streaming`).
   */
  addItem(item: Item, itemJson?: string): number {
    const outputIndex = this.response.output.length;
    this.response.output.push(item);
    if (itemJson === undefined) this.emit('response.output_item.added', { output_index: outputIndex, item });
    else this.emitFields('response.output_item.added', `"output_index":${outputIndex},"item":${itemJson}`);
    return outputIndex;
  }

  /** Replaces the item at `outputIndex` with its final form and announces it (`itemJson` as for `addItem`). */
  doneItem(outputIndex: number, item: Item, itemJson?: string): void {
    this.response.output[outputIndex] = item;
    if (itemJson === undefined) this.emit('response.output_item.done', { output_index: outputIndex, item });
    else this.emitFields('response.output_item.done', `"output_index":${outputIndex},"item":${itemJson}`);
  }

  /**
   * Sets the terminal state on the snapshot (statuses of open items included) without
   * announcing it, so the caller can persist the final response before the client hears of it.
   */
  settle(state: TerminalState, now: number): ResponseObject {
    this.terminal = state;
    this.settledJson = null;
    const response = this.response;
    response.status = state.status;
    response.usage = this.sawUsage || state.status === 'completed' ? { ...this.usage } : null;
    response.completed_at = state.status === 'completed' ? now : null;
    if (state.incompleteReason) response.incomplete_details = { reason: state.incompleteReason };
    if (state.error) response.error = state.error;
    if (state.status !== 'completed') {
      for (const item of response.output) {
        if ((item as { status?: string }).status === 'in_progress') (item as { status?: string }).status = 'incomplete';
      }
    }
    return response;
  }

  /**
   * The terminal event as `announceTerminal` will send it (null without a sink): a background run
   * stores it with the terminal state, in one transaction.
   */
  terminalEvent(): { sequence: number; json: string } | null {
    if (this.sink === null) return null;
    return { sequence: this.sequence, json: `{"type":"${this.terminalType()}","sequence_number":${this.sequence},"response":${this.settledResponseJson()}}` };
  }

  /** Announces the settled terminal state: exactly one terminal event per response. */
  announceTerminal(): void {
    if (this.sink === null) {
      this.sequence++;
      return;
    }
    this.emitFields(this.terminalType(), this.withResponse ? `"response":${this.settledResponseJson()}` : '');
  }

  /**
   * The settled response's JSON (`JSON.stringify` of it), made once per settlement: the store's
   * row, the terminal event and a blocking body share it. Valid from `settle` on, while nothing
   * changes the response but another `settle` (which makes it again).
   */
  settledResponseJson(): string {
    if (this.terminal === null) throw new Error('settledResponseJson before settle');
    return (this.settledJson ??= responseJson(this.response));
  }

  /** The settled response's JSON if something has made it (null if not): a blocking body need not make it. */
  get madeSettledJson(): string | null {
    return this.settledJson;
  }

  private terminalType(): string {
    const state = this.terminal;
    if (state === null) throw new Error('announceTerminal before settle');
    return state.status === 'completed' ? 'response.completed' : state.status === 'incomplete' ? 'response.incomplete' : 'response.failed';
  }
}
