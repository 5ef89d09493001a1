import type { HttpRequest, HttpResponse } from './exchange.js';

/** One HTTP route: method + path pattern (a string, or a RegExp whose groups are the params). */
export interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  path: string | RegExp;
  handle(req: HttpRequest, res: HttpResponse, params: string[], query: URLSearchParams): Promise<void> | void;
  /** Runs a model turn (counted against the concurrent-turn limits while it is answered). */
  turn?: boolean;
}

export interface RouteMatch {
  route: Route;
  params: string[];
}

/**
 * Finds the route for a request. Returns `'method_not_allowed'` when the path exists under another
 * method, undefined when no route knows the path. Params are URL-decoded.
 */
export function matchRoute(routes: readonly Route[], method: string, path: string): RouteMatch | 'method_not_allowed' | undefined {
  // a fixed path no pattern also matches (`POST /v1/responses`, every turn) is found without
  // walking the patterns: the table's answer for it is its own routes, in order
  const fixed = fixedPaths(routes).get(path);
  if (fixed) {
    for (const route of fixed) if (route.method === method) return { route, params: [] };
    return 'method_not_allowed';
  }
  let pathKnown = false;
  for (const route of routes) {
    let params: string[] | null = null;
    if (typeof route.path === 'string') {
      if (route.path === path) params = [];
    } else {
      const match = route.path.exec(path);
      if (match) {
        try {
          params = match.slice(1).map((p) => decodeURIComponent(p));
        } catch {
          continue; // malformed percent-encoding: no such resource
        }
        // ids never contain NUL (and databases refuse it): no such resource rather than a 500
        if (params.some((p) => p.includes('\u0000'))) continue;
      }
    }
    if (params === null) continue;
    if (route.method === method) return { route, params };
    pathKnown = true;
  }
  return pathKnown ? 'method_not_allowed' : undefined;
}

const fixedPathsOf = new WeakMap<readonly Route[], Map<string, Route[]>>();

/** A table's fixed paths that no pattern in it matches, each with its routes in table order. */
function fixedPaths(routes: readonly Route[]): Map<string, Route[]> {
  let fixed = fixedPathsOf.get(routes);
  if (fixed === undefined) {
    fixed = new Map();
    const patterns = routes.flatMap((route) => (typeof route.path === 'string' ? [] : [route.path]));
    for (const route of routes) {
      const path = route.path;
      if (typeof path !== 'string' || patterns.some((pattern) => pattern.test(path))) continue;
      const list = fixed.get(path);
      if (list) list.push(route);
      else fixed.set(path, [route]);
    }
    fixedPathsOf.set(routes, fixed);
  }
  return fixed;
}

const labels = new WeakMap<Route, string>();

/** A route's pattern as a bounded label for logs and metrics: `/v1/responses/{id}/cancel`. */
export function routeLabel(route: Route): string {
  let label = labels.get(route);
  if (label === undefined) {
    label = typeof route.path === 'string' ? route.path : route.path.source.replace(/^\^/, '').replace(/\$$/, '').replace(/\((?:[^()\\]|\\.)*\)/g, '{id}').replace(/\\\//g, '/');
    labels.set(route, label);
  }
  return label;
}
