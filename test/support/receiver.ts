/**
 * A webhook subscriber on loopback for tests: answers every request with
 * `answer` when it is a status, else with the next status of the list (then
 * 200); keeps every request, and lets a test wait for requests to arrive,
 * resolved as they arrive (no timer).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedCall {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Receiver {
  /** The URL of `path` on this receiver (http://127.0.0.1:<port><path>). */
  url(path?: string): string;
  /** Every request received, in order. */
  readonly calls: ReceivedCall[];
  /** The requests received at `path`. */
  on(path: string): ReceivedCall[];
  /** Resolves once `count` requests (at `path`, when given) have arrived. */
  arrived(count: number, path?: string): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(answer: number | number[] = []): Promise<Receiver> {
  const statuses = typeof answer === 'number' ? [] : [...answer];
  const status = () => (typeof answer === 'number' ? answer : (statuses.shift() ?? 200));
  const calls: ReceivedCall[] = [];
  const waiting = new Set<() => void>();
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', () => {
      calls.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(status()).end();
      waiting.forEach((w) => w());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const on = (path: string) => calls.filter((c) => c.path === path);
  const count = (path?: string) => (path === undefined ? calls.length : on(path).length);
  return {
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    calls,
    on,
    arrived: (n, path) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (count(path) < n) return;
          waiting.delete(check);
          resolve();
        };
        waiting.add(check);
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
