import type { DeferralMode, ToolSearchSettings } from '../types.js';

export const DEFAULT_TOOL_SEARCH_SETTINGS: ToolSearchSettings = {
  mode: 'result',
  modelModes: {},
  defaultLimit: 8,
  maxLimit: 20,
  maxToolsPerSearch: 20,
  maxSchemaBytesPerSearch: 65_536,
  maxLoadedTools: 64,
  maxSearchesPerResponse: 8,
};

export function deferralModeFor(settings: ToolSearchSettings, model: string | undefined): DeferralMode {
  return (model !== undefined ? settings.modelModes[model] : undefined) ?? settings.mode;
}
