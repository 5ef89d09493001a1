import { ConfigError } from '../config/config.js';
import { getJson, type GatewaySession } from './gateway-session.js';
import type { CodexModelInfo } from '../protocol/codex-catalog.js';
import type { AgentLaunch } from './codex.js';

/** Sent when the gateway checks no key: Claude Code needs some credential to start without a login. */
const PLACEHOLDER_KEY = 'switchyard-no-key';

/**
 * Claude Code against the gateway's Messages surface, through its environment only: the base URL,
 * the key as a bearer token, and every model role it uses (main, Opus/Sonnet/Haiku aliases, the
 * small fast model of background calls) mapped to one served model. Non-essential traffic to
 * Anthropic (telemetry, update checks) is turned off: the session is local.
 */
export async function claudeLaunch(session: GatewaySession, options: { model?: string; env: NodeJS.ProcessEnv }): Promise<AgentLaunch> {
  // the gateway's description of its models (the Codex catalog shape): ids and context windows
  const catalog = (await getJson(session, '/v1/models?client=codex')) as { models?: CodexModelInfo[] } | null;
  const served = Array.isArray(catalog?.models) ? catalog!.models : [];
  const model = options.model ?? served[0]?.slug;
  if (!model) throw new ConfigError(`the gateway at ${session.url} serves no models (GET /v1/models is empty): pass --model NAME`);
  const contextWindow = served.find((entry) => entry.slug === model)?.context_window;
  const env: NodeJS.ProcessEnv = { ...options.env };
  // a real Anthropic key in the user's environment is not for this gateway, and would win over the token
  delete env.ANTHROPIC_API_KEY;
  Object.assign(env, {
    ANTHROPIC_BASE_URL: session.url,
    ANTHROPIC_AUTH_TOKEN: session.apiKey ?? PLACEHOLDER_KEY,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_DEFAULT_OPUS_MODEL: model,
    ANTHROPIC_DEFAULT_SONNET_MODEL: model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  });
  // an unknown model id is assumed to hold 1M tokens: tell it the real window, so it compacts in time
  if (contextWindow !== undefined && !env.CLAUDE_CODE_MAX_CONTEXT_TOKENS) env.CLAUDE_CODE_MAX_CONTEXT_TOKENS = String(contextWindow);
  return { args: [], env, model };
}
