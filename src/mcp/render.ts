/** An MCP `tools/call` result as the SDK returns it (content blocks, structured content, isError). */
export interface McpCallResult {
  content?: Array<Record<string, any>>;
  structuredContent?: unknown;
  isError?: boolean;
  toolResult?: unknown;
}

/**
 * Renders a tool result as text for the model: text blocks as they are, structured content as
 * JSON when there is no text, images and audio as short markers (most chat templates cannot take
 * images in tool results), resources by their text or URI. Capped at `maxBytes` with a visible
 * truncation marker so the model knows it did not see everything.
 */
export function renderCallResult(result: McpCallResult, maxBytes: number): string {
  const parts: string[] = [];
  for (const block of result.content ?? []) {
    switch (block.type) {
      case 'text':
        parts.push(String(block.text ?? ''));
        break;
      case 'image':
      case 'audio':
        parts.push(`[${block.type}: ${block.mimeType ?? 'unknown type'}, ${approxBase64Bytes(block.data)} bytes]`);
        break;
      case 'resource': {
        const resource = block.resource ?? {};
        parts.push(typeof resource.text === 'string' ? resource.text : `[resource: ${resource.uri ?? 'unknown'}${resource.mimeType ? `, ${resource.mimeType}` : ''}]`);
        break;
      }
      case 'resource_link':
        parts.push(`[resource link: ${block.name ?? ''} ${block.uri ?? ''}]`.replace(/\s+]/, ']'));
        break;
      default:
        parts.push(JSON.stringify(block));
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  if (parts.length === 0 && result.toolResult !== undefined) parts.push(typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult));
  return capText(parts.join('\n'), maxBytes);
}

/** Cuts text to at most `maxBytes` UTF-8 bytes (on a character boundary) and says how much was cut. */
export function capText(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return text;
  let cut = Buffer.from(text).subarray(0, maxBytes).toString('utf8');
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return `${cut}\n…[truncated: ${bytes - Buffer.byteLength(cut)} more bytes not shown]`;
}

function approxBase64Bytes(data: unknown): number {
  return typeof data === 'string' ? Math.floor((data.length * 3) / 4) : 0;
}
