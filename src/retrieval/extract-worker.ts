import { parentPort } from 'node:worker_threads';
import type { ChunkingStrategy } from '../files/store.js';
import { chunkText, countTokens } from './chunker.js';
import { extractText, ExtractionError } from './extract.js';

/** A request to the extraction worker: the file's bytes (transferred), its name, the strategy. */
export interface ExtractRequest {
  id: number;
  bytes: ArrayBuffer;
  filename: string;
  chunking: ChunkingStrategy;
}

export type ExtractReply = { id: number; chunks: Array<{ text: string; tokens: number }> } | { id: number; error: { code: string; message: string } };

/** Extraction and chunking are CPU-bound (pdf.js, the BPE tokenizer): they run here, off the event loop. */
export async function extractAndChunk(request: Omit<ExtractRequest, 'id'>): Promise<Array<{ text: string; tokens: number }>> {
  const text = await extractText(new Uint8Array(request.bytes), request.filename);
  return chunkText(text, request.chunking).map((chunk) => ({ text: chunk, tokens: countTokens(chunk) }));
}

parentPort?.on('message', (request: ExtractRequest) => {
  extractAndChunk(request).then(
    (chunks) => parentPort!.postMessage({ id: request.id, chunks } satisfies ExtractReply),
    (err: unknown) => {
      const code = err instanceof ExtractionError ? err.code : 'server_error';
      parentPort!.postMessage({ id: request.id, error: { code, message: err instanceof Error ? err.message : String(err) } } satisfies ExtractReply);
    },
  );
});
