/**
 * The client's address for per-client limits, behind zero or more reverse
 * proxies (TRUST_PROXY_HOPS, docs/hardening.md). With 0 hops only the socket
 * address counts and forwarding headers are ignored (anyone can send them).
 * With n hops the socket peer and the n - 1 nearest forwarded entries are
 * trusted proxies; the entry before them is the client. Entries further left
 * were written by the client itself and are never trusted. `Forwarded`
 * (RFC 7239) is read when present, else `X-Forwarded-For`.
 */
import { isIP } from 'node:net';
import { getRequestIP, type H3Event } from 'h3';

/** `for=` values of a Forwarded header, in order ("for=\"[2001:db8::1]:80\"" -> "2001:db8::1"). */
function forwardedFor(header: string): string[] {
  const out: string[] = [];
  for (const element of header.split(',')) {
    for (const pair of element.split(';')) {
      const m = /^\s*for\s*=\s*(.*?)\s*$/i.exec(pair);
      if (m) out.push(m[1]!.replace(/^"|"$/g, ''));
    }
  }
  return out;
}

/** An address without brackets or port; undefined when it is not an IP literal. */
function normalize(entry: string): string | undefined {
  let a = entry.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(a);
  if (bracketed) a = bracketed[1]!;
  else if (/^[^:]+:\d+$/.test(a)) a = a.slice(0, a.lastIndexOf(':'));
  return isIP(a) ? a : undefined;
}

export function clientAddressOf(event: H3Event, trustedHops: number): string {
  const socket = getRequestIP(event, { xForwardedFor: false }) ?? 'unknown';
  if (trustedHops <= 0) return socket;
  const forwarded = event.req.headers.get('forwarded');
  const xff = event.req.headers.get('x-forwarded-for');
  const chain = forwarded ? forwardedFor(forwarded) : xff ? xff.split(',').map((s) => s.trim()) : [];
  const full = [...chain, socket];
  const entry = full[Math.max(0, full.length - 1 - trustedHops)]!;
  return normalize(entry) ?? socket;
}
