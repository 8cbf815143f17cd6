/**
 * Every catalog and machine-readable document of the companion site (SPEC 2.4,
 * 2.5, 4.1, 4.2, 8, 9), assembled from the content files under src/content/.
 * Astro prerenders them; the API imports the same builders (e.g. to overlay
 * the live fields of clearing and foundry) so no fact is written twice.
 *
 * A builder takes the site URL and the gate-service URL (both without a
 * trailing slash) and returns an object validated by its zod schema.
 */
import type { z } from 'zod';
import * as s from './schemas.ts';
import { SURFACE_PRESETS } from './surfaces.ts';
import { tollTable, tollUsd } from './tolls.ts';
import { RECEIPT_HEADER as RR1_RECEIPT_HEADER } from '../rr1/constants.ts';
import type { Urls } from '../urls.ts';
import clearJson from '../content/catalogs/clear.json' with { type: 'json' };
import napJson from '../content/catalogs/nap.json' with { type: 'json' };
import clearingJson from '../content/catalogs/clearing.json' with { type: 'json' };
import relayJson from '../content/catalogs/relay.json' with { type: 'json' };
import signalJson from '../content/catalogs/signal.json' with { type: 'json' };
import ornJson from '../content/catalogs/orn.json' with { type: 'json' };
import absenceJson from '../content/catalogs/absence.json' with { type: 'json' };
import pdtrJson from '../content/catalogs/pdtr.json' with { type: 'json' };
import requireReceiptJson from '../content/catalogs/require-receipt.json' with { type: 'json' };
import issuerPaysJson from '../content/catalogs/issuer-pays.json' with { type: 'json' };
import astlJson from '../content/catalogs/astl.json' with { type: 'json' };
import stackJson from '../content/catalogs/stack.json' with { type: 'json' };
import foundryJson from '../content/catalogs/foundry.json' with { type: 'json' };
import gamCreditsJson from '../content/catalogs/gam-credits.json' with { type: 'json' };
import scoreboardJson from '../content/catalogs/issuer-pays-scoreboard.json' with { type: 'json' };
import agentActionsJson from '../content/catalogs/agent-actions.json' with { type: 'json' };
import x402Json from '../content/catalogs/x402.json' with { type: 'json' };
import x402BazaarJson from '../content/catalogs/x402-bazaar.json' with { type: 'json' };

export type { Urls };

// ---------------------------------------------------------------- content, validated once

export const DATA = {
  clear: s.clearDataSchema.parse(clearJson),
  nap: s.napDataSchema.parse(napJson),
  clearing: s.clearingDataSchema.parse(clearingJson),
  relay: s.relayDataSchema.parse(relayJson),
  signal: s.signalDataSchema.parse(signalJson),
  orn: s.ornDataSchema.parse(ornJson),
  absence: s.absenceDataSchema.parse(absenceJson),
  pdtr: s.pdtrDataSchema.parse(pdtrJson),
  require_receipt: s.requireReceiptDataSchema.parse(requireReceiptJson),
  issuer_pays: s.issuerPaysDataSchema.parse(issuerPaysJson),
  astl: s.astlDataSchema.parse(astlJson),
  stack: s.stackDataSchema.parse(stackJson),
  foundry: s.foundryDataSchema.parse(foundryJson),
  gam_credits: s.gamCreditsDataSchema.parse(gamCreditsJson),
  scoreboard: s.scoreboardDataSchema.parse(scoreboardJson),
  agent_actions: s.agentActionsDataSchema.parse(agentActionsJson),
  x402: s.x402DataSchema.parse(x402Json),
  x402_bazaar: s.x402BazaarDataSchema.parse(x402BazaarJson),
};

/** Site path of a stack layer's landing page, from the stack catalog (the one place it is written). */
export function layerPath(id: string): string {
  const layer = DATA.stack.layers.find((l) => l.id === id);
  if (!layer) throw new Error(`no stack layer ${id}`);
  return layer.path;
}

/** The fields every catalog starts with, in SPEC 2.4's order. */
function head<D extends { schema: string; issuer: string; product: string; tagline: string }>(d: D, u: Urls, landingPath: string) {
  const { schema, issuer, product, tagline, ...rest } = d;
  return { schema, base_url: u.site, landing: u.site + landingPath, issuer, product, tagline, rest };
}

function assemble<S extends z.ZodType>(
  schema: S,
  d: { schema: string; issuer: string; product: string; tagline: string },
  u: Urls,
  landingPath: string,
  extra: Record<string, unknown> = {},
): z.infer<S> {
  const { rest, ...h } = head(d, u, landingPath);
  return schema.parse({ ...h, ...rest, ...extra });
}

// ---------------------------------------------------------------- builders

// Key order follows the schemas (zod emits a parsed object in its shape's order).
const clear = (u: Urls) => assemble(s.clearCatalogSchema, DATA.clear, u, layerPath('clear'), { tolls_usd: tollTable('base') });

const nap = (u: Urls) =>
  assemble(s.napCatalogSchema, DATA.nap, u, layerPath('nap'), {
    skus: DATA.nap.skus.map((k) => ({ ...k, toll_usd: tollUsd(k.sku) })),
  });

const clearing = (u: Urls) => {
  const skus = DATA.clearing.skus;
  const ready = skus.filter((k) => k.ready).length;
  return assemble(s.clearingCatalogSchema, DATA.clearing, u, layerPath('clearing'), {
    ready_count: ready,
    total_count: skus.length,
    all_ready: ready === skus.length,
    network_checkpoint_url: u.site + '/api/v1/clearing/network/latest.json',
    network_checkpoint: null,
  });
};

const stack = (u: Urls) =>
  assemble(s.stackCatalogSchema, DATA.stack, u, '/stack', {
    layers: DATA.stack.layers.map(({ embed_paths, ...l }) => ({
      id: l.id,
      name: l.name,
      order: l.order,
      role: l.role,
      path: l.path,
      url: u.site + l.path,
      api: l.api,
      catalog_url: u.site + l.api,
      unit: l.unit,
      complements: l.complements,
      color: l.color,
      ...(l.embed ? { embed: l.embed } : {}),
      ...(embed_paths ? { embed_urls: Object.fromEntries(Object.entries(embed_paths).map(([k, p]) => [k, u.site + p])) } : {}),
    })),
  });

const foundry = (u: Urls) =>
  assemble(s.foundryCatalogSchema, DATA.foundry, u, '/foundry', {
    layers: DATA.foundry.layers.map((l) => ({
      id: l.id,
      layer: l.layer,
      name: l.name,
      path: l.path,
      url: u.site + l.path,
      api: l.api,
      api_url: u.site + l.api,
      components: l.components,
      analog: l.analog,
    })),
    tolls_usd: tollTable('all'),
    recent_settlements: [],
  });

// The static build cannot know the running configuration: it lists no paid resource (x402_configured
// false). The running service serves these documents live (src/api/x402.ts).
const x402Resources = (_u: Urls): z.infer<typeof s.x402Schema>['resources'] => [];

/** One published catalog or document: its site path, its schema and how it is built. */
export interface CatalogEntry {
  key: string;
  path: string;
  schemaId: string;
  schema: z.ZodType;
  build(u: Urls): unknown;
}

function entry<S extends z.ZodType>(key: string, path: string, schemaId: string, schema: S, build: (u: Urls) => z.infer<S>): CatalogEntry {
  return { key, path, schemaId, schema, build };
}

/** Every catalog path of SPEC 4.2, in SPEC order. */
export const CATALOGS: readonly CatalogEntry[] = [
  entry('clear', '/api/v1/clear/catalog', 'svc-clear-catalog-v1', s.clearCatalogSchema, clear),
  entry('nap', '/api/v1/nap/catalog', 'svc-nap-exchange-v1', s.napCatalogSchema, nap),
  entry('clearing', '/api/v1/clearing/catalog', 'svc-clearing-window-v1', s.clearingCatalogSchema, clearing),
  entry('relay', '/api/v1/relay/catalog', 'svc-partner-relay-v1', s.relayCatalogSchema, (u) =>
    assemble(s.relayCatalogSchema, DATA.relay, u, layerPath('relay')),
  ),
  entry('signal', '/signal/signal-catalog.json', 'fusegate-signal-catalog-v1', s.signalCatalogSchema, (u) =>
    assemble(s.signalCatalogSchema, DATA.signal, u, layerPath('signal'), {
      trigger_kinds: DATA.foundry.trigger_templates.map((t) => t.template_id),
    }),
  ),
  entry('orn', '/api/v1/orn/catalog', 'svc-orn-v1', s.ornCatalogSchema, (u) => assemble(s.ornCatalogSchema, DATA.orn, u, layerPath('orn'))),
  entry('absence', '/api/v1/absence/catalog', 'svc-absence-exchange-v1', s.absenceCatalogSchema, (u) =>
    assemble(s.absenceCatalogSchema, DATA.absence, u, layerPath('absence'), { surface_presets: SURFACE_PRESETS }),
  ),
  entry('pdtr', '/api/v1/pdtr/catalog', 'svc-pdtr-v1', s.pdtrCatalogSchema, (u) =>
    assemble(s.pdtrCatalogSchema, DATA.pdtr, u, layerPath('pdtr'), {
      bind_toll_usd: tollUsd('pdtr_bind'),
      tolls_note: `toll_usd is the PDTR layer's catalog toll; a bind (POST /api/v1/bind-payment) is metered at pdtr_bind, ${tollUsd('pdtr_bind')} USD per bind.`,
    }),
  ),
  entry('require_receipt', '/api/v1/require-receipt/catalog', 'svc-require-receipt-v1', s.requireReceiptCatalogSchema, (u) =>
    assemble(s.requireReceiptCatalogSchema, DATA.require_receipt, u, layerPath('require_receipt')),
  ),
  entry('agent_actions', '/.well-known/agent-actions.json', 'fusegate-agent-actions-v1', s.agentActionsSchema, (u) => {
    const rr = DATA.require_receipt;
    const { actions, ...aa } = DATA.agent_actions;
    return assemble(s.agentActionsSchema, aa, u, layerPath('require_receipt'), {
      standard: rr.standard,
      rule: rr.rule,
      header: rr.header,
      status_code: rr.status_code,
      conformance_requires: rr.conformance_requires,
      catalog: u.site + '/api/v1/require-receipt/catalog',
      gate: u.gate,
      actions: actions.map((a) => ({
        act: a.act,
        method: a.method,
        url: u.site + a.path,
        irreversible: true,
        receipt_header: RR1_RECEIPT_HEADER,
        obtain_receipt: u.site + a.obtain_path,
      })),
    });
  }),
  entry('issuer_pays', '/api/v1/issuer-pays/catalog', 'svc-issuer-pays-commercial-v1', s.issuerPaysCatalogSchema, (u) =>
    assemble(s.issuerPaysCatalogSchema, DATA.issuer_pays, u, layerPath('issuer_pays')),
  ),
  entry('scoreboard', '/standards/issuer-pays-scoreboard.json', 'fusegate-issuer-pays-scoreboard-v1', s.scoreboardSchema, (u) =>
    assemble(s.scoreboardSchema, DATA.scoreboard, u, layerPath('issuer_pays'), {
      rankings_count: DATA.issuer_pays.rankings_count,
      rankings: DATA.issuer_pays.rankings,
      catalog: u.site + '/api/v1/issuer-pays/catalog',
    }),
  ),
  entry('astl', '/api/v1/astl/catalog', 'svc-astl-v1', s.astlCatalogSchema, (u) =>
    assemble(s.astlCatalogSchema, DATA.astl, u, layerPath('astl'), { publish_toll_usd: tollUsd('astl_publish') }),
  ),
  entry('stack', '/api/v1/stack/catalog', 'svc-stack-v2', s.stackCatalogSchema, stack),
  entry('foundry', '/api/v1/foundry/catalog.json', 'svc-actuation-foundry-v1', s.foundryCatalogSchema, foundry),
  entry('gam_credits', '/api/v1/gam/credits/catalog', 'fusegate-gam-credits-v1', s.gamCreditsCatalogSchema, (u) =>
    assemble(s.gamCreditsCatalogSchema, DATA.gam_credits, u, layerPath('clearing'), {
      credits: DATA.clearing.skus.map((k) => ({
        sku: k.id,
        interval: k.interval,
        price_usd: k.price_usd,
        gam_credits_usd: k.gam_credits_usd,
      })),
      clearing_catalog: u.site + '/api/v1/clearing/catalog',
    }),
  ),
  entry('x402', '/.well-known/x402', 'fusegate-x402-v1', s.x402Schema, (u) =>
    assemble(s.x402Schema, DATA.x402, u, '/uplink', { resources: x402Resources(u) }),
  ),
  entry('x402_bazaar', '/.well-known/x402-bazaar.json', 'fusegate-x402-bazaar-v1', s.x402BazaarSchema, (u) =>
    assemble(s.x402BazaarSchema, DATA.x402_bazaar, u, '/uplink', { listings: x402Resources(u) }),
  ),
];

export function catalogByKey(key: string): CatalogEntry {
  const c = CATALOGS.find((e) => e.key === key);
  if (!c) throw new Error(`no catalog ${key}`);
  return c;
}
