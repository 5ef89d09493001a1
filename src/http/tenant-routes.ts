import { tenantOf } from '../observability/request-context.js';
import type { Route } from './router.js';

/**
 * Routes built for one tenant (every read and write scoped by its `owner`), served for the
 * tenant of each request: the route table is built once per tenant that shows up (one per API
 * key's tenant, a bounded number) and reused.
 */
export function perTenant(build: (owner: string) => Route[]): Route[] {
  const built = new Map<string, Route[]>();
  const routesOf = (owner: string): Route[] => {
    let routes = built.get(owner);
    if (!routes) built.set(owner, (routes = build(owner)));
    return routes;
  };
  // the shape (methods, paths) is the same for every tenant
  return routesOf('').map((template, i) => ({
    ...template,
    handle: (req, res, params, query) => routesOf(tenantOf(req))[i].handle(req, res, params, query),
  }));
}
