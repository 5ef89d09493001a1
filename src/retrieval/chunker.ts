import { decode, encode } from 'gpt-tokenizer';
import type { ChunkingStrategy } from '../files/store.js';

// The BPE tables are large: this module is loaded by the extraction worker, never by the gateway's
// main thread (validation lives in chunking-strategy.ts).

/**
 * Splits text into windows of `maxChunkSizeTokens` tokens (o200k_base, the tokenizer of OpenAI's
 * current models) that overlap by `chunkOverlapTokens`, as OpenAI's static strategy does.
 * Whitespace runs are collapsed first so layout noise from PDFs does not eat the budget.
 */
export function chunkText(text: string, strategy: ChunkingStrategy): string[] {
  const clean = text.replace(/[ \t\f\v\u00a0]+/g, ' ').replace(/\s*\n\s*\n\s*/g, '\n\n').replace(/ ?\n ?/g, '\n').trim();
  if (clean.length === 0) return [];
  const tokens = encode(clean);
  const step = strategy.maxChunkSizeTokens - strategy.chunkOverlapTokens;
  const chunks: string[] = [];
  for (let start = 0; start < tokens.length; start += step) {
    const piece = decode(tokens.slice(start, start + strategy.maxChunkSizeTokens)).trim();
    if (piece.length > 0) chunks.push(piece);
    if (start + strategy.maxChunkSizeTokens >= tokens.length) break;
  }
  return chunks;
}

/** Tokens of a text (the embedder's context limit is checked with it). */
export function countTokens(text: string): number {
  return encode(text).length;
}
