// The simulator's `/v1/embeddings`: a deterministic hashing embedder (feature hashing of words),
// so retrieval tests get stable vectors whose similarity follows shared words — no model needed.

/** Width of the simulator's vectors unless the request asks for `dimensions`. */
export const SIM_EMBEDDING_DIMENSIONS = 256;

/** FNV-1a, 32 bit. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * The vector of one text: every lower-cased word (letters and digits) adds ±1 at a hashed
 * position (the sign from another bit of the hash, so collisions cancel rather than pile up);
 * the result has unit length (the zero vector for a text without words).
 */
export function hashEmbedding(text: string, dimensions = SIM_EMBEDDING_DIMENSIONS): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const hash = fnv1a(word);
    vector[hash % dimensions] += hash & 0x80000000 ? -1 : 1;
  }
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));
  return norm === 0 ? vector : vector.map((v) => v / norm);
}

/** Answers an embeddings request body (OpenAI's shape), or a message saying what is wrong with it. */
export function embeddingsResponse(body: any, modelName: string): Record<string, unknown> | string {
  if (body === null || typeof body !== 'object') return 'The request body must be a JSON object';
  const input = body.input;
  const texts: unknown[] = typeof input === 'string' ? [input] : Array.isArray(input) ? input : [];
  if (texts.length === 0 || texts.some((t) => typeof t !== 'string')) return "'input' must be a string or a non-empty array of strings";
  const dimensions = body.dimensions === undefined ? SIM_EMBEDDING_DIMENSIONS : body.dimensions;
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 4096) return "'dimensions' must be an integer from 1 to 4096";
  const base64 = body.encoding_format === 'base64';
  let tokens = 0;
  const data = (texts as string[]).map((text, index) => {
    tokens += Math.max(1, Math.ceil(text.length / 4));
    const vector = hashEmbedding(text, dimensions);
    const embedding = base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  return { object: 'list', data, model: typeof body.model === 'string' ? body.model : modelName, usage: { prompt_tokens: tokens, total_tokens: tokens } };
}
