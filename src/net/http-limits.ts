/**
 * The HTTP server's defences against connection starvation (docs/hardening.md):
 * deadlines for a request's headers and whole body (slowloris), for a
 * kept-alive connection's next request, for a connection that never sends a
 * request at all, and a cap on open connections. Node applies the first two
 * only every `connectionsCheckingInterval` (30 s by default): we check every
 * half headers deadline (1 to 5 s) so that a deadline means what it says.
 */
import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../config.ts';

export type HttpLimits = Pick<
  Config,
  'HTTP_HEADERS_TIMEOUT_MS' | 'HTTP_REQUEST_TIMEOUT_MS' | 'HTTP_IDLE_TIMEOUT_MS' | 'HTTP_KEEP_ALIVE_TIMEOUT_MS' | 'HTTP_MAX_CONNECTIONS'
>;

/** Options for http.createServer. */
export function httpServerOptions(c: HttpLimits): ServerOptions {
  const requestTimeout = c.HTTP_REQUEST_TIMEOUT_MS;
  return {
    // Node refuses a headers deadline later than the request deadline.
    headersTimeout: Math.min(c.HTTP_HEADERS_TIMEOUT_MS, requestTimeout),
    requestTimeout,
    keepAliveTimeout: c.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    // Half the headers deadline, between 1 and 5 s: a slow client is cut within 1.5 times the deadline.
    connectionsCheckingInterval: Math.max(1000, Math.min(5000, Math.floor(c.HTTP_HEADERS_TIMEOUT_MS / 2))),
  };
}

const IN_FLIGHT = Symbol('fusegate.inFlight');
type CountedSocket = Socket & { [IN_FLIGHT]?: number };

/**
 * The connection cap and the idle deadline. A socket's inactivity timer fires
 * after HTTP_IDLE_TIMEOUT_MS without bytes; it is closed then only when no
 * request is in flight on it (a slow handler, such as an upstream call, is
 * not idleness: its own timeout governs it).
 */
export function applyConnectionLimits(server: Server, c: HttpLimits): void {
  server.maxConnections = c.HTTP_MAX_CONNECTIONS;
  server.on('connection', (socket: CountedSocket) => {
    socket[IN_FLIGHT] = 0;
    socket.setTimeout(c.HTTP_IDLE_TIMEOUT_MS);
  });
  server.on('request', (req, res) => {
    const socket = req.socket as CountedSocket;
    socket[IN_FLIGHT] = (socket[IN_FLIGHT] ?? 0) + 1;
    res.once('close', () => {
      socket[IN_FLIGHT] = Math.max(0, (socket[IN_FLIGHT] ?? 1) - 1);
    });
  });
  // With a 'timeout' listener Node leaves the socket open: we decide.
  server.on('timeout', (socket: CountedSocket) => {
    if (!socket[IN_FLIGHT]) socket.destroy();
  });
}
