// The heartbeat renews the conversation leases a process holds. A renewal that runs while the turn
// releases its lease (on PostgreSQL the two are separate round trips on separate connections) must
// not take the conversation back: it would stay locked, for nobody, until the lease expired, and
// the client's next turn on it would be refused as busy.
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { RunOwnership } from '../../src/engine/run-ownership.js';
import { SqliteConversationStore } from '../../src/store/sqlite-conversations.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';

/** Conversations whose lease renewals wait at a gate the test opens. */
class GatedRenewals extends SqliteConversationStore {
  renewing: Promise<void>;
  private entered!: () => void;
  private gate: Promise<void> = new Promise(() => {});
  open!: () => void;

  constructor(...args: ConstructorParameters<typeof SqliteConversationStore>) {
    super(...args);
    this.renewing = new Promise((resolve) => (this.entered = resolve));
    this.gate = new Promise((resolve) => (this.open = resolve));
  }

  override async renewTurn(id: string, owner: string, ttlMs: number): Promise<boolean> {
    this.entered();
    await this.gate;
    return super.renewTurn(id, owner, ttlMs);
  }
}

describe('RunOwnership: lease renewals', () => {
  let ownership: RunOwnership | undefined;
  afterEach(() => ownership?.close());

  /** An in-memory store, `conversations` on its connection, and an ownership heart-beating every 5 ms. */
  function setUp<C extends SqliteConversationStore>(makeConversations: (database: SqliteResponseStore['database']) => C) {
    const responses = new SqliteResponseStore(':memory:');
    const conversations = makeConversations(responses.database);
    ownership = new RunOwnership(responses, conversations, pino({ level: 'silent' }), { heartbeatMs: 5, staleAfterMs: 60_000 });
    return { responses, conversations, ownership };
  }

  it('a renewal racing the release of its lease leaves the conversation free', async () => {
    const { conversations, ownership } = setUp((database) => new GatedRenewals(database));
    const conversation = await conversations.create({}, []);
    const lease = await ownership.acquireLease(conversation.id);
    expect(lease).toBeDefined();
    await ownership.start();

    // the heartbeat is renewing the lease when the turn releases it
    await conversations.renewing;
    await ownership.releaseLease(conversation.id, lease!);
    conversations.open();
    await new Promise((resolve) => setTimeout(resolve, 30));

    // the next turn takes the conversation at once
    expect(await conversations.acquireTurn(conversation.id, 'next-turn', 60_000)).toBe(true);
  });

  it('a lease still held is renewed by the heartbeat', async () => {
    const { responses, conversations, ownership } = setUp((database) => new SqliteConversationStore(database));
    const conversation = await conversations.create({}, []);
    // taken before the heartbeat runs: a lease of 30 minutes (UNRENEWED_LEASE_MS)
    const lease = await ownership.acquireLease(conversation.id);
    const until = () => (responses.database.prepare('SELECT until_ms FROM conversation_locks WHERE conversation_id = ?').pluck().get(conversation.id) as number) - Date.now();
    expect(until()).toBeGreaterThan(25 * 60_000);
    await ownership.start();
    await new Promise((resolve) => setTimeout(resolve, 30));
    // renewed to staleAfterMs from now, still this lease's
    expect(until()).toBeLessThanOrEqual(60_000);
    expect(until()).toBeGreaterThan(50_000);
    expect(await conversations.acquireTurn(conversation.id, 'another-turn', 60_000)).toBe(false);
    await ownership.releaseLease(conversation.id, lease!);
    expect(await conversations.acquireTurn(conversation.id, 'another-turn', 60_000)).toBe(true);
  });
});
