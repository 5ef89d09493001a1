/** How loaded deferred tools reach the model (config `tools.toolSearch.mode`). */
export type DeferralMode = 'result' | 'declare' | 'eager';

/** Hosted tool_search settings, as in config `tools.toolSearch`. */
export interface ToolSearchSettings {
  mode: DeferralMode;
  modelModes: Readonly<Record<string, DeferralMode>>;
  defaultLimit: number;
  maxLimit: number;
  maxToolsPerSearch: number;
  maxSchemaBytesPerSearch: number;
  maxLoadedTools: number;
  maxSearchesPerResponse: number;
}

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
