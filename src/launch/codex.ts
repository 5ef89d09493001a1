import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { codexModelInfo, type CodexModelInfo } from '../protocol/codex-catalog.js';
import { servedModels } from '../http/codex-models-route.js';
import { ConfigError, DEFAULT_CONFIG } from '../config/config.js';
import { getJson, type GatewaySession } from './gateway-session.js';

/** The provider id Codex knows the gateway by (its `model_providers` key). */
export const CODEX_PROVIDER = 'switchyard';
/** The environment variable Codex reads the gateway key from (`env_key`). */
export const CODEX_KEY_VARIABLE = 'SWITCHYARD_API_KEY';

export interface AgentLaunch {
  args: string[];
  env: NodeJS.ProcessEnv;
  model: string;
}

/**
 * Codex against the gateway, without touching the user's Codex config: `-c` overrides (which win
 * over `config.toml` for this run only) add a `switchyard` provider speaking the Responses API to
 * the gateway and select it, and `model_catalog_json` points at a catalog written to `folder`
 * with an entry for every served model — so Codex uses the freeform `apply_patch` tool, knows the
 * context window (auto-compaction) and sends images only to models that take them.
 */
export async function codexLaunch(session: GatewaySession, codex: string, options: { model?: string; folder: string; env: NodeJS.ProcessEnv }): Promise<AgentLaunch> {
  const catalog = (await getJson(session, '/v1/models?client=codex')) as { models?: CodexModelInfo[] };
  const models = Array.isArray(catalog.models) ? catalog.models : [];
  const model = options.model ?? models[0]?.slug;
  if (!model) throw new ConfigError(`the gateway at ${session.url} serves no models (GET /v1/models is empty): pass --model NAME`);
  if (!models.some((entry) => entry.slug === model)) {
    // an alias or a model the upstream does not list: described with the configured defaults
    const clients = session.config?.clients ?? DEFAULT_CONFIG.clients;
    models.push(codexModelInfo(servedModels({ data: [{ id: model }] }, clients)[0], { priority: models.length + 1 }));
  }
  const instructions = bundledBaseInstructions(codex, options.env);
  if (instructions) for (const entry of models) entry.base_instructions = instructions;
  const catalogFile = join(options.folder, 'codex-model-catalog.json');
  writeFileSync(catalogFile, JSON.stringify({ models }, null, 2));

  const provider: Record<string, string> = { name: 'Switchyard', base_url: `${session.url}/v1`, wire_api: 'responses' };
  const env = { ...options.env };
  if (session.apiKey) {
    provider.env_key = CODEX_KEY_VARIABLE;
    env[CODEX_KEY_VARIABLE] = session.apiKey;
  }
  const args = [
    '-c', `model_providers.${CODEX_PROVIDER}=${tomlInlineTable(provider)}`,
    '-c', `model_provider=${tomlString(CODEX_PROVIDER)}`,
    '-c', `model=${tomlString(model)}`,
    '-c', `model_catalog_json=${tomlString(catalogFile)}`,
  ];
  return { args, env, model };
}

/**
 * The base instructions Codex gives its own models (its classic tool profile: no code mode), from
 * the catalog bundled in the user's Codex (`codex debug models --bundled`), so a self-hosted model
 * gets the prompt Codex's tools are written for. Undefined when that cannot be read: the gateway's
 * generic instructions stay.
 */
export function bundledBaseInstructions(codex: string, env: NodeJS.ProcessEnv): string | undefined {
  const run = spawnSync(codex, ['debug', 'models', '--bundled'], { env, encoding: 'utf8', timeout: 30_000, maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
  if (run.status !== 0 || !run.stdout) return undefined;
  try {
    const bundled = JSON.parse(run.stdout) as { models?: Array<Record<string, unknown>> };
    const entries = (bundled.models ?? []).filter((m) => typeof m.base_instructions === 'string' && (m.base_instructions as string).length > 0);
    const classic = entries.filter((m) => m.tool_mode === undefined && m.apply_patch_tool_type === 'freeform');
    // the last classic entry is the lowest-priority (oldest, longest-supported) profile
    const chosen = classic.at(-1) ?? entries.at(-1);
    return chosen?.base_instructions as string | undefined;
  } catch {
    return undefined;
  }
}

/** A TOML basic string (JSON's escapes are valid TOML escapes). */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

function tomlInlineTable(fields: Record<string, string>): string {
  return `{${Object.entries(fields).map(([key, value]) => `${key}=${tomlString(value)}`).join(', ')}}`;
}
