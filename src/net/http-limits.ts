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
  | 'HTTP_HEADERS_TIMEOUT_MS'
  | 'HTTP_REQUEST_TIMEOUT_MS'
  | 'HTTP_IDLE_TIMEOUT_MS'
  | 'HTTP_KEEP_ALIVE_TIMEOUT_MS'
  | 'HTTP_MAX_CONNECTIONS'
  | 'HTTP_MAX_CONNECTIONS_PER_ADDRESS'
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
  const perAddress = c.HTTP_MAX_CONNECTIONS_PER_ADDRESS;
  const byAddress = new Map<string, Set<CountedSocket>>();
  server.on('connection', (socket: CountedSocket) => {
    socket[IN_FLIGHT] = 0;
    socket.setTimeout(c.HTTP_IDLE_TIMEOUT_MS);
    if (perAddress > 0) admit(byAddress, perAddress, socket);
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

/**
 * The per-address cap: one address holds at most `cap` open connections, so it
 * cannot use up HTTP_MAX_CONNECTIONS for everyone. Past it, the address's
 * oldest connection with no request in flight is closed to make room (a client
 * hoarding idle sockets loses those, not its new request); when every one of
 * its connections is busy, the new one is closed at once.
 */
function admit(byAddress: Map<string, Set<CountedSocket>>, cap: number, socket: CountedSocket): void {
  const address = socket.remoteAddress ?? '';
  let open = byAddress.get(address);
  if (!open) byAddress.set(address, (open = new Set()));
  if (open.size >= cap) {
    let idle: CountedSocket | undefined;
    for (const s of open)
      if (!s[IN_FLIGHT]) {
        idle = s;
        break;
      }
    if (!idle) {
      socket.destroy();
      return;
    }
    open.delete(idle);
    idle.destroy();
  }
  open.add(socket);
  socket.once('close', () => {
    open.delete(socket);
    if (open.size === 0 && byAddress.get(address) === open) byAddress.delete(address);
  });
}
