/**
 * The discovery documents whose content is live (SPEC 4.1), served by the
 * gate over their built copies:
 *   GET /.well-known/capture.json    public (key optional)  the spend map; with a key, the caller's own spend on it
 *   GET /.well-known/restraint.json  public                 the inventory of production refusals, counted live per kind
 *   GET /.well-known/listings.json   public                 every catalog this service lists, with its schema and URL
 *   GET /.well-known/register.json   public                 the infrastructure register: logs, signing keys, endpoints
 * No document names an account: restraint.json counts refusals of all keys together.
 */
import { HTTPResponse } from 'h3';
import { CATALOGS } from '../../catalog/catalogs.ts';
import { discoveryDocument } from '../../catalog/discovery.ts';
import { pricingTable } from '../../catalog/pricing-table.ts';
import { DATA } from '../../catalog/catalogs.ts';
import { monthOf } from '../../domain/clear.ts';
import { monthTotals } from '../../ledger/clear.ts';
import { listLogs } from '../../ledger/log.ts';
import { usage } from '../../ledger/meter.ts';
import { optionalKey } from '../auth.ts';
import type { AppContext } from '../context.ts';
import { openCheckoutView } from '../gate/operator.ts';
import { JWKS_PATH } from '../gate/prefinality.ts';
import type { Router } from '../router.ts';
import { describeLog } from './logs.ts';
import { operation } from '../operation.ts';

const PUBLIC = { 'content-type': 'application/json; charset=utf-8', 'access-control-allow-origin': '*' };
/** How long the public counts are reused: they sum the whole meter. */
const COUNTS_TTL_MS = 60_000;

const json = (body: unknown, headers: Record<string, string>) =>
  new HTTPResponse(JSON.stringify(body), { headers: { ...PUBLIC, ...headers } });

/** The NAP SKUs: every charged refusal is one of them (SPEC 2.4 nap_rule). */
const REFUSAL_KINDS = DATA.nap.skus.map((s) => ({ sku: s.sku, label: s.label, what: s.ccb, endpoint: s.endpoint }));

export function registerLiveDiscoveryRoutes(router: Router, ctx: AppContext): void {
  const urls = { site: ctx.config.SITE_URL.replace(/\/+$/, ''), gate: ctx.config.BASE_URL.replace(/\/+$/, '') };
  const doc = (name: string) => discoveryDocument(name, urls);

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/.well-known/capture.json',
      summary: "The spend map (every SKU, fee and tier by area); with a key, the caller's own spend on it",
      auth: 'public',
      tag: 'system',
    },
    async ({ event }) => {
      const key = await optionalKey(event, ctx);
      const table = pricingTable({ operatorFloorUsd: ctx.config.OPERATOR_FLOOR_USD });
      const spendMap = table.sections.map((s) => ({
        id: s.id,
        title: s.title,
        skus: s.rows.map((r) => ({
          id: r.id,
          label: r.label,
          ...(r.amount_usd ? { amount_usd: r.amount_usd } : {}),
          ...(r.bps !== undefined ? { bps: r.bps } : {}),
          unit: r.unit,
          ...(r.endpoint ? { endpoint: r.endpoint } : {}),
        })),
      }));
      let yours: unknown = null;
      if (key) {
        const [u, month] = await Promise.all([usage(ctx.ledger.read, key.id), openCheckoutView(ctx, key.id)]);
        yours = { key_id: key.id, by_sku: u.by_sku, total_usd: u.total_usd, nap_usd: u.nap_usd, open_month: month };
      }
      return json(
        {
          ...doc('capture'),
          spend_map: spendMap,
          your_spend: yours,
          ...(key ? {} : { your_spend_note: "send Authorization: Bearer <API_KEY> to see the calling key's own spend on this map" }),
        },
        { 'cache-control': key ? 'private, no-store' : 'public, max-age=300', vary: 'authorization' },
      );
    },
  );

  let counts: { at: number; body: unknown } | undefined;
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/.well-known/restraint.json',
      summary:
        "The inventory of production refusals: live counts per refusal kind (NAP SKU) and the execute gate's decisions this month; no personal data",
      auth: 'public',
      tag: 'system',
    },
    async () => {
      if (!counts || Date.now() - counts.at > COUNTS_TTL_MS) {
        const month = monthOf();
        const [u, gate] = await Promise.all([usage(ctx.ledger.read), monthTotals(ctx.ledger.read, month)]);
        const refusals = REFUSAL_KINDS.map((k) => ({ ...k, count: u.by_sku.find((x) => x.sku === k.sku)?.count ?? 0 }));
        counts = {
          at: Date.now(),
          body: {
            ...doc('restraint'),
            counted_at: new Date().toISOString(),
            personal_data: 'none: counts of every key together, no key, account, subject or amount',
            refusals,
            total_refusals: refusals.reduce((a, r) => a + r.count, 0),
            execute_gate_this_month: { month, by_decision: gate.by_decision },
            counts_note: `production refusals are the charged ones (public demos are not counted); counts are at most ${COUNTS_TTL_MS / 1000} s old`,
          },
        };
      }
      return json(counts.body, { 'cache-control': `public, max-age=${COUNTS_TTL_MS / 1000}` });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/.well-known/listings.json',
      summary: 'Every catalog this service lists, with its schema id and URL',
      auth: 'public',
      tag: 'system',
    },
    () =>
      json(
        {
          ...doc('listings'),
          listings: CATALOGS.map((c) => ({ id: c.key, schema: c.schemaId, url: urls.site + c.path })),
          pricing: `${urls.gate}/api/v1/pricing`,
        },
        { 'cache-control': 'public, max-age=300' },
      ),
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/.well-known/register.json',
      summary:
        'The infrastructure register: every append-only log (origin, size, root, verifier key, checkpoint URL), every signing key, the service endpoints',
      auth: 'public',
      tag: 'system',
    },
    async () => {
      const logs = await listLogs(ctx.ledger.read);
      const { current, all } = ctx.keyring;
      return json(
        {
          ...doc('register'),
          logs: await Promise.all(logs.map((l) => describeLog(ctx, l.name))),
          signing_keys: all.map((k) => ({
            kid: k.kid,
            alg: 'EdDSA',
            crv: 'Ed25519',
            current: k.kid === current.kid,
            created_at: k.created_at,
            retired_at: k.retired_at ?? null,
          })),
          endpoints: {
            health: `${urls.gate}/health`,
            public_key: `${urls.gate}/crypto/public-key`,
            jwks: urls.site + JWKS_PATH,
            logs: `${urls.site}/api/v1/logs`,
            openapi: `${urls.site}/openapi.json`,
            mcp: `${urls.gate}/mcp`,
          },
        },
        { 'cache-control': 'no-cache' },
      );
    },
  );
}
