#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startGateway } from './app.js';
import { ConfigError, effectiveUpstreams, loadConfig, missingV1 } from './config/config.js';
import { configTable, helpEnvironment, helpOptions, maskSecrets } from './config/describe.js';
import { flagOverrides, serveOptions } from './config/cli-flags.js';
import { StartupError } from './config/startup-errors.js';
import { startSimulator } from './simulate/server.js';
import { runLauncher } from './launch/command.js';
import { keysCommand } from './auth/keys-command.js';

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name: string; version: string };
  return `${pkg.name} ${pkg.version}`;
}

function usage(): string {
  return `Switchyard — an OpenAI Responses API gateway for self-hosted models.

Usage:
  switchyard serve [options]          run the gateway
  switchyard config check FILE        validate a config file; print the effective config (secrets masked)
  switchyard config docs              print the configuration table (README)
  switchyard keys create NAME [--tenant T] [--rpm N] [--max-concurrent N] | list | revoke NAME
                                      API keys in the store (see switchyard keys --help)
  switchyard simulate [--port N] [--host H] [--max-model-len N]   run the built-in simulated model on its own
  switchyard codex [gateway flags] [-- codex args…]     run the Codex CLI against Switchyard
  switchyard claude [gateway flags] [-- claude args…]   run Claude Code against Switchyard
  switchyard --help | --version

Options of serve (flags > environment > config file > defaults):
  --config FILE            YAML or JSON config file [SWITCHYARD_CONFIG]
${helpOptions()}

Environment:
${helpEnvironment()}

Every key, its default and meaning: README.md "Configuration" (or \`switchyard config docs\`).`;
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    console.log(usage());
    return;
  }
  if (command === '--version' || command === '-v' || command === 'version') {
    console.log(version());
    return;
  }
  if (command === 'config') return configCommand(rest);
  if (command === 'keys') return keysCommand(rest);
  if (command === 'codex' || command === 'claude') {
    // the agent's exit status is ours; the in-process gateway has stopped by then
    process.exit(await runLauncher(command, rest, startGateway));
  }
  if (command === 'simulate') {
    const { values } = parseArgs({ args: rest, options: { port: { type: 'string' }, host: { type: 'string' }, 'max-model-len': { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
    if (values.help) return console.log(usage());
    const port = values.port !== undefined ? Number(values.port) : 8000;
    if (!Number.isInteger(port)) throw new ConfigError(`--port: expected a number, got '${values.port}'`);
    const maxModelLen = values['max-model-len'] !== undefined ? Number(values['max-model-len']) : undefined;
    if (maxModelLen !== undefined && !(Number.isInteger(maxModelLen) && maxModelLen > 0)) throw new ConfigError(`--max-model-len: expected a positive number, got '${values['max-model-len']}'`);
    const sim = await startSimulator({ port, host: values.host ?? '127.0.0.1', maxModelLen });
    console.log(`switchyard simulated model listening on ${sim.url}`);
    onSignal(() => sim.close());
    return;
  }
  if (command !== 'serve') throw new ConfigError(`unknown command '${command}' (try: switchyard --help)`);
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: serveOptions(), strict: true });
  } catch (err) {
    throw new ConfigError(`${(err as Error).message} (try: switchyard --help)`);
  }
  const values = parsed.values as Record<string, unknown>;
  if (values.help) return console.log(usage());
  const config = loadConfig({ file: values.config as string | undefined, overrides: flagOverrides(values) });
  const gateway = await startGateway({ config });
  onSignal(() => gateway.close());
}

/** `config check FILE` and `config docs`. */
function configCommand(args: string[]): void {
  const [sub, file] = args;
  if (sub === 'docs') {
    console.log(configTable());
    return;
  }
  if (sub !== 'check' || !file) throw new ConfigError('usage: switchyard config check FILE | switchyard config docs');
  const config = loadConfig({ file });
  console.log(JSON.stringify(maskSecrets(config), null, 2));
  for (const entry of effectiveUpstreams(config)) {
    if (entry.url && missingV1(entry.url)) console.error(`warning: upstream '${entry.name}': ${entry.url} has no /v1 in its path; OpenAI-compatible servers usually want ${entry.url.replace(/\/+$/, '')}/v1`);
  }
  console.error(`${file}: valid`);
}

function onSignal(close: () => Promise<void>): void {
  let closing = false;
  const stop = () => {
    if (closing) {
      // a second signal: the operator does not want to wait for the grace period
      process.exit(1);
    }
    closing = true;
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error('shutdown failed:', err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

// a promise rejection nobody handled is a bug, but it must not take every open request down with it
process.on('unhandledRejection', (reason) => {
  console.error('unhandled rejection (a bug, reported and survived):', reason);
});

main(process.argv.slice(2)).catch((err: unknown) => {
  // configuration and startup problems are one line saying what to fix; anything else is a bug
  if (err instanceof ConfigError || err instanceof StartupError) console.error(`switchyard: ${err.message}`);
  else console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
