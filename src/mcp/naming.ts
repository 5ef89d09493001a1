import { createHash } from 'node:crypto';

/** Prefix of every model-visible MCP tool name: `mcp__<server_label>__<tool>`. */
export const MCP_NAME_PREFIX = 'mcp__';

/**
 * The model-visible name of an MCP tool: `mcp__<server_label>__<tool>`, characters outside
 * `[a-zA-Z0-9_-]` replaced by `_`, cut to 64 characters with an 8-hex-digit hash of the full
 * identity when longer, when sanitizing changed it, or when a part contains `__` — so two servers exposing the same tool never
 * collide, and two tools that sanitize alike still get distinct names.
 */
export function mcpModelName(serverLabel: string, toolName: string): string {
  const raw = `${MCP_NAME_PREFIX}${serverLabel}__${toolName}`;
  const sanitized = raw.replace(/[^a-zA-Z0-9_-]/g, '_');
  // `__` inside a label or tool name could make two identities read alike: those get the hash too
  if (sanitized === raw && raw.length <= 64 && !serverLabel.includes('__') && !toolName.includes('__')) return raw;
  const hash = createHash('sha256').update(`${serverLabel}\u0000${toolName}`).digest('hex').slice(0, 8);
  return `${sanitized.slice(0, 55)}_${hash}`;
}
