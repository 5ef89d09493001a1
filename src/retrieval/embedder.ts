/** The upstream answered that it has no embeddings (no route, no such model, not an embedding model). */
export class EmbeddingsUnsupportedError extends Error {}

export interface Embedder {
  readonly model: string;
  /** Unit-length vectors, one per text, in order. */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

/** One `/v1/embeddings` exchange: the JSON body out, the status and text back. */
export type EmbeddingsPost = (body: Record<string, unknown>, signal: AbortSignal) => Promise<{ status: number; text: string }>;

export interface HttpEmbedderOptions {
  /** How a request reaches an embeddings server: a fixed URL, or the model router. */
  post: EmbeddingsPost;
  model: string;
  batchSize: number;
  timeoutMs?: number;
}

/** A fixed embeddings server (`fileSearch.embeddingsUrl`): `baseUrl` includes `/v1`. */
export function directEmbeddingsPost(baseUrl: string, apiKey: string | null | undefined): EmbeddingsPost {
  return async (body, signal) => {
    const response = await fetch(`${baseUrl.replace(/\/$/, '')}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
      body: JSON.stringify(body),
      signal,
    });
    return { status: response.status, text: await response.text() };
  };
}

/** Where a routed request goes: the model router's pass-through (aliases, model lists, failover). */
export interface EmbeddingsRouter {
  forward(path: string, body: Buffer, model: string, signal: AbortSignal, parsed: Record<string, unknown>): Promise<{ upstream: string; response: { statusCode: number; body: { text(): Promise<string> } } }>;
}

/**
 * Embeddings routed by model like any other request: the embedding model (or alias) picks the
 * upstream, as `POST /v1/embeddings` through the gateway would. No upstream serving the model
 * is "no embeddings" (a 404), so the store goes keyword-only instead of failing files.
 */
export function routedEmbeddingsPost(router: EmbeddingsRouter): EmbeddingsPost {
  return async (body, signal) => {
    try {
      const { response } = await router.forward('/embeddings', Buffer.from(JSON.stringify(body)), String(body.model), signal, body);
      return { status: response.statusCode, text: await response.body.text() };
    } catch (err) {
      const status = (err as { status?: unknown }).status;
      if (status === 404) return { status: 404, text: (err as Error).message };
      throw err;
    }
  };
}

/**
 * Embeddings from an OpenAI-compatible `/v1/embeddings` (vLLM, TEI, Ollama, llama.cpp, OpenAI),
 * in batches of `batchSize` texts. A 404/405/501, or a 400 saying the model cannot embed, is
 * `EmbeddingsUnsupportedError` (the store then answers keyword-only); anything else is retried
 * once and then thrown (the file fails with `last_error`).
 */
export class HttpEmbedder implements Embedder {
  constructor(private readonly options: HttpEmbedderOptions) {}

  get model(): string {
    return this.options.model;
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += this.options.batchSize) {
      out.push(...(await this.batch(texts.slice(start, start + this.options.batchSize), signal)));
    }
    return out;
  }

  private async batch(texts: string[], signal: AbortSignal | undefined, attempt = 0): Promise<Float32Array[]> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs ?? 60_000);
    let response: { status: number; text: string; ok?: boolean };
    try {
      response = await this.options.post({ model: this.options.model, input: texts, encoding_format: 'float' }, signal ? AbortSignal.any([signal, timeout]) : timeout);
    } catch (err) {
      if (signal?.aborted || attempt >= 1) throw err;
      return this.batch(texts, signal, attempt + 1);
    }
    const text = response.text;
    if (response.status < 200 || response.status >= 300) {
      if (response.status === 404 || response.status === 405 || response.status === 501 || (response.status === 400 && /embed|not support|does not exist|not found|unknown model/i.test(text))) {
        throw new EmbeddingsUnsupportedError(`the upstream has no embeddings for model '${this.options.model}' (HTTP ${response.status}: ${text.slice(0, 200)})`);
      }
      if (response.status >= 500 && attempt < 1) return this.batch(texts, signal, attempt + 1);
      throw new Error(`embeddings request failed: HTTP ${response.status}: ${text.slice(0, 200)}`);
    }
    const body = JSON.parse(text) as { data?: Array<{ index?: number; embedding?: number[] | string }> };
    const data = body.data ?? [];
    if (data.length !== texts.length) throw new Error(`embeddings response has ${data.length} vectors for ${texts.length} inputs`);
    const vectors: Float32Array[] = new Array(texts.length);
    data.forEach((entry, i) => {
      const raw = entry.embedding;
      const vector = typeof raw === 'string' ? new Float32Array(Uint8Array.from(Buffer.from(raw, 'base64')).buffer) : Float32Array.from(raw ?? []);
      if (vector.length === 0) throw new Error('embeddings response holds an empty vector');
      vectors[entry.index ?? i] = normalize(vector);
    });
    return vectors;
  }
}

/** Scales to unit length, so a dot product is the cosine similarity. */
export function normalize(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i] * vector[i];
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i] /= norm;
  return vector;
}
