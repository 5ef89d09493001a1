// A turn serialises its response once per state (issue 16): the running response's JSON is what
// `response.created` carried, the settled response's JSON is what the terminal event or a blocking
// body carries, and the store writes those same texts instead of serialising again. What must
// hold whatever the path: every text a store is handed is exactly `JSON.stringify` of the response
// it comes with at that moment (a settlement that fails and is settled again as `failed` included).
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import type { Settlement, SettleOutcome, StoredResponse } from '../../src/store/store.js';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';

interface Write {
  via: string;
  id: string;
  status: string;
  /** The text the writer handed over, if any. */
  given: string | undefined;
  /** `JSON.stringify` of the response at the moment of the write. */
  actual: string;
}

/** The SQLite store, noting every response write; a response whose input holds `fail-settle` has its first settlement refused. */
class RecordingStore extends SqliteResponseStore {
  writes: Write[] = [];
  private refused = new Set<string>();

  private note(via: string, record: StoredResponse): void {
    this.writes.push({ via, id: record.response.id, status: record.response.status, given: record.responseJson, actual: JSON.stringify(record.response) });
  }

  override async startRun(record: StoredResponse, owner: string): Promise<void> {
    this.note('startRun', record);
    return super.startRun(record, owner);
  }

  override async saveOwned(record: StoredResponse, owner: string): Promise<boolean> {
    this.note('saveOwned', record);
    return super.saveOwned(record, owner);
  }

  override async save(record: StoredResponse): Promise<void> {
    this.note('save', record);
    return super.save(record);
  }

  override async settle(settlement: Settlement): Promise<SettleOutcome> {
    const record = settlement.record;
    if (record) {
      this.note('settle', record);
      const marked = JSON.stringify(record.inputItems).includes('fail-settle');
      if (marked && !this.refused.has(record.response.id)) {
        this.refused.add(record.response.id);
        return 'lease_lost';
      }
    }
    return super.settle(settlement);
  }
}

describe('a turn hands its store the JSON it already made, and it is always the response as it is', () => {
  let tg: TestGateway;
  let store: RecordingStore;
  let client: OpenAI;

  beforeAll(async () => {
    tg = await startTestGateway({ store: (dataDir) => (store = new RecordingStore(dataDir)) });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());
  beforeEach(() => {
    store.writes = [];
  });

  /** Every write's given text, when there is one, is exactly the response it came with. */
  function expectExact(): void {
    expect(store.writes.length).toBeGreaterThan(0);
    for (const write of store.writes) if (write.given !== undefined) expect(write.given).toBe(write.actual);
  }

  const post = (body: unknown) => fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('blocking: the settled row and the body are one text', async () => {
    const res = await post({ model: 'm', input: 'hello there' });
    expect(res.status).toBe(200);
    const body = await res.text();
    const settled = store.writes.find((w) => w.via === 'settle');
    expect(settled?.given).toBe(body);
    expectExact();
    // and what is stored reads back as what the client got
    expect(await (await fetch(`${tg.baseURL}/responses/${JSON.parse(body).id}`)).text()).toBe(body);
  });

  it('streaming: the running row is what response.created carried, the settled row what response.completed carried', async () => {
    const res = await post({ model: 'm', input: 'hello there', stream: true });
    const text = await res.text();
    const payload = (type: string) => {
      const line = text.split('\n').find((l) => l.startsWith('data: ') && l.includes(`"type":"${type}"`))!;
      // the event's response object, as the bytes on the wire have it
      return line.slice(line.indexOf('"response":') + '"response":'.length, -1);
    };
    const running = store.writes.find((w) => w.via === 'startRun');
    const settled = store.writes.find((w) => w.via === 'settle');
    expect(running?.given).toBe(payload('response.created'));
    expect(settled?.given).toBe(payload('response.completed'));
    expectExact();
  });

  it('a settlement that fails is settled again as failed, with that response\'s own JSON', async () => {
    const res = await post({ model: 'm', input: 'fail-settle please' });
    expect(res.status).toBeGreaterThanOrEqual(400);
    const settles = store.writes.filter((w) => w.via === 'settle');
    expect(settles.map((w) => w.status)).toEqual(['completed', 'failed']);
    expect(settles[1].given).not.toBe(settles[0].given);
    expectExact();
    const stored = await client.responses.retrieve(settles[1].id);
    expect(stored.status).toBe('failed');
  });

  it('streaming with a failed settlement: the terminal event is the failed response stored', async () => {
    const events = await readSse(await post({ model: 'm', input: 'fail-settle streaming', stream: true }));
    const terminal = events.at(-1)!;
    expect(terminal.type).toBe('response.failed');
    const settles = store.writes.filter((w) => w.via === 'settle');
    expect(settles.at(-1)?.given).toBe(JSON.stringify(terminal.response));
    expectExact();
  });

  it('streaming with an automatic compaction: the running row holds the item added after response.created', async () => {
    const history = Array.from({ length: 12 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `message number ${i} with some words in it` }));
    const events = await readSse(await post({ model: 'm', input: [...history, { role: 'user', content: 'continue' }], stream: true, context_management: [{ type: 'compaction', compact_threshold: 50 }] }));
    expect(events.at(-1)!.type).toBe('response.completed');
    const running = store.writes.find((w) => w.via === 'startRun')!;
    expect((JSON.parse(running.actual) as { output: Array<{ type: string }> }).output.map((item) => item.type)).toEqual(['compaction']);
    expect(running.given).not.toBe(JSON.stringify(events[0].response));
    expectExact();
  });

  it('a background run: its running row is the in_progress response its stream carried', async () => {
    const events = await readSse(await post({ model: 'm', input: scripted({ rounds: [{ text: 'in the background' }] }), background: true, stream: true }));
    expect(events.at(-1)!.type).toBe('response.completed');
    const inProgress = events.find((e) => e.type === 'response.in_progress')!;
    const owned = store.writes.find((w) => w.via === 'saveOwned');
    expect(owned?.given).toBe(JSON.stringify(inProgress.response));
    expectExact();
  });
});
