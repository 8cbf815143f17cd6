/**
 * docs/x402.md lists the operations that take no x402 payment; the
 * declarations (RouteDoc.x402) decide it. This reads the one against the
 * other, so that neither can change alone: every `x402: false` is in the
 * table with its reason, every row of the table is such a declaration, and
 * every other metered operation an agent performs takes a payment.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeRoutes } from '../src/api/describe.ts';
import { loadConfig } from '../src/config.ts';
import { paidRouteOf } from '../src/payments/x402/resources.ts';

const routes = describeRoutes(loadConfig({})).routes.filter((r) => r.doc);

/** The `METHOD path` of each row of the table under "## What takes no payment", with its reason. */
function documentedExceptions(): Map<string, string> {
  const doc = readFileSync('docs/x402.md', 'utf8');
  const section = doc.split(/^## /m).find((s) => s.startsWith('What takes no payment'));
  if (!section) throw new Error('docs/x402.md has no section "What takes no payment"');
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const m = /^\| `(GET|POST|PUT|PATCH|DELETE) ([^`]+)` \| (.+) \|$/.exec(line);
    if (m) rows.set(`${m[1]} ${m[2]}`, m[3]!.trim());
  }
  return rows;
}

describe('docs/x402.md and the declarations agree on what takes no payment', () => {
  const documented = documentedExceptions();
  const declared = routes.filter((r) => r.doc!.x402 === false).map((r) => `${r.method} ${r.path}`);

  it('every operation declared x402: false is listed with a reason, and nothing else is', () => {
    expect(declared.length).toBeGreaterThan(0);
    expect([...documented.keys()].sort()).toEqual([...declared].sort());
    for (const [op, why] of documented) expect(why.length, op).toBeGreaterThan(20);
  });

  it('every other metered operation an agent key performs takes a payment', () => {
    const metered = routes.filter((r) => r.doc!.auth === 'key' && r.doc!.role !== 'operator' && (r.doc!.charges?.length ?? 0) > 0);
    const unpaid = metered.filter((r) => !paidRouteOf(r.method, r.path, r.doc) && !documented.has(`${r.method} ${r.path}`));
    expect(unpaid.map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });

  it('the RTP gate takes a payment (it is not an undocumented exception)', () => {
    const gate = routes.find((r) => r.path === '/v1/prefinality/rtp/gate')!;
    expect(paidRouteOf(gate.method, gate.path, gate.doc)).toMatchObject({ sku: 'verify_attestation', fixed: true });
  });
});

describe('every operation whose price depends on its request is priced per request', () => {
  it('an operation asked one price charges one SKU at one price, or names the one answer it is paid for', () => {
    for (const r of routes) {
      const paid = paidRouteOf(r.method, r.path, r.doc);
      if (!paid) continue;
      const prices = new Set(paid.lines.map((l) => l.micros));
      const oneAnswerPaid =
        r.doc!.x402 !== false && r.doc!.x402?.sku !== undefined && (r.doc!.x402.settlesOn !== undefined || !r.doc!.charges?.length);
      if (paid.fixed) expect(prices.size === 1 && !prices.has(null) ? true : oneAnswerPaid, `${r.method} ${r.path}`).toBe(true);
      else expect(prices.size > 1 || prices.has(null), `${r.method} ${r.path}`).toBe(true);
    }
  });

  it('clear/before, the hop, the welded act and the ORN SHARP are priced per request', () => {
    for (const path of ['/api/v1/clear/before', '/v1/fuse/hop', '/v1/act', '/api/v1/orn/sharp', '/api/v1/execute-gate']) {
      const r = routes.find((x) => x.path === path && x.method === 'POST')!;
      expect(paidRouteOf(r.method, r.path, r.doc)?.fixed, path).toBe(false);
    }
  });
});
