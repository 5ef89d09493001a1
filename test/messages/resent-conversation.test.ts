// A conversation resent whole to the stateless Messages surface (Claude Code's every request):
// its messages parsed once (src/util/interned-prefix.ts, the newest message's moving cache mark
// included), decoded once per message (src/messages/decode-messages.ts), its tool list decoded
// once (decode-tools.ts), so the engine holds the history's model items (engine/held-history.ts).
// What the model is sent must be exactly what the same conversation parsed fresh gives.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { heldInputRun } from '../../src/engine/held-history.js';
import { NO_RECORDS } from '../../src/engine/unstored-records.js';
import { decodeMessagesRequest } from '../../src/messages/request.js';
import { decodeMessages } from '../../src/messages/decode-messages.js';
import type { Item } from '../../src/protocol/responses.js';
import { InternedPrefix } from '../../src/util/interned-prefix.js';
import { intern } from '../../src/util/interned-member.js';
import { sharedLength } from '../../src/util/kept-runs.js';
import { normalizeStoredItem } from '../../src/util/items.js';
import type { TestGateway } from '../helpers/gateway.js';
import { keptAndFreshGateways, uniquelyIndented } from '../helpers/kept-and-fresh.js';
import { prng } from '../reliability/hostile-input.js';

type Json = Record<string, any>;
/** Claude Code's seventh request of a `Bash` loop, as it sent it (test/fixtures/claude-code/README.md). */
const CLAUDE = JSON.parse(readFileSync(new URL('../fixtures/claude-code/bash-loop-turn-7.json', import.meta.url), 'utf8')) as Json;
const LIMITS = { minBytes: 4096, maxBytes: 8 << 20, count: 8, totalBytes: 64 << 20 };

/** Claude Code's way: the newest message's last block carries the cache mark (a copy). */
function marked(messages: Json[]): Json[] {
  const newest = messages.at(-1)!;
  const blocks: Json[] = typeof newest.content === 'string' ? [{ type: 'text', text: newest.content }] : newest.content;
  return [...messages.slice(0, -1), { ...newest, content: [...blocks.slice(0, -1), { ...blocks.at(-1), cache_control: { type: 'ephemeral' } }] }];
}

/** `turns` more turns of Claude Code's loop after the recorded request: a `Bash` call and its result each. */
function loop(turns: number): Json[] {
  const messages: Json[] = CLAUDE.messages.map((message: Json) => ({ ...message, content: Array.isArray(message.content) ? message.content.map(({ cache_control: _mark, ...block }: Json) => block) : message.content }));
  for (let i = 0; i < turns; i++) {
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: `toolu_${i}`, name: 'Bash', input: { command: `ls ${i}` }, caller: { type: 'direct' } }] });
    messages.push({ role: 'user', content: [{ tool_use_id: `toolu_${i}`, type: 'tool_result', content: `out ${i}\n`.repeat(20), is_error: false }] });
  }
  return messages;
}

describe('decoding a resent conversation', () => {
  it('decodes each message once: later turns get the same frozen items, stored as they are, the moved mark decoding to the same items', () => {
    const interned = new InternedPrefix('messages', LIMITS);
    const parse = (body: Buffer) => JSON.parse(body.toString('utf8'));
    let previous: Json[] | undefined;
    let previousRun: ReturnType<typeof heldInputRun>;
    for (let turn = 10; turn < 20; turn++) {
      const body = Buffer.from(JSON.stringify({ ...CLAUDE, messages: marked(loop(turn)) }));
      const decoded = decodeMessagesRequest(interned.parse(body, parse));
      const input = decoded.body.input as Json[];
      // the engine's stages look at what follows its leading shared (frozen) items only: that count
      // comes with the array, as its items are
      let frozen = 0;
      while (frozen < input.length && Object.isFrozen(input[frozen])) frozen++;
      expect(sharedLength(input)).toBe(frozen);
      // the same items as a fresh decoding gives, ids and status apart (minted once for kept ones)
      const fresh = decodeMessagesRequest(JSON.parse(body.toString('utf8'))).body.input as Json[];
      expect(input.map(({ id: _id, status: _status, ...rest }) => rest)).toEqual(fresh);
      if (turn >= 12) {
        // from the third body on everything was parsed from kept bytes or extends them
        expect(input.every((item) => Object.isFrozen(item))).toBe(true);
        // the engine stores them as they are: no copy to mint an id
        for (const item of input) expect(normalizeStoredItem(item as Item)).toBe(item);
        // every item of the last turn is the same object now, the one whose mark came off included
        expect(input.slice(0, previous!.length).every((item, i) => item === previous![i])).toBe(true);
        // the held model items: found again from the last turn's and extended
        const run = heldInputRun(input, input as Item[], NO_RECORDS, 'default');
        expect(run?.length).toBe(input.length);
        if (previousRun !== undefined) expect(run!.model.items[0]).toBe(previousRun.model.items[0]);
        previousRun = run;
      }
      previous = input;
    }
  });

  it('decodes and checks only what follows the kept messages of the last request (read counts)', () => {
    let reads = 0;
    /** A message whose every read of `role` is counted, kept (frozen) or the request's own. */
    const countedOwn = (message: Json) => {
      const { role, ...rest } = message;
      return Object.defineProperty({ ...rest }, 'role', { enumerable: true, get: () => (reads++, role) });
    };
    const counted = (message: Json) => intern(countedOwn(message));
    const conversation: Json[] = [counted({ role: 'user', content: 'start' })];
    for (let turn = 0; turn < 100; turn++) {
      conversation.push(counted({ role: 'assistant', content: [{ type: 'tool_use', id: `t${turn}`, name: 'Bash', input: {} }] }));
      const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${turn}`, content: `out ${turn}` }] };
      // sent with the cache mark this turn, without it (a new object) from the next one on
      const sent = [...conversation, counted({ ...result, content: [{ ...result.content[0], cache_control: { type: 'ephemeral' } }] })];
      reads = 0;
      decodeMessages(sent, []);
      // the last request's changed message and the two new ones, however long the conversation
      if (turn >= 10) expect(reads, `turn ${turn}`).toBeLessThanOrEqual(12);
      conversation.push(counted(result));
    }
    // a fork (another last answer): decoded from the same kept messages
    reads = 0;
    decodeMessages([...conversation.slice(0, -1), counted({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't99', content: 'other' }] })], []);
    expect(reads).toBeLessThanOrEqual(12);
    // the same conversation, its messages the request's own: read whole
    const own = [countedOwn({ role: 'user', content: 'start' })];
    for (let turn = 0; turn < 100; turn++) {
      own.push(countedOwn({ role: 'assistant', content: [{ type: 'tool_use', id: `t${turn}`, name: 'Bash', input: {} }] }));
      own.push(countedOwn({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${turn}`, content: `out ${turn}` }] }));
    }
    reads = 0;
    decodeMessages(own, []);
    expect(reads).toBeGreaterThan(400);
  });

  it('names the place of a bad message after the kept ones, and keeps nothing of a request it refuses', () => {
    const conversation = loop(20).map((message) => intern(message));
    // kept: the conversation is resent twice
    decodeMessages(conversation, []);
    decodeMessages(conversation, []);
    const refused = (messages: unknown[]) => {
      try {
        decodeMessages(messages, []);
      } catch (err) {
        return { message: (err as Error & { param?: string }).message, param: (err as { param?: string }).param };
      }
      return null;
    };
    const at = conversation.length;
    expect(refused([...conversation, intern({ role: 'user', content: 42 })])?.param).toBe(`messages[${at}].content`);
    expect(refused([...conversation, intern({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_3', name: 'Bash', input: {} }] }), intern({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_3', content: 'x' }] })])).toEqual({
      message: expect.stringMatching(/must be unique/),
      param: `messages[${at}].content[0]`,
    });
    expect(refused([...conversation, intern({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_new', name: 'Bash', input: {} }] }), intern({ role: 'user', content: 'no result' })])?.param).toBe(`messages[${at}].content[0]`);
    // none of that was kept: the conversation goes on as before
    const next = [...conversation, intern({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_new', name: 'Bash', input: {} }] }), intern({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_new', content: 'ok' }] })];
    expect(refused(next)).toBeNull();
    expect(refused(next.slice(0, -1))?.param).toBe(`messages[${at}].content[0]`);
  });

  it('decodes a changed message anew, names skipped blocks where they are now, and keeps nothing of a message that is not frozen', () => {
    const messages = intern([
      { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'server_tool_result_we_skip', x: 1 }] },
      { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
      { role: 'user', content: 'again' },
    ]);
    const ignored: string[] = [];
    const first = decodeMessages(messages, ignored);
    expect(ignored).toEqual(['messages[0].content[1] (server_tool_result_we_skip)']);
    // the same messages at other places (an earlier message dropped): the same items, places as now
    const later: string[] = [];
    const again = decodeMessages([intern({ role: 'user', content: 'first' }), intern({ role: 'assistant', content: 'ok' }), ...messages], later);
    expect(again.slice(2)).toEqual(first);
    expect(again[2]).toBe(first[0]);
    expect(later).toEqual(['messages[2].content[1] (server_tool_result_we_skip)']);
    // an edited message after the same one: its own items
    const edited = decodeMessages([messages[0], messages[1], intern({ role: 'user', content: 'changed' })], []);
    expect(edited[1]).toBe(first[1]);
    expect(edited[2]).not.toBe(first[2]);
    expect(edited[2].content).toEqual([{ type: 'input_text', text: 'changed' }]);
    // a message of the request's own among kept ones: the items it is noted to begin with stop before it
    const long = Array.from({ length: 130 }, (_, i) => intern({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}` }));
    const mixed = decodeMessages([...long, { role: 'user', content: 'fresh' }, intern({ role: 'assistant', content: 'after' })], []);
    expect(sharedLength(mixed)).toBe(130);
    expect(Object.isFrozen(mixed[130])).toBe(false);
    expect(Object.isFrozen(mixed[131])).toBe(true);
    // objects of the request's own (not kept): fresh items every time
    const own = [{ role: 'user', content: 'mine' }];
    expect(decodeMessages(own, [])[0]).not.toBe(decodeMessages(own, [])[0]);
    expect(Object.isFrozen(decodeMessages(own, [])[0])).toBe(false);
  });

  it('decodes a kept tool list once, and a list with MCP servers every time', () => {
    const body = intern(JSON.parse(JSON.stringify({ model: 'm', max_tokens: 5, tools: CLAUDE.tools, messages: [{ role: 'user', content: 'hi' }] })));
    const a = decodeMessagesRequest(body).body.tools;
    expect(decodeMessagesRequest(body).body.tools).toBe(a);
    expect(Object.isFrozen((a as Json[])[0])).toBe(true);
    const withServers = { ...body, mcp_servers: [{ type: 'url', name: 'docs', url: 'http://127.0.0.1:9/mcp' }] };
    expect(decodeMessagesRequest(withServers).body.tools).not.toBe(decodeMessagesRequest(withServers).body.tools);
  });

  it('checks tool pairing as Anthropic does, kept messages or not (seeded, against the rule as first written)', () => {
    const rand = prng(4122026);
    let rejected = 0;
    for (let run = 0; run < 3000; run++) {
      const messages: Json[] = [];
      let ids = 0;
      const length = 1 + Math.floor(rand() * 7);
      for (let m = 0; m < length; m++) {
        const roll = rand();
        const role = roll < 0.1 ? 'system' : roll < 0.55 ? 'user' : 'assistant';
        const blocks: Json[] = [];
        for (let b = Math.floor(rand() * 3); b >= 0; b--) {
          const kind = rand();
          if (role === 'assistant' && kind < 0.5) blocks.push({ type: 'tool_use', id: `t${rand() < 0.1 ? 0 : ++ids}`, name: 'f', input: {} });
          else if (role === 'user' && kind < 0.5) blocks.push({ type: 'tool_result', tool_use_id: `t${Math.max(0, ids - Math.floor(rand() * 3))}`, content: 'r' });
          else blocks.push({ type: 'text', text: 'x' });
        }
        messages.push({ role, content: blocks });
      }
      const expected = referencePairingError(messages);
      for (const sent of [messages, intern(structuredClone(messages))]) {
        let error: string | null = null;
        try {
          decodeMessages(sent, []);
        } catch (err) {
          error = (err as Error).message;
        }
        expect(error === null, JSON.stringify(messages)).toBe(expected === null);
        if (expected !== null && error !== null) rejected++;
      }
    }
    expect(rejected).toBeGreaterThan(1000);
  });

  it('checks a conversation resent whole from where its kept messages end, as a whole check would (seeded: growing, forked and broken conversations)', () => {
    const rand = prng(20261204);
    let accepted = 0;
    let rejected = 0;
    for (let run = 0; run < 150; run++) {
      // kept messages, as a resent conversation's: frozen, the same objects every request
      const conversation: Json[] = [intern({ role: 'user', content: 'start' })];
      let ids = 0;
      for (let turn = 0; turn < 25; turn++) {
        const roll = rand();
        const calls = Array.from({ length: Math.floor(rand() * 3) }, () => `t${++ids}`);
        // now and then a defect: a repeated call id, an unanswered or unknown call, an answer twice
        if (roll < 0.03) calls.push(`t${Math.max(1, ids - 1)}`);
        conversation.push(intern({ role: 'assistant', content: [{ type: 'text', text: `turn ${turn}` }, ...calls.map((id) => ({ type: 'tool_use', id, name: 'f', input: {} }))] }));
        const answers: Json[] = calls.filter(() => !(roll > 0.03 && roll < 0.05)).map((id) => ({ type: 'tool_result', tool_use_id: id, content: 'r' }));
        if (roll > 0.05 && roll < 0.06) answers.push({ type: 'tool_result', tool_use_id: 'unknown', content: 'r' });
        if (roll > 0.06 && roll < 0.07 && answers.length > 0) answers.push(answers[0]);
        if (answers.length === 0 || rand() < 0.3) answers.push({ type: 'text', text: 'go on' });
        conversation.push(intern({ role: 'user', content: answers }));
        if (rand() < 0.05) conversation.push(intern({ role: 'system', content: 'note' }));
      }
      // each request resends the conversation so far (and now and then goes back to an earlier turn)
      for (let length = 2; length <= conversation.length; length++) {
        const sent = rand() < 0.1 ? conversation.slice(0, 1 + Math.floor(rand() * length)) : conversation.slice(0, length);
        const expected = referencePairingError(sent);
        let error: string | null = null;
        try {
          decodeMessages(sent, []);
        } catch (err) {
          error = (err as Error).message;
        }
        expect(error === null, `run ${run}, ${sent.length} messages: ${error ?? 'accepted'}, expected ${expected ?? 'accepted'}`).toBe(expected === null);
        if (error === null) accepted++;
        else rejected++;
      }
    }
    expect(accepted).toBeGreaterThan(2000);
    expect(rejected).toBeGreaterThan(1000);
  });
});

/**
 * The pairing rule as decode-messages.ts first wrote it (turns merged by role, every assistant
 * turn's calls answered in the turn after, every result answering the turn before): the first
 * error's message, or null.
 */
function referencePairingError(messages: Json[]): string | null {
  const turns: Array<{ role: string; blocks: Json[] }> = [];
  for (const message of messages) {
    if (message.role === 'system') continue;
    const last = turns.at(-1);
    if (last && last.role === message.role) last.blocks.push(...message.content);
    else turns.push({ role: message.role, blocks: [...message.content] });
  }
  const seen = new Set<string>();
  for (const [t, turn] of turns.entries()) {
    if (turn.role !== 'assistant') continue;
    const pending = new Set<string>();
    for (const block of turn.blocks) {
      if (block.type !== 'tool_use') continue;
      if (seen.has(block.id)) return 'unique';
      seen.add(block.id);
      pending.add(block.id);
    }
    const answered = new Set<string>();
    for (const block of turns[t + 1]?.blocks ?? []) {
      if (block.type !== 'tool_result') continue;
      if (answered.has(block.tool_use_id)) return 'duplicate';
      answered.add(block.tool_use_id);
    }
    if ([...pending].some((id) => !answered.has(id))) return 'missing';
  }
  for (const [t, turn] of turns.entries()) {
    if (turn.role !== 'user') continue;
    const previous = turns[t - 1];
    const ids = new Set((previous?.role === 'assistant' ? previous.blocks : []).filter((b) => b.type === 'tool_use').map((b) => b.id));
    if (turn.blocks.some((b) => b.type === 'tool_result' && !ids.has(b.tool_use_id))) return 'unexpected';
  }
  return null;
}

describe('a conversation resent whole through the Messages surface', () => {
  // one gateway gets Claude Code's compact bodies (kept, decoded once, held); the other each body
  // with an indent of its own, which nothing kept matches: parsed, decoded and converted whole
  const gateways = keptAndFreshGateways();

  async function upstreamOf(tg: TestGateway, text: string): Promise<string> {
    const before = tg.simulator.requests.length;
    const res = await fetch(`${tg.baseURL}/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: text });
    const answer = (await res.json()) as Json;
    expect(res.status, JSON.stringify(answer)).toBe(200);
    expect(answer.type).toBe('message');
    const [request] = tg.simulator.requests.slice(before);
    return JSON.stringify({ messages: (request.body as Json).messages, tools: (request.body as Json).tools });
  }

  it("sends the model, turn after turn, what the same conversation parsed fresh gives (Claude Code's bodies, moving cache marks, thinking, errors, searches, forks)", async () => {
    const rand = prng(41);
    const pick = <T>(options: T[]) => options[Math.floor(rand() * options.length)];
    const [first, environment] = CLAUDE.messages as Json[];
    let messages: Json[] = [{ ...first, content: [first.content[0], { type: 'text', text: 'List the files, then read them.' }] }, environment];
    /** How many messages each complete turn left: a fork goes back to one of them. */
    const turnEnds: number[] = [];
    /** Call ids unique across forks (as a model's are). */
    let callIds = 0;
    for (let turn = 0; turn < 48; turn++) {
      if (rand() < 0.08 && turnEnds.length > 4) messages = messages.slice(0, pick(turnEnds.slice(0, -1)));
      const blocks: Json[] = [];
      if (rand() < 0.4) blocks.push({ type: 'thinking', thinking: `weighing turn ${turn} “✓”`, signature: `sig${turn}` });
      if (rand() < 0.5) blocks.push({ type: 'text', text: `Turn ${turn}: on it.` });
      if (rand() < 0.1) {
        blocks.push({ type: 'server_tool_use', id: `srvtoolu_${turn}`, name: 'web_search', input: { query: `q${turn}` } });
        blocks.push({ type: 'web_search_tool_result', tool_use_id: `srvtoolu_${turn}`, content: [{ type: 'web_search_result', url: `https://example.com/${turn}`, title: `Result ${turn}` }] });
      }
      const calls = rand() < 0.15 ? 0 : 1 + Math.floor(rand() * 3);
      for (let c = 0; c < calls; c++) blocks.push({ type: 'tool_use', id: `toolu_${turn}_${c}_${++callIds}`, name: pick(['Bash', 'Read', 'Edit']), input: { command: `ls ${turn}/${c}`, n: c }, caller: { type: 'direct' } });
      if (blocks.length === 0) blocks.push({ type: 'text', text: `Turn ${turn}.` });
      messages.push({ role: 'assistant', content: blocks });
      const answer: Json[] = blocks
        .filter((block) => block.type === 'tool_use')
        .map((block, c) => ({ tool_use_id: block.id, type: 'tool_result', content: rand() < 0.3 ? [{ type: 'text', text: `part ${c}` }, { type: 'text', text: 'line ✓' }] : `out ${turn}.${c}\n`.repeat(1 + c), is_error: rand() < 0.1 }));
      if (answer.length === 0 || rand() < 0.2) answer.push({ type: 'text', text: `<system-reminder>turn ${turn}</system-reminder>` });
      messages.push({ role: 'user', content: answer });
      if (rand() < 0.05) messages.push({ role: 'system', content: `Note ${turn}.` }, { role: 'user', content: 'Go on.' });
      turnEnds.push(messages.length);
      // the cache mark on the newest message (now and then on the last two, or none)
      const roll = rand();
      const body = { ...CLAUDE, messages: roll < 0.75 ? marked(messages) : roll < 0.9 ? [...marked(messages.slice(0, -1)), ...marked(messages.slice(-1)).slice(-1)] : messages, stream: false };
      expect(await upstreamOf(gateways.kept, JSON.stringify(body)), `turn ${turn}`).toBe(await upstreamOf(gateways.fresh, uniquelyIndented(body)));
    }
  });
});
