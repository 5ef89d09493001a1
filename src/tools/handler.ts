import type { JsonObject } from '../protocol/responses.js';
import type { GatewayExecution, RegistryEntry } from './types.js';

/** What declaration-side handlers may ask of the gateway. */
export interface DeclareContext {
  /** The execution side configured for a gateway tool type, if any. */
  executionFor(toolType: string, declaration: JsonObject): GatewayExecution | undefined;
  /** Logs a message once per process (e.g. "web_search omitted: no provider configured"). */
  logOnce(key: string, message: string): void;
}

/**
 * One tool type: the declaration side (parse + normalize) for all types; gateway types attach
 * their execution side to the entries they produce. See architecture.md §1.
 */
export interface ToolHandler<D = JsonObject> {
  /** Public `type` values this handler accepts (aliases included). */
  readonly types: readonly string[];
  readonly owner: 'client' | 'gateway';
  /** Validates one declaration; throws ToolDeclarationError with a precise `param`. */
  parse(raw: JsonObject, param: string): D;
  /** The model-visible functions for this declaration (none = omitted from the model). */
  normalize(declaration: D, param: string, ctx: DeclareContext): RegistryEntry[];
}
