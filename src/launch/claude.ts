import { ConfigError } from '../config/config.js';
import { getJson, type GatewaySession } from './gateway-session.js';
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
  let model = options.model;
  if (!model) {
    const listed = (await getJson(session, '/v1/models')) as { data?: Array<{ id?: unknown }> } | null;
    const first = Array.isArray(listed?.data) ? listed!.data.find((m) => typeof m.id === 'string') : undefined;
    model = first?.id as string | undefined;
  }
  if (!model) throw new ConfigError(`the gateway at ${session.url} serves no models (GET /v1/models is empty): pass --model NAME`);
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
  return { args: [], env, model };
}
