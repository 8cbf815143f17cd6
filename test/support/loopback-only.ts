/**
 * Set up before every test file (vitest.config.ts): the test process talks to
 * loopback only. A TCP connection to any other address, and a DNS lookup of any
 * name but `localhost`, is refused where Node makes it (net.Socket's connect,
 * dns.lookup and the resolvers), so nothing leaves the machine, whichever
 * client asks: fetch (undici), node:http and node:https, and the server's own
 * outbound client for webhooks (src/net/outbound.ts), whose lookup is dns.lookup
 * too. Each refusal is recorded and fails the test it happened in (or, after
 * the last test, the file), even when the code that tried swallowed the error,
 * as a webhook deliverer records a failed attempt and goes on.
 *
 * A name under `.invalid` is answered ENOTFOUND here, as RFC 6761 says every
 * resolver must, without asking one: that is how a test writes a URL that must
 * never be called. The guard covers this process; processes a test starts (the
 * CLI, a server under kill -9) are given loopback addresses by their tests.
 */
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import { afterAll, afterEach } from 'vitest';

/** The error a refused connection or lookup fails with. */
export class OutboundRefused extends Error {
  override name = 'OutboundRefused';
  readonly code = 'ETESTOUTBOUND';
}

const attempts: string[] = [];

/** The refused attempts recorded since the last call, oldest first; forgets them (for the test of this guard). */
export function takeOutboundAttempts(): string[] {
  return attempts.splice(0);
}

/** Throws, naming them, when outbound attempts were recorded since the last check (run after each test). */
export function failOnOutboundAttempts(): void {
  const seen = takeOutboundAttempts();
  if (seen.length === 0) return;
  throw new Error(
    `the test reached outside loopback (tests talk to loopback only; use a local receiver, or an .invalid host for a URL that must never be called): ${seen.join('; ')}`,
  );
}

function refusal(what: string): OutboundRefused {
  attempts.push(what);
  return new OutboundRefused(`outbound ${what} refused: tests talk to loopback only`);
}

const notFound = (host: string) =>
  Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND', errno: -3008, syscall: 'getaddrinfo', hostname: host });

/** 127.0.0.0/8, ::1 and IPv4-mapped 127.x: the addresses a test may connect to. */
export function isLoopbackAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').toLowerCase();
  if (net.isIPv4(bare)) return bare.startsWith('127.');
  if (!net.isIPv6(bare)) return false;
  if (bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true;
  const mapped = /^(?:0:0:0:0:0:|::)ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  return mapped !== null && mapped[1]!.startsWith('127.');
}

type Verdict = 'ask' | 'invalid' | 'refuse';
/** What a lookup of `host` may do: ask the system (IP literals, localhost), answer ENOTFOUND (.invalid), or be refused. */
function verdictOn(host: string): Verdict {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (net.isIP(name) || name === 'localhost' || name.endsWith('.localhost')) return 'ask';
  return name === 'invalid' || name.endsWith('.invalid') ? 'invalid' : 'refuse';
}

type Callback = (err: Error | null, ...rest: unknown[]) => void;

function guardLookup(): void {
  const lookup = dns.lookup;
  dns.lookup = function (host: string, options: unknown, callback?: Callback) {
    const cb = (typeof options === 'function' ? options : callback) as Callback;
    const verdict = verdictOn(String(host));
    if (verdict === 'ask') return (lookup as (...a: unknown[]) => unknown).call(dns, host, options, callback);
    const error = verdict === 'invalid' ? notFound(host) : refusal(`DNS lookup of ${host}`);
    process.nextTick(() => cb(error));
    return {};
  } as typeof dns.lookup;
  const lookupAsync = dns.promises.lookup;
  dns.promises.lookup = (async (host: string, options?: unknown) => {
    const verdict = verdictOn(String(host));
    if (verdict === 'ask') return (lookupAsync as (...a: unknown[]) => unknown)(host, options);
    throw verdict === 'invalid' ? notFound(host) : refusal(`DNS lookup of ${host}`);
  }) as typeof dns.promises.lookup;
}

/** dns.resolve* and dns.promises.resolve* ask a DNS server directly: nothing in a test has to. */
function guardResolvers(): void {
  for (const api of [dns, dns.promises] as unknown as Array<Record<string, unknown>>) {
    for (const name of Object.keys(api).filter((k) => /^(resolve|reverse)/.test(k) && typeof api[k] === 'function')) {
      const promised = api === (dns.promises as unknown);
      api[name] = (host: string, ...rest: unknown[]) => {
        const error = verdictOn(String(host)) === 'invalid' ? notFound(host) : refusal(`DNS ${name} of ${host}`);
        if (promised) return Promise.reject(error);
        const cb = rest.at(-1) as Callback;
        process.nextTick(() => cb(error));
        return undefined;
      };
    }
  }
}

/** The options a call of net.Socket#connect was given: an options object, normalized arguments, or (port, host) / (path). */
function connectTarget(args: unknown[]): { host?: string; port?: unknown; path?: unknown } {
  const first = args[0];
  if (Array.isArray(first)) return (first[0] ?? {}) as { host?: string };
  if (first !== null && typeof first === 'object') return first as { host?: string };
  if (typeof first === 'string' && !/^\d+$/.test(first)) return { path: first };
  return { port: first, ...(typeof args[1] === 'string' ? { host: args[1] } : {}) };
}

function guardConnect(): void {
  const connect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    const target = connectTarget(args);
    if (target.path == null) {
      const host = target.host ?? 'localhost';
      if (net.isIP(host) && !isLoopbackAddress(host)) {
        const error = refusal(`connection to ${host} port ${String(target.port)}`);
        process.nextTick(() => this.destroy(error));
        return this;
      }
      // A name: whatever lookup resolves it (its own, as an SSRF guard passes one, or dns.lookup) must answer loopback.
      this.on('lookup', (err: Error | null, address: string) => {
        if (!err && address && !isLoopbackAddress(address))
          this.destroy(refusal(`connection to ${host} (${address}) port ${String(target.port)}`));
      });
    }
    return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof net.Socket.prototype.connect;
}

guardLookup();
guardResolvers();
guardConnect();
// `import { lookup } from 'node:dns'` (src/net/outbound.ts) reads the patched function from here on.
syncBuiltinESMExports();

afterEach(failOnOutboundAttempts);
afterAll(failOnOutboundAttempts);
