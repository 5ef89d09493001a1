import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveOptions } from '../config/cli-flags.js';
import { claudeLaunch } from './claude.js';
import { codexLaunch, type AgentLaunch } from './codex.js';
import { LAUNCHER_OPTIONS, splitArguments } from './arguments.js';
import { runChild } from './child-process.js';
import { findExecutable } from './executable.js';
import { openGatewaySession, type StartGateway } from './gateway-session.js';

export type Agent = 'codex' | 'claude';

const AGENTS: Record<Agent, { binary: string; override: string; install: string }> = {
  codex: { binary: 'codex', override: 'SWITCHYARD_CODEX_BIN', install: 'npm install -g @openai/codex' },
  claude: { binary: 'claude', override: 'SWITCHYARD_CLAUDE_BIN', install: 'npm install -g @anthropic-ai/claude-code' },
};

export function launcherUsage(agent: Agent): string {
  return `Usage: switchyard ${agent} [gateway flags] [-- ${agent} args…]

Runs ${agent === 'codex' ? 'the Codex CLI' : 'Claude Code'} against Switchyard. Without --gateway a gateway runs inside this
process for the session (the flags of \`switchyard serve\`, e.g. --upstream URL; no upstream = the
simulated model), on a free loopback port, its log in <data dir>/launcher.log.

  --gateway URL     use a running gateway instead
  --api-key KEY     key for the gateway, when it checks keys [SWITCHYARD_API_KEY]
  --model NAME      the served model to use (default: the first one the gateway lists)

The ${agent} executable comes from PATH (or $${AGENTS[agent].override}). Exit status: ${agent}'s.`;
}

/**
 * \`switchyard codex|claude\`: the gateway (started here, or --gateway), the agent configured for it
 * through arguments and environment only, run in the foreground; the gateway stops when the agent
 * exits, and the agent's exit status is returned.
 */
export async function runLauncher(agent: Agent, argv: string[], startGateway: StartGateway, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values, rest } = splitArguments(argv, { ...serveOptions(), ...LAUNCHER_OPTIONS });
  if (values.help) {
    console.log(launcherUsage(agent));
    return 0;
  }
  const spec = AGENTS[agent];
  const executable = findExecutable(spec.binary, env, env[spec.override] || undefined);
  if (!executable) {
    const override = env[spec.override];
    // a set override that points nowhere is the thing to fix, not PATH
    console.error(
      override
        ? `switchyard: ${spec.override}=${override} is not an executable file. Point it at the '${spec.binary}' binary, or unset it to use PATH.`
        : `switchyard: '${spec.binary}' was not found on PATH. Install it (${spec.install}), or set ${spec.override} to its path.`,
    );
    return 127;
  }
  const folder = mkdtempSync(join(tmpdir(), `switchyard-${agent}-`));
  let session: Awaited<ReturnType<typeof openGatewaySession>> | undefined;
  try {
    session = await openGatewaySession(values, env, startGateway);
    const model = values.model as string | undefined;
    const launch: AgentLaunch = agent === 'codex' ? await codexLaunch(session, executable, { model, folder, env }) : await claudeLaunch(session, { model, env });
    if (session.logFile) console.error(`switchyard: gateway at ${session.url} (model ${launch.model}; log: ${session.logFile})`);
    return await runChild(executable, [...launch.args, ...rest], launch.env);
  } finally {
    await session?.close();
    rmSync(folder, { recursive: true, force: true });
  }
}
