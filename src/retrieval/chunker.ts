import { decode, encode } from 'gpt-tokenizer';
import type { ChunkingStrategy } from '../files/store.js';

/** OpenAI's `auto` strategy: 800-token chunks overlapping by 400. */
export const AUTO_CHUNKING: ChunkingStrategy = { type: 'static', maxChunkSizeTokens: 800, chunkOverlapTokens: 400 };

/** Why a `static` strategy is invalid (OpenAI's bounds), or undefined. */
export function chunkingProblem(maxTokens: number, overlapTokens: number): string | undefined {
  if (!Number.isInteger(maxTokens) || maxTokens < 100 || maxTokens > 4096) return 'max_chunk_size_tokens must be an integer from 100 to 4096';
  if (!Number.isInteger(overlapTokens) || overlapTokens < 0) return 'chunk_overlap_tokens must be a non-negative integer';
  if (overlapTokens > maxTokens / 2) return 'chunk_overlap_tokens must not exceed half of max_chunk_size_tokens';
  return undefined;
}

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
