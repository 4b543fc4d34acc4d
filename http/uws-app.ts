import { TroupeError } from '../ops/kernel/errors.js';
import type { CompiledRoute } from './pipeline.js';
import type { Route } from './types.js';
import type { TemplatedApp, UwsRequest, UwsResponse, us_listen_socket } from './uws.js';

/** The uWS side of a server: its route table as uWS handlers, and its listening socket. */

const UNMATCHED = '(unmatched)';

export interface RouteHandlers<D> {
  accept(c: CompiledRoute<D>, res: UwsResponse, req: UwsRequest): void;
  refuse(res: UwsResponse, req: UwsRequest, err: TroupeError, pattern: string, headers: Record<string, string>): void;
}

/** Each route on its method and path; a known path with another method is 405, anything else 404. */
export function registerRoutes<D>(app: TemplatedApp, compiled: readonly CompiledRoute<D>[], handlers: RouteHandlers<D>): void {
  const methodsByPath = new Map<string, string[]>();
  for (const c of compiled) {
    const methods = methodsByPath.get(c.route.path) ?? [];
    const method = c.route.method.toUpperCase();
    if (methods.includes(method)) throw new Error(`route ${method} ${c.route.path} is declared twice`);
    methods.push(method);
    methodsByPath.set(c.route.path, methods);
    register(app, c.route.method, c.route.path, (res, req) => handlers.accept(c, res, req));
  }
  // Registered after every method-specific handler, which uWS would otherwise shadow.
  for (const [path, methods] of methodsByPath) {
    const allow = methods.join(', ');
    app.any(path, (res, req) => handlers.refuse(res, req, new TroupeError('METHOD_NOT_ALLOWED', undefined, { allow: methods }), path, { allow }));
  }
  app.any('/*', (res, req) => handlers.refuse(res, req, new TroupeError('ROUTE_NOT_FOUND'), UNMATCHED, {}));
}

function register(app: TemplatedApp, method: Route['method'], path: string, handler: (res: UwsResponse, req: UwsRequest) => void): void {
  if (method === 'delete') app.del(path, handler);
  else app[method](path, handler);
}

export function listen(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (socket) resolve(socket);
      else reject(new Error(`http server could not listen on ${host}:${port}`));
    });
  });
}
