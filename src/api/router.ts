/**
 * Route registration with a record of every (method, path) pair, so that the
 * top-level fallback can tell 405 (the path exists for another method) from
 * 404, and the API description can list what is served.
 */
import type { H3, H3Event } from 'h3';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type Handler = (event: H3Event) => unknown;

export interface RouteRecord {
  method: Method;
  path: string;
  pattern: RegExp;
}

function toPattern(path: string): RegExp {
  const source = path
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '**' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}/?$`);
}

export class Router {
  readonly routes: RouteRecord[] = [];
  readonly app: H3;
  constructor(app: H3) {
    this.app = app;
  }

  on(method: Method, path: string, handler: Handler): this {
    this.routes.push({ method, path, pattern: toPattern(path) });
    this.app.on(method, path, handler);
    return this;
  }
  get(path: string, handler: Handler): this {
    return this.on('GET', path, handler);
  }
  post(path: string, handler: Handler): this {
    return this.on('POST', path, handler);
  }

  /** Methods registered for a concrete path ('' when none). */
  allowed(pathname: string): Method[] {
    return [...new Set(this.routes.filter((r) => r.pattern.test(pathname)).map((r) => r.method))];
  }
}
