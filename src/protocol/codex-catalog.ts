/**
 * Model catalog entries in the shape the Codex CLI reads (`model_catalog_json`, and the
 * `{models: [...]}` answer of its model-list fetch): its `ModelInfo`. Without an entry for the
 * served model Codex falls back to generic metadata ("Model metadata for `…` not found") — a
 * different tool set (`apply_patch` as a JSON function instead of the freeform custom tool), no
 * context window (so no auto-compaction) and images assumed. No I/O here.
 */

export type CodexInputModality = 'text' | 'image';
export type CodexReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';

/** What the gateway knows about one served model. */
export interface ServedModel {
  /** The id the upstream serves (and Codex will send as `model`). */
  id: string;
  /** Tokens of context, when known (vLLM lists `max_model_len`). */
  contextWindow?: number;
  /** `['text']` for text-only models: Codex then does not attach images. */
  inputModalities: CodexInputModality[];
  /** Whether the model takes `reasoning.effort` (most self-hosted reasoning models: low/medium/high). */
  reasoning: boolean;
}

export interface CodexModelInfo {
  slug: string;
  display_name: string;
  description: string;
  default_reasoning_level?: CodexReasoningEffort;
  supported_reasoning_levels: Array<{ effort: CodexReasoningEffort; description: string }>;
  shell_type: 'unified_exec' | 'shell_command' | 'local' | 'default' | 'disabled';
  visibility: 'list' | 'hide' | 'none';
  supported_in_api: boolean;
  priority: number;
  upgrade: null;
  base_instructions: string;
  supports_reasoning_summaries: boolean;
  support_verbosity: boolean;
  default_verbosity: null;
  apply_patch_tool_type: 'freeform' | 'function';
  truncation_policy: { mode: 'tokens' | 'bytes'; limit: number };
  supports_parallel_tool_calls: boolean;
  context_window?: number;
  effective_context_window_percent: number;
  experimental_supported_tools: string[];
  input_modalities: CodexInputModality[];
}

/**
 * Used when no Codex-provided prompt is at hand (the gateway's own `/v1/models?client=codex`).
 * The launcher replaces it with the base instructions bundled in the user's Codex, so the model
 * gets the same prompt Codex gives its own models.
 */
export const DEFAULT_CODEX_BASE_INSTRUCTIONS = `You are a coding agent running in the Codex CLI, working in the user's workspace.

- Read the code before changing it; keep changes small and focused on the task.
- Run shell commands with the shell tool; edit files with the apply_patch tool (its input is a patch in the *** Begin Patch / *** End Patch format).
- Prefer \`rg\` for searching. Verify your work (build, tests) when you can.
- When you are done, say briefly what you changed and anything the user should check.`;

/** Tool output kept for the model per call (Codex's own default for its models). */
const TRUNCATION_TOKENS = 10_000;

const REASONING_LEVELS: Array<{ effort: CodexReasoningEffort; description: string }> = [
  { effort: 'low', description: 'Fast responses with lighter reasoning' },
  { effort: 'medium', description: 'Balances speed and reasoning depth' },
  { effort: 'high', description: 'Greater reasoning depth for complex problems' },
];

/**
 * One served model as a Codex catalog entry: the slug is the served id (what Codex sends),
 * `apply_patch` is the freeform custom tool (the gateway turns it into a one-string-parameter
 * function and streams the raw patch back), the shell is Codex's default `exec_command`, and
 * reasoning levels are the three every reasoning-capable self-hosted server understands.
 */
export function codexModelInfo(model: ServedModel, options: { priority?: number; baseInstructions?: string } = {}): CodexModelInfo {
  const entry: CodexModelInfo = {
    slug: model.id,
    display_name: model.id,
    description: 'Served by Switchyard',
    supported_reasoning_levels: model.reasoning ? REASONING_LEVELS : [],
    shell_type: 'unified_exec',
    visibility: 'list',
    supported_in_api: true,
    priority: options.priority ?? 1,
    upgrade: null,
    base_instructions: options.baseInstructions ?? DEFAULT_CODEX_BASE_INSTRUCTIONS,
    // summaries are OpenAI-side condensations of hidden reasoning: self-hosted reasoning is shown as is
    supports_reasoning_summaries: false,
    support_verbosity: false,
    default_verbosity: null,
    apply_patch_tool_type: 'freeform',
    truncation_policy: { mode: 'tokens', limit: TRUNCATION_TOKENS },
    supports_parallel_tool_calls: true,
    effective_context_window_percent: 95,
    experimental_supported_tools: [],
    input_modalities: model.inputModalities.length > 0 ? [...model.inputModalities] : ['text'],
  };
  if (model.reasoning) entry.default_reasoning_level = 'medium';
  if (model.contextWindow !== undefined && model.contextWindow > 0) entry.context_window = model.contextWindow;
  return entry;
}

/** The catalog (`{models: [...]}`), in the order given: the first model gets the top priority. */
export function codexCatalog(models: ServedModel[], options: { baseInstructions?: string } = {}): { models: CodexModelInfo[] } {
  return { models: models.map((model, index) => codexModelInfo(model, { priority: index + 1, baseInstructions: options.baseInstructions })) };
}
