import type { JsonObject } from '../protocol/responses.js';

/** Tool-call arguments as an object: '' counts as `{}`; anything but a JSON object is undefined. */
export function parseJsonObject(text: string): JsonObject | undefined {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : undefined;
  } catch {
    return undefined;
  }
}
