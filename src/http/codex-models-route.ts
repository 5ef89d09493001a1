import type { Config } from '../config/config.js';
import { codexCatalog, type ServedModel } from '../protocol/codex-catalog.js';
import { sendJson } from './json.js';
import type { Route } from './router.js';

/**
 * `GET /v1/models?client=codex` answers with a Codex model catalog (`{models: [ModelInfo…]}`, the
 * shape of `model_catalog_json` and of Codex's own model-list fetch, which sends `client_version`)
 * for every served model. Save it to a file and point Codex's `model_catalog_json` at it, or let
 * `switchyard codex` do that. Any other `GET /v1/models` goes to the route it wraps.
 */
export function withCodexCatalog(routes: Route[], listModels: () => Promise<unknown>, clients: Config['clients']): Route[] {
  return routes.map((route) => {
    if (route.method !== 'GET' || route.path !== '/v1/models') return route;
    return {
      ...route,
      handle: async (req, res, params, query) => {
        if (query.get('client') !== 'codex' && !query.has('client_version')) return route.handle(req, res, params, query);
        sendJson(res, 200, codexCatalog(servedModels(await listModels(), clients)));
      },
    };
  });
}

/** The upstream's model list with what the config says about each model (`clients.*`). */
export function servedModels(listed: unknown, clients: Config['clients']): ServedModel[] {
  const data = (listed as { data?: Array<{ id?: unknown; max_model_len?: unknown }> } | null)?.data;
  const models: ServedModel[] = [];
  for (const entry of Array.isArray(data) ? data : []) {
    if (typeof entry.id !== 'string') continue;
    const configured = clients.models[entry.id] ?? {};
    const listedWindow = typeof entry.max_model_len === 'number' && entry.max_model_len > 0 ? entry.max_model_len : undefined;
    models.push({
      id: entry.id,
      contextWindow: configured.contextWindow ?? listedWindow,
      inputModalities: configured.inputModalities ?? clients.inputModalities,
      reasoning: configured.reasoning ?? true,
    });
  }
  return models;
}
