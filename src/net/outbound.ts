/**
 * Outbound HTTP to URLs that callers chose (webhook subscribers), guarded
 * against server-side request forgery: unless the operator allows it, a target
 * whose address is loopback, private, link-local, shared, reserved or multicast
 * is refused. The check runs inside the connection's own DNS lookup, so the
 * address that is checked is the address that is connected to (no window for
 * DNS rebinding); an IP literal, which skips the lookup, is checked directly.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';

const NON_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) NON_PUBLIC.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) NON_PUBLIC.addSubnet(net, prefix, 'ipv6');

/** True when `address` (an IPv4 or IPv6 literal) is reachable on the public internet. */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 0) return false;
  const mapped = family === 6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare) : null;
  if (mapped) return isPublicAddress(mapped[1]!); // checked as the IPv4 address it carries
  return !NON_PUBLIC.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

export class NonPublicTarget extends Error {
  override name = 'NonPublicTarget';
  readonly code = 'ENONPUBLIC';
}

const refuse = (host: string, address: string) => new NonPublicTarget(`${host} resolves to ${address}, which is not a public address`);

/** Resolves `url`'s host and refuses it when any of its addresses is not public. */
export async function assertPublicTarget(url: string): Promise<void> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (!isPublicAddress(host)) throw refuse(host, host);
    return;
  }
  const addresses = await new Promise<LookupAddress[]>((resolve, reject) => dnsLookup(host, { all: true }, (e, a) => (e ? reject(e) : resolve(a))));
  const bad = addresses.find((a) => !isPublicAddress(a.address));
  if (bad) throw refuse(host, bad.address);
}

/** dns.lookup for sockets, failing with NonPublicTarget on a non-public answer. */
const guardedLookup: typeof dnsLookup = ((host: string, options: object, callback: (...args: unknown[]) => void) => {
  dnsLookup(host, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err);
    const bad = addresses.find((a) => !isPublicAddress(a.address));
    if (bad) return callback(refuse(host, bad.address));
    const wantsAll = (options as { all?: boolean }).all === true;
    if (wantsAll) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}) as typeof dnsLookup;

export interface PostOptions {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Allow loopback and private targets (for an operator's own network, and tests). */
  allowPrivate: boolean;
}

/** POSTs `body` to `url` without following redirects; answers the status code. */
export function postGuarded(url: string, o: PostOptions): Promise<number> {
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (!o.allowPrivate && isIP(host) && !isPublicAddress(host)) return Promise.reject(refuse(host, host));
  const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      u,
      {
        method: 'POST',
        headers: { ...o.headers, 'content-length': String(Buffer.byteLength(o.body)) },
        signal: AbortSignal.timeout(o.timeoutMs),
        ...(o.allowPrivate ? {} : { lookup: guardedLookup }),
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}
