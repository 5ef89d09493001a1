import type { SimulatorRequestRecord } from './exchange.js';

/**
 * The request log keeps the bodies of its most recent requests up to this many bytes (of their
 * raw JSON); older records keep their metadata and lose their body. Without it, a simulator
 * answering multi-MB requests (a long conversation's history) held thousands of them parsed —
 * gigabytes of heap, and garbage collections of a second that showed in every figure measured
 * against it.
 */
export const MAX_LOGGED_BODY_BYTES = 64 * 1024 * 1024;

/** The log's bodies, oldest first, dropped (`body: null`) beyond the budget; the newest is always kept. */
export class RequestBodyBudget {
  private readonly held: Array<{ record: SimulatorRequestRecord; bytes: number }> = [];
  private oldest = 0;
  private bytes = 0;

  constructor(
    private readonly maxBytes: number,
    /** As many as the log keeps at most: older ones have left it already. */
    private readonly maxEntries: number,
  ) {}

  logged(record: SimulatorRequestRecord, bytes: number): void {
    this.held.push({ record, bytes });
    this.bytes += bytes;
    while ((this.bytes > this.maxBytes || this.held.length - this.oldest > this.maxEntries) && this.held.length - this.oldest > 1) {
      const dropped = this.held[this.oldest++];
      dropped.record.body = null;
      this.bytes -= dropped.bytes;
    }
    // dropped entries leave the array now and then, not on every request
    if (this.oldest > 1024) {
      this.held.splice(0, this.oldest);
      this.oldest = 0;
    }
  }
}
