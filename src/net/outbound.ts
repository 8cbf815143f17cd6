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
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * True when `address` (an IPv4 or IPv6 literal) is reachable on the public
 * internet. The special-purpose registries (IANA IPv4/IPv6) come from
 * ipaddr.js, a maintained library, not a table of ours: only its `unicast`
 * range (global unicast) is public. Every IPv6 form that carries an IPv4
 * address (IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96, NAT64
 * 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32) is
 * refused, except IPv4-mapped, which is judged as the IPv4 address it carries.
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!ipaddr.isValid(bare) || isIP(bare) === 0) return false;
  const parsed = ipaddr.parse(bare);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return isPublicAddress(v6.toIPv4Address().toString());
    // IPv4-compatible (::a.b.c.d, deprecated by RFC 4291): ipaddr.js calls it unicast.
    if (v6.parts.slice(0, 6).every((p) => p === 0)) return false;
  }
  return parsed.range() === 'unicast';
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
  const addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
    dnsLookup(host, { all: true }, (e, a) => (e ? reject(e) : resolve(a))),
  );
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
