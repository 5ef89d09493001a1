import { invalidRequest } from '../errors.js';
import type { JsonObject } from '../protocol/messages.js';
import { EMPTY_SET } from '../util/empty.js';

/**
 * Every client `tool_use` is answered by a `tool_result` with its id in the next turn, once;
 * every `tool_result` answers a `tool_use` of the turn just before (reference §2, ordering rules).
 * Consecutive messages of one role are one turn, as Anthropic's API merges them; system-role
 * messages are no turn.
 *
 * Checked message by message (`add`, then `finish`), allocating nothing per block, and resumable:
 * `mark` and `stateAt` give where the check stood after some messages, and a check of a longer
 * conversation with the same messages first starts from there (`ToolPairing.from`) — a
 * conversation resent whole is checked from where its last request's kept messages end
 * (decoded-runs.ts).
 */
export class ToolPairing {
  /** The ids of every `tool_use` before the state this check started from (not changed here). */
  private readonly earlier: ReadonlySet<string>;
  /** The ids of the `tool_use`s met since. */
  private readonly seen = new Set<string>();
  private role: unknown;
  /** The `tool_use` ids of the last assistant turn, and the `tool_result` ids of the user turn after it. */
  private calls: Set<string>;
  private answered: Set<string>;

  private constructor(state: PairingState | undefined) {
    this.earlier = state?.seen ?? EMPTY_SET;
    this.role = state?.role ?? null;
    this.calls = new Set(state?.calls);
    this.answered = new Set(state?.answered);
  }

  static fresh(): ToolPairing {
    return new ToolPairing(undefined);
  }

  /** A check continued from `state` (the messages before those `add` is given next). */
  static from(state: PairingState): ToolPairing {
    return new ToolPairing(state);
  }

  /** `message` (a decoded one: a plain object whose content is a string or a list of blocks) at `messages[i]`. */
  add(message: JsonObject, i: number, messages: readonly JsonObject[]): void {
    if (message.role === 'system') return;
    if (message.role !== this.role) {
      if (this.role === 'assistant') this.answered = new Set();
      else if (this.role === 'user') {
        checkAnswered(messages, this.calls, this.answered);
        this.calls = new Set();
      }
      this.role = message.role;
    }
    const blocks = blocksOf(message);
    for (let j = 0; j < blocks.length; j++) {
      const block = blocks[j];
      if (this.role === 'assistant' && block.type === 'tool_use') {
        const id = block.id as string;
        if (this.earlier.has(id) || this.seen.has(id)) throw invalidRequest(`${blockParam(i, j)}: \`tool_use\` ids must be unique; '${id}' appears more than once.`, blockParam(i, j), 'invalid_value');
        this.seen.add(id);
        this.calls.add(id);
      } else if (this.role === 'user' && block.type === 'tool_result') {
        const id = block.tool_use_id as string;
        if (!this.calls.has(id)) {
          throw invalidRequest(
            `${blockParam(i, j)}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
            blockParam(i, j),
            'invalid_value',
          );
        }
        if (this.answered.has(id)) throw invalidRequest(`${blockParam(i, j)}: duplicate \`tool_result\` for tool_use_id '${id}'.`, blockParam(i, j), 'invalid_value');
        this.answered.add(id);
      }
    }
  }

  /** The end of the conversation: the last turn's calls are answered by none when it ends with them. */
  finish(messages: readonly JsonObject[]): void {
    checkAnswered(messages, this.calls, this.role === 'user' ? this.answered : EMPTY_SET);
  }

  /** Where the check stands now (the ids met since it started, not the earlier ones): for `stateAt` once the check has passed. */
  mark(): PairingMark {
    return { seen: [...this.seen], role: this.role, calls: [...this.calls], answered: [...this.answered] };
  }

  /**
   * The state at `mark`, to continue a later check from. `reuse`: the state this check started
   * from, let go by the caller — its set of ids is extended in place instead of copied (no later
   * check may start from it).
   */
  stateAt(mark: PairingMark, reuse?: PairingState): PairingState {
    const seen = reuse !== undefined && reuse.seen === this.earlier ? reuse.seen : new Set(this.earlier);
    for (const id of mark.seen) seen.add(id);
    return { seen, role: mark.role, calls: mark.calls, answered: mark.answered };
  }
}

/** Where a check stood between two messages: the `tool_use` ids it met, the last turn's role, its open calls and answers. */
export interface PairingMark {
  readonly seen: readonly string[];
  readonly role: unknown;
  readonly calls: readonly string[];
  readonly answered: readonly string[];
}

/** A check's state between two messages: every `tool_use` id so far, the last turn's role, its open calls and answers. */
export interface PairingState {
  /** Changed only by `stateAt` when this state is let go. */
  readonly seen: Set<string>;
  readonly role: unknown;
  readonly calls: readonly string[];
  readonly answered: readonly string[];
}

/** The content blocks of a decoded message. */
function blocksOf(message: JsonObject): readonly JsonObject[] {
  return Array.isArray(message.content) ? (message.content as JsonObject[]) : [];
}

/** Every call of an assistant turn answered by the user turn after it. */
function checkAnswered(messages: readonly JsonObject[], calls: ReadonlySet<string>, answered: ReadonlySet<string>): void {
  if (calls.size === answered.size) return;
  const missing = [...calls].filter((id) => !answered.has(id));
  // where the first unanswered call was sent (looked for only now: the ids are unique)
  let param = 'messages';
  for (let i = 0; i < messages.length && param === 'messages'; i++) {
    const blocks = messages[i].role === 'assistant' ? blocksOf(messages[i]) : [];
    for (let j = 0; j < blocks.length; j++) if (blocks[j].type === 'tool_use' && blocks[j].id === missing[0]) param = blockParam(i, j);
  }
  throw invalidRequest(
    `${param}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
    param,
    'invalid_value',
  );
}

const blockParam = (message: number, block: number) => `messages[${message}].content[${block}]`;
