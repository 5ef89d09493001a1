export { startGateway, type Gateway, type GatewayOptions, type ExecutionFactory } from './app.js';
export { loadConfig, DEFAULT_CONFIG, ConfigError, configSchema, type Config } from './config/config.js';
export { UpstreamRouter } from './upstream/router.js';
export { startSimulator, type Simulator } from './simulate/server.js';
export type { GatewayExecution, ToolOutcome, ItemEmitter, GatewayInvocation, RegistryEntry } from './tools/types.js';
export type { ResponseStore } from './store/store.js';
