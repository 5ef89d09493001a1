/**
 * Context lengths of the upstream's models, from its model list (vLLM lists `max_model_len`),
 * cached briefly. Claude clients send `max_tokens` sized for Claude (32k, 64k…); an open model
 * with a smaller context would refuse the request, so the Messages surface clamps instead.
 * Servers that do not list a context length get the request as sent.
 */
export class ModelLimits {
  private cache: { at: number; limits: Map<string, number> } | null = null;
  private pending: Promise<Map<string, number>> | null = null;

  constructor(
    private readonly listModels: () => Promise<unknown>,
    private readonly ttlMs = 60_000,
  ) {}

  /** The model's context length in tokens, when the upstream lists one. */
  async contextLength(model: string): Promise<number | undefined> {
    if (this.cache && Date.now() - this.cache.at < this.ttlMs) return this.cache.limits.get(model);
    this.pending ??= this.load().finally(() => {
      this.pending = null;
    });
    return (await this.pending).get(model);
  }

  private async load(): Promise<Map<string, number>> {
    const limits = new Map<string, number>();
    try {
      const listed = (await this.listModels()) as { data?: Array<{ id?: unknown; max_model_len?: unknown }> } | null;
      for (const model of Array.isArray(listed?.data) ? listed!.data : []) {
        if (typeof model.id === 'string' && typeof model.max_model_len === 'number' && model.max_model_len > 0) limits.set(model.id, model.max_model_len);
      }
    } catch {
      // no list right now: requests go as sent, and the next one after the TTL asks again
    }
    this.cache = { at: Date.now(), limits };
    return limits;
  }
}
