/**
 * A per-server circuit breaker: after `threshold` consecutive failures the circuit opens and calls
 * fail fast for `cooldownMs`; then one trial call is let through (half-open) and its outcome
 * closes or re-opens the circuit. Keeps a failing server from being hammered by every turn.
 */
export class CircuitBreaker {
  private failures = 0;
  private openUntil = 0;
  private trialInFlight = false;

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a call may go ahead now. */
  allow(): boolean {
    if (this.failures < this.threshold) return true;
    if (this.now() < this.openUntil || this.trialInFlight) return false;
    this.trialInFlight = true;
    return true;
  }

  success(): void {
    this.failures = 0;
    this.trialInFlight = false;
  }

  failure(): void {
    this.failures++;
    this.trialInFlight = false;
    if (this.failures >= this.threshold) this.openUntil = this.now() + this.cooldownMs;
  }

  /** The call ended without telling anything about the server's health (e.g. the client left). */
  release(): void {
    this.trialInFlight = false;
  }

  get open(): boolean {
    return this.failures >= this.threshold && this.now() < this.openUntil;
  }
}
