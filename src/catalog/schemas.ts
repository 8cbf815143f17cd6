/**
 * Zod schemas of every catalog and document the companion site publishes
 * (SPEC 2.4, 2.5, 4.1, 4.2, 8, 9). Plain TypeScript importing `z` from 'zod',
 * so the API (outside Astro), `src/content.config.ts` and the JSON Schema
 * pages share them.
 *
 * Two shapes per catalog: the *data* kept in `src/content/` (facts only: no
 * absolute URL, no number that another file already holds) and the emitted
 * *catalog* (data + `base_url`, absolute `landing`, derived tables).
 */
import { z } from 'zod';
import { EMAIL_ADDRESS } from '../urls.ts';

const usd = z.number().nonnegative();
const sitePath = z.string().regex(/^\/[^\s]*$/, 'a site path starting with /');
const slug = z.string().regex(/^[a-z0-9_]+$/);
const emailAddress = z.string().regex(EMAIL_ADDRESS, 'an email address such as sales@fusegate.example');
const text = z.string().min(1);
const url = z.url();
/** "POST /api/v1/execute-gate" or a bare path. */
const endpoint = z.string().regex(/^(?:(?:GET|POST) )?\/\S*(?: .*)?$/);

/** Fields every catalog carries (SPEC 2.4), as kept in content. */
const head = { issuer: text, product: text, tagline: text };
/** ... and as emitted. */
const emittedHead = { base_url: url, landing: url, ...head };

function catalog<Id extends string, S extends z.ZodRawShape>(id: Id, body: S) {
  return z.strictObject({ schema: z.literal(id), ...emittedHead, ...body });
}

// ---------------------------------------------------------------- tolls (SPEC 8)

export const tollSchema = z.strictObject({
  sku: slug,
  usd,
  /** true: on the base Clear catalog's list; false: a foundry addition. */
  base: z.boolean(),
});
export type Toll = z.infer<typeof tollSchema>;
export const tollsSchema = z.array(tollSchema);
/** `tolls_usd`: SKU -> USD. */
const tollTable = z.record(slug, usd);

// ---------------------------------------------------------------- clear

export const bpsTierSchema = z.strictObject({
  id: slug,
  bps: z.number().positive(),
  cleared_usd_monthly_up_to: z.number().int().positive().nullable(),
  label: text,
});
export const verticalSchema = z.strictObject({ ccb: text, demo: sitePath, embed: sitePath, endpoint });
const clearBody = {
  model: z.literal('toll_per_governed_act + bps_on_cleared_exposure'),
  bps_tiers: z.array(bpsTierSchema).min(1),
  tolls_usd: tollTable,
  nap_skus: z.array(slug),
  apis: z.strictObject({ catalog: sitePath, exposure: sitePath, network: sitePath, usage: sitePath }),
  embeds: z.array(slug),
  verticals: z.record(slug, verticalSchema),
  scale_example: z.strictObject({ illustrative: z.literal(true), note: text }),
};
export const clearCatalogSchema = catalog('svc-clear-catalog-v1', clearBody);
export const clearDataSchema = clearCatalogSchema.omit({ base_url: true, landing: true, tolls_usd: true });

// ---------------------------------------------------------------- nap

export const napSkuSchema = z.strictObject({
  sku: slug,
  label: text,
  ccb: text,
  endpoint,
  nap: z.boolean(),
  toll_usd: usd,
  why_premium: text,
});
const napBody = {
  nap_rule: text,
  skus: z.array(napSkuSchema).min(1),
  scale_api: sitePath,
  usage_api: sitePath,
  catalog_api: sitePath,
  scale_example: z.strictObject({ illustrative: z.literal(true), volume_toll_usd: usd, note: text }),
};
export const napCatalogSchema = catalog('svc-nap-exchange-v1', napBody);
export const napDataSchema = napCatalogSchema
  .omit({ base_url: true, landing: true, skus: true })
  .extend({ skus: z.array(napSkuSchema.omit({ toll_usd: true })).min(1) });

// ---------------------------------------------------------------- clearing

export const clearingSkuSchema = z.strictObject({
  id: slug,
  label: text,
  metadata_sku: slug,
  interval: z.enum(['annual', 'quarterly']),
  weeks: z.number().int().positive(),
  price_usd: usd,
  gam_credits_usd: usd,
  buyer: text,
  tagline: text,
  ready: z.boolean(),
  self_serve: z.boolean(),
});
const clearingBody = {
  window: text,
  skus: z.array(clearingSkuSchema).min(1),
  includes: z.array(text),
  ready_count: z.number().int().nonnegative(),
  total_count: z.number().int().nonnegative(),
  all_ready: z.boolean(),
  network_checkpoint_url: url,
  /** Live: the latest checkpoint JSON; null in the static build. */
  network_checkpoint: z.record(z.string(), z.unknown()).nullable(),
};
export const clearingCatalogSchema = catalog('svc-clearing-window-v1', clearingBody);
export const clearingDataSchema = clearingCatalogSchema.omit({
  base_url: true,
  landing: true,
  ready_count: true,
  total_count: true,
  all_ready: true,
  network_checkpoint_url: true,
  network_checkpoint: true,
});

// ---------------------------------------------------------------- relay

const band = z.strictObject({ min: usd, max: usd });
const wholesaleItem = z.strictObject({ usd, deposit_usd: usd.optional() });
const relayBody = {
  enroll_api: sitePath,
  network_api: sitePath,
  status_pattern: text,
  track_url_pattern: text,
  track_targets: z.array(z.string().regex(/^[a-z0-9-]+$/)),
  retail_band_usd: z.strictObject({ monitor: band, sprint: band }),
  wholesale_usd: z.strictObject({
    monitor_monthly: wholesaleItem,
    sprint: wholesaleItem,
    exhibit_d: wholesaleItem,
    '5pack': wholesaleItem,
    twin: wholesaleItem,
  }),
  rev_share: z.strictObject({
    rule: text,
    partner_retail_spread_pct: z.number(),
    referred_tenant_toll_bps: z.strictObject({ bps: z.number(), status: z.literal('future') }),
  }),
};
export const relayCatalogSchema = catalog('svc-partner-relay-v1', relayBody);
export const relayDataSchema = relayCatalogSchema.omit({ base_url: true, landing: true });

// ---------------------------------------------------------------- orn, absence, astl, pdtr, require_receipt, issuer_pays, signal

const units = z.record(slug, text);
const apiPaths = z.record(slug, sitePath);

export const ornCatalogSchema = catalog('svc-orn-v1', {
  units,
  primitives: z.array(text),
  apis: apiPaths,
  sharp_toll_usd: usd,
  ga_declare_toll_usd: usd,
  scale_example: z.strictObject({ illustrative: z.literal(true), note: text }),
});
export const ornDataSchema = ornCatalogSchema.omit({ base_url: true, landing: true });

export const surfacePresetsSchema = z.record(slug, z.array(slug).min(1));
export const absenceCatalogSchema = catalog('svc-absence-exchange-v1', {
  units,
  primitives: z.array(text),
  apis: apiPaths,
  witness_toll_usd: usd,
  surface_presets: surfacePresetsSchema,
  scale_example: z.strictObject({ illustrative: z.literal(true), note: text }),
});
export const absenceDataSchema = absenceCatalogSchema.omit({ base_url: true, landing: true, surface_presets: true });

export const astlCatalogSchema = catalog('svc-astl-v1', {
  description: text,
  feed: sitePath,
  apis: apiPaths,
  composes_with: z.array(slug),
  /** = tolls_usd.astl_publish (SPEC 8), derived. */
  publish_toll_usd: usd,
  scale_example: z.strictObject({ illustrative: z.literal(true), note: text }),
});
export const astlDataSchema = astlCatalogSchema.omit({ base_url: true, landing: true, publish_toll_usd: true });

export const pdtrCatalogSchema = catalog('svc-pdtr-v1', {
  description: text,
  binds: z.strictObject({ from: z.literal('payment_hash'), to: z.literal('action_ref'), payment_protocol: z.literal('x402') }),
  apis: apiPaths,
  rails: z.array(z.strictObject({ id: slug, label: text, relation: text })),
  toll_usd: usd,
  /** Ours: what a bind is metered at (pdtr_bind, SPEC 8), and which toll is which. */
  bind_toll_usd: usd,
  tolls_note: text,
  scale_example: z.strictObject({ illustrative: z.literal(true), note: text }),
});
export const pdtrDataSchema = pdtrCatalogSchema.omit({ base_url: true, landing: true, bind_toll_usd: true, tolls_note: true });

export const requireReceiptCatalogSchema = catalog('svc-require-receipt-v1', {
  standard: z.literal('RR-1'),
  rule: text,
  header: z.literal('Receipt-Required'),
  status_code: z.literal(428),
  conformance_requires: z.array(text),
  badge: text,
  manifest: sitePath,
  apis: apiPaths,
  challenge_toll_usd: usd,
  scale_example: z.strictObject({ illustrative: z.literal(true), note: text }),
});
export const requireReceiptDataSchema = requireReceiptCatalogSchema.omit({ base_url: true, landing: true });

const ranking = z.strictObject({ vendor: slug, grade: text });
export const issuerPaysCatalogSchema = catalog('svc-issuer-pays-commercial-v1', {
  description: text,
  rankings_count: z.number().int().nonnegative(),
  rankings: z.array(ranking),
  scoreboard: sitePath,
  fees_usd: z.strictObject({
    carrier_data_seat_annual_usd: usd,
    independence_audit_sprint_usd: usd,
    score_refresh_rush_usd: usd,
    vendor_listing_annual_usd: usd,
  }),
  apis: apiPaths,
});
export const issuerPaysDataSchema = issuerPaysCatalogSchema.omit({ base_url: true, landing: true });

// Catalogs SPEC gives no schema id: ids of ours, prefixed `fusegate-`.
export const signalCatalogSchema = catalog('fusegate-signal-catalog-v1', {
  description: text,
  pricing_usd: z.strictObject({ platform_annual_usd: usd, mandate_overage_usd: usd }),
  trigger_kinds: z.array(slug),
  apis: apiPaths,
});
export const signalDataSchema = signalCatalogSchema.omit({ base_url: true, landing: true, trigger_kinds: true });

export const gamCreditsCatalogSchema = catalog('fusegate-gam-credits-v1', {
  description: text,
  credits: z.array(z.strictObject({ sku: slug, interval: text, price_usd: usd, gam_credits_usd: usd })),
  clearing_catalog: url,
});
export const gamCreditsDataSchema = gamCreditsCatalogSchema.omit({ base_url: true, landing: true, credits: true, clearing_catalog: true });

export const scoreboardSchema = catalog('fusegate-issuer-pays-scoreboard-v1', {
  rankings_count: z.number().int().nonnegative(),
  rankings: z.array(ranking),
  note: text,
  catalog: url,
});
export const scoreboardDataSchema = scoreboardSchema.omit({
  base_url: true,
  landing: true,
  rankings_count: true,
  rankings: true,
  catalog: true,
});

export const agentActionsSchema = catalog('fusegate-agent-actions-v1', {
  standard: z.literal('RR-1'),
  rule: text,
  header: z.literal('Receipt-Required'),
  status_code: z.literal(428),
  conformance_requires: z.array(text),
  catalog: url,
  /** The gate whose receipts are accepted (their `iss`). */
  gate: url,
  /** The irreversible acts of this service: each answers 428 without a receipt (src/rr1). */
  actions: z
    .array(
      z.strictObject({
        act: slug,
        method: z.enum(['POST', 'PUT', 'PATCH', 'DELETE']),
        url,
        irreversible: z.literal(true),
        receipt_header: text,
        obtain_receipt: url,
      }),
    )
    .min(1),
});
const agentActionData = z.strictObject({
  act: slug,
  method: z.enum(['POST', 'PUT', 'PATCH', 'DELETE']),
  path: sitePath,
  obtain_path: sitePath,
});
export const agentActionsDataSchema = agentActionsSchema
  .pick({ schema: true, issuer: true, product: true, tagline: true })
  .extend({ actions: z.array(agentActionData).min(1) });

/** The listed price (null: computed from each request by a rule); `amount` in atomic units of the asset. */
const x402Price = z.strictObject({
  sku: slug,
  usd: z.string().nullable(),
  amount: z.string().nullable(),
  asset: z.string(),
  network: z.string(),
  pay_to: z.string(),
  scheme: z.literal('exact'),
});
const x402Resource = z.strictObject({
  resource: url,
  method: z.enum(['POST', 'GET']),
  rails: z.array(z.enum(['x402', 'rtp'])),
  description: text,
  price: x402Price.optional(),
  /** per_operation: every request costs the listed price; per_request: each 402 states the request's price (its `lines` as decided). */
  priced: z.enum(['per_operation', 'per_request']).optional(),
  lines: z.array(z.strictObject({ sku: slug, usd: z.string().nullable(), nap: z.boolean() })).optional(),
  when: text.optional(),
  extension: z.literal(true).optional(),
});
export const x402Schema = catalog('fusegate-x402-v1', {
  x402_configured: z.boolean(),
  note: text,
  resources: z.array(x402Resource),
});
export const x402DataSchema = x402Schema.omit({ base_url: true, landing: true, resources: true });
export const x402BazaarSchema = catalog('fusegate-x402-bazaar-v1', {
  x402_configured: z.boolean(),
  note: text,
  listings: z.array(x402Resource),
});
export const x402BazaarDataSchema = x402BazaarSchema.omit({ base_url: true, landing: true, listings: true });

// ---------------------------------------------------------------- stack

export const stackLayerSchema = z.strictObject({
  id: slug,
  name: text,
  order: z.number().int().min(1),
  role: text,
  path: sitePath,
  url,
  api: sitePath,
  catalog_url: url,
  unit: text,
  complements: z.array(slug),
  color: z.string().regex(/^#[0-9a-f]{6}$/),
  embed: z.array(slug).optional(),
  embed_urls: z.record(slug, url).optional(),
});
const attachStep = z.strictObject({ step: z.number().int().min(1), layer: slug, outcome: text });
export const stackCatalogSchema = catalog('svc-stack-v2', {
  chokepoint: z.literal('Capital Commitment Boundary'),
  layers: z.array(stackLayerSchema).length(11),
  attach_flow: z.array(attachStep).length(11),
  revenue_formula: text,
});
const stackLayerDataSchema = stackLayerSchema
  .omit({ url: true, catalog_url: true, embed_urls: true })
  .extend({ embed_paths: z.record(slug, sitePath).optional() });
export const stackDataSchema = stackCatalogSchema
  .omit({ base_url: true, landing: true, layers: true })
  .extend({ layers: z.array(stackLayerDataSchema).length(11) });

// ---------------------------------------------------------------- foundry

export const foundryLayerSchema = z.strictObject({
  id: slug,
  layer: z.number().int().min(0).max(9),
  name: text,
  path: sitePath,
  url,
  api: sitePath,
  api_url: url,
  components: z.array(text).min(1),
  analog: text,
});
export const oracleSourceSchema = z.strictObject({
  source_id: slug,
  label: text,
  weight: z.number().positive(),
  latency_ms: z.number().int().positive(),
});
export const triggerTemplateSchema = z.strictObject({
  template_id: slug,
  label: text,
  description: text,
  default_action: slug,
  obligation_surface: z.strictObject({
    callable_actions: z.array(slug).min(1),
    exposure_ceiling_usd: z.number().int().positive(),
    fee_bps: z.number().positive(),
    regulatory_hooks: z.array(text),
  }),
});
export const conformityCategorySchema = z.strictObject({
  category_id: slug,
  label: text,
  article_12: text,
  risk_controls: z.array(text).min(1),
});
export const depositoryEventSchema = z.strictObject({ event_type: slug, meaning: text });
export const foundryCatalogSchema = catalog('svc-actuation-foundry-v1', {
  apis: z.strictObject({
    catalog: sitePath,
    custody_attestation: sitePath,
    projection: sitePath,
    oracle_aggregate: sitePath,
    pipeline_run: sitePath,
    trigger_fire: sitePath,
  }),
  layers: z.array(foundryLayerSchema).length(10),
  attach_flow: z.array(attachStep).length(9),
  tolls_usd: tollTable,
  oracle: z.strictObject({
    aggregation: z.literal('trimmed_mean'),
    guard: z.literal('DISPUTED'),
    sources: z.array(oracleSourceSchema).min(1),
  }),
  trigger_templates: z.array(triggerTemplateSchema).min(1),
  trigger_states: z.tuple([z.literal('ARMED'), z.literal('FIRED')]),
  depository_event_types: z.array(depositoryEventSchema).min(1),
  conformity_categories: z.array(conformityCategorySchema).min(1),
  scale_example: z.strictObject({ illustrative: z.literal(true), note: text }),
  /** Live: recent trigger settlements; empty in the static build. */
  recent_settlements: z.array(z.record(z.string(), z.unknown())),
});
export const foundryDataSchema = foundryCatalogSchema
  .omit({ base_url: true, landing: true, layers: true, tolls_usd: true, recent_settlements: true })
  .extend({ layers: z.array(foundryLayerSchema.omit({ url: true, api_url: true })).length(10) });

// ---------------------------------------------------------------- gate discovery documents and pages (SPEC 4.1)

export const gateEndpointSchema = z.strictObject({
  method: z.enum(['GET', 'POST']),
  path: z.string().regex(/^\/\S*$/),
  auth: z.enum(['key', 'none', 'key or x402']),
  purpose: text,
  /** The operation's one name (its OpenAPI operationId, client name and MCP tool); absent in SPEC's own rows (src/content/spec-gate-endpoints.json). */
  operation: z
    .string()
    .regex(/^[a-z0-9_]+$/)
    .optional(),
  /** Ours, not a row of SPEC 4.1 (SPEC shows no way to do this). */
  extension: z.boolean().optional(),
});
export type GateEndpoint = z.infer<typeof gateEndpointSchema>;
export const gateEndpointsSchema = z.array(gateEndpointSchema).min(1);

/** One /.well-known document of the gate (content form). `links` are gate-service paths. */
export const discoveryDataSchema = z.strictObject({
  title: text,
  summary: text,
  rules: z.array(text).optional(),
  facts: z.record(z.string(), z.unknown()).optional(),
  links: z.record(slug, z.string().regex(/^\/\S*$/)),
  page: sitePath.optional(),
});
export const discoveryDocsSchema = z.record(z.string().regex(/^[a-z0-9-]+$/), discoveryDataSchema);
/** A published discovery document (the common shape; gate.json adds `endpoints`). */
export const discoveryDocumentSchema = z.looseObject({
  name: text,
  title: text,
  summary: text,
  base_url: url,
  site_url: url,
  rules: z.array(text).optional(),
  links: z.record(slug, url),
});

export const gatePageSchema = z.strictObject({
  title: text,
  summary: text,
  points: z.array(text).min(1),
  amount_usd: usd.optional(),
  amount_label: text.optional(),
  documents: z.array(z.string().regex(/^\/\S*$/)),
});
export const gatePagesSchema = z.record(z.string().regex(/^[a-z-]+$/), gatePageSchema);

export const diligenceOfferSchema = z.strictObject({
  name: z.literal('diligence-offer'),
  title: text,
  price_usd: usd,
  bind_room_deposit_usd: usd,
  /** How both are bought (our extension): by writing to `contact` (docs/pricing.md, "Sold by contact"). */
  sold_by: z.literal('contact'),
  contact: emailAddress,
  summary: text,
  page: url,
  one_pager: url,
  base_url: url,
  site_url: url,
});
