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
