#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { startGateway } from './app.js';
import { loadConfig } from './config/config.js';
import { startSimulator } from './simulate/server.js';

const USAGE = `Usage:
  switchyard serve [--port N] [--host H] [--upstream URL] [--upstream-api chat|responses] [--data-dir DIR] [--config FILE]
  switchyard simulate [--port N] [--host H]

Environment: SWITCHYARD_PORT, SWITCHYARD_HOST, SWITCHYARD_UPSTREAM_URL, SWITCHYARD_UPSTREAM_API,
SWITCHYARD_UPSTREAM_API_KEY, SWITCHYARD_DATA_DIR, SWITCHYARD_CONFIG, SWITCHYARD_LOG_LEVEL.`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      upstream: { type: 'string' },
      'upstream-api': { type: 'string' },
      'data-dir': { type: 'string' },
      config: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || command === undefined || command === 'help') {
    console.log(USAGE);
    return;
  }
  const port = values.port !== undefined ? Number(values.port) : undefined;
  if (port !== undefined && !Number.isInteger(port)) throw new Error(`--port must be a number, got '${values.port}'`);

  if (command === 'simulate') {
    const sim = await startSimulator({ port: port ?? 8000, host: values.host ?? '127.0.0.1' });
    console.log(`switchyard simulated model listening on ${sim.url}`);
    onSignal(() => sim.close());
    return;
  }
  if (command !== 'serve') throw new Error(`unknown command '${command}'\n\n${USAGE}`);
  const config = loadConfig({
    file: values.config,
    overrides: {
      ...(port !== undefined ? { port } : {}),
      ...(values.host !== undefined ? { host: values.host } : {}),
      ...(values['data-dir'] !== undefined ? { dataDir: values['data-dir'] } : {}),
      upstream: {
        ...(values.upstream !== undefined ? { url: values.upstream } : {}),
        ...(values['upstream-api'] !== undefined ? { api: values['upstream-api'] as 'chat' | 'responses' } : {}),
      },
    },
  });
  const gateway = await startGateway({ config });
  onSignal(() => gateway.close());
}

function onSignal(close: () => Promise<void>): void {
  let closing = false;
  const stop = () => {
    if (closing) return;
    closing = true;
    close().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

// a promise rejection nobody handled is a bug, but it must not take every open request down with it
process.on('unhandledRejection', (reason) => {
  console.error('unhandled rejection (a bug, reported and survived):', reason);
});

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
