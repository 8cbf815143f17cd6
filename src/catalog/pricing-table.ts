/**
 * The complete price list, in one module: every toll, fee, tier and SKU the
 * service charges or lists, read from the same content files the catalogs are
 * built from (src/content), so no price is written twice. The pricing page
 * renders it (src/pages/pricing.astro); GET /api/v1/pricing serves it with the
 * running service's operator floor.
 *
 * Money is a decimal string with two decimals (the one formatter,
 * catalog/money.ts formatUsd); bps are numbers.
 */
import { formatUsd, usdToMicros } from './money.ts';
import { OPERATOR_BPS, OPERATOR_PER_HOP_SKU } from './operator-prices.ts';
import { BUILD_SALES_CONTACT } from '../urls.ts';
import { DATA } from './catalogs.ts';
import { GATE_PAGES } from './discovery.ts';
import { TOLLS, tollUsd } from './tolls.ts';

export interface PriceRow {
  /** A stable id: the SKU, tier, template or fee name. */
  id: string;
  label: string;
  /** Decimal USD with two decimals, when the row is an amount. */
  amount_usd?: string;
  /** Basis points, when the row is a rate. */
  bps?: number;
  /** What one amount is for: "per act", "per year", "per fire, on the enabled exposure"... */
  unit: string;
  /** Where it is charged (METHOD path), when it is charged by this service. */
  endpoint?: string;
  /**
   * Not charged by an operation of ours: sold by contact (whom to write to, and why it is not an
   * API charge), or a price partners charge their own customers.
   */
  sold_by?: { by: 'contact'; contact: string; why: string } | { by: 'partner'; why: string };
  note?: string;
}

export interface PriceSection {
  id: string;
  title: string;
  note?: string;
  rows: PriceRow[];
}

export interface PricingTable {
  schema: 'fusegate-pricing-v1';
  currency: 'USD';
  sections: PriceSection[];
}

const usd = (n: number | string) => formatUsd(usdToMicros(n));

/** Which endpoint charges a per-act toll (the ones this service meters). */
const TOLL_ENDPOINTS: Record<string, string> = {
  execute_gate: 'POST /v1/fuse/hop, POST /api/v1/execute-gate (PERMIT), GO of POST /v1/prefinality/evaluate',
  hold: 'refusals: DENY, SILENCE, BLOCK, HOLD, NO_GO, HALT (a refused POST /api/v1/clear/before too, whatever its tier)',
  seal: 'POST /v1/act (sealed act)',
  classify: 'POST /v1/classify',
  pdtr_bind: 'POST /api/v1/bind-payment',
  astl_publish: 'POST /api/v1/astl/publish',
  trigger_publish: 'POST /signal/trigger/publish',
  bps_fire: 'POST /api/v1/foundry/trigger/fire',
  oracle_aggregate: 'POST /api/v1/oracle/aggregate',
  conformity_pack: 'POST /api/v1/conformity/generate',
  dtcc_attest: 'POST /api/v1/depository/attest',
  foundry_pipeline: 'POST /api/v1/foundry/pipeline/run',
  inference_seal: 'POST /api/v1/inference/chat/completions',
  ccr: 'POST /tcb/counterfactual-replay',
  spoliation_seal: 'POST /api/v1/spoliation-seal',
  restraint: 'POST /api/v1/restraint',
  restraint_call: 'POST /api/v1/restraint (legacy alias, metered as restraint)',
  verify_attestation: 'POST /v1/prefinality/rtp/gate (pass)',
  heartbeat: 'POST /v1/fuse/heartbeat',
  verify_pull: 'POST /v1/receipts/verify-pull',
  panic_receipt: 'POST /v1/fuses/{fuse_id}/panic',
  matter_spoliation: 'POST /api/v1/spoliation-seal/matter',
  parametric_run: 'POST /api/v1/foundry/parametric/run',
  clear_before_act: 'POST /api/v1/clear/before (tier act, PERMIT)',
  clear_before_wire: 'POST /api/v1/clear/before (tier wire, PERMIT)',
  clear_before_contract: 'POST /api/v1/clear/before (tier contract, PERMIT)',
};

/** What each per-act toll is for, in a buyer's words (the SKU stays beside it as the id). */
export const TOLL_LABELS: Record<string, string> = {
  astl_publish: 'Publishing an attempt-surface manifest',
  bps_fire: 'A trigger fire (plus its settlement fee)',
  ccr: 'A counterfactual replay of a refused act',
  classify: 'Classifying an act',
  clear_before_act: 'Clearance before an act',
  clear_before_contract: 'Clearance before a contract',
  clear_before_wire: 'Clearance before a wire transfer',
  conformity_pack: 'A conformity evidence pack',
  dtcc_attest: 'A depository parity attestation',
  execute_gate: 'A permitted hop (the agent may act)',
  foundry_pipeline: 'A foundry pipeline run',
  heartbeat: 'A liveness heartbeat',
  hold: 'A refused hop (deny, block, hold)',
  inference_seal: 'Sealing one model call',
  matter_spoliation: 'A legal-matter spoliation seal',
  oracle_aggregate: 'Aggregating oracle readings',
  panic_receipt: 'A panic receipt',
  parametric_run: 'A parametric cover run',
  pdtr_bind: 'Binding a payment to the act it paid for',
  restraint: 'A recorded restraint (an act not taken)',
  restraint_call: 'A recorded restraint (older alias)',
  seal: 'Sealing a welded act',
  spoliation_seal: 'A spoliation seal',
  trigger_publish: 'Publishing a trigger',
  verify_attestation: 'Verifying an attestation',
  verify_pull: 'Pulling a verification',
};

/** An id of the catalogs in words: `exhibit_d` -> "Exhibit D", `monitor_monthly` -> "Monitor monthly", `5pack` -> "5-pack". */
export function idWords(id: string): string {
  const words = id
    .replace(/^(\d+)([a-z])/, '$1-$2')
    .split('_')
    .map((w) => (w.length === 1 ? w.toUpperCase() : w));
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * What is sold by contact rather than charged by an operation, and why: each is
 * work people do for a named buyer, or a contract or deposit agreed with one
 * (docs/pricing.md, "Sold by contact"). A careful payment service does not take
 * these as an API toll: the buyer would be charged before anything is scoped
 * or delivered, and a deposit is money held against an engagement, not spent.
 */
const SOLD_BY_CONTACT_WHY = {
  diligence: 'A diligence engagement: reviewed with you by people, scoped and invoiced to a named buyer, not an API call.',
  bind_room_deposit: 'A deposit held against a bind-room pack engagement and set against its invoice: money held, not a toll spent.',
  relay_wholesale:
    'Sold to relay partners under a partner agreement (the partner keeps retail minus wholesale) and invoiced to them; deposits are held against their orders.',
  signal_platform: 'An annual platform contract; the mandates past those it includes are charged through the API (POST /signal/mandates).',
  issuer_pays_service:
    'Work our people do for a named carrier or vendor (a data seat licence, an audit, a rushed re-scoring), agreed and invoiced, not an API charge.',
} as const;

const byContact = (contact: string, why: keyof typeof SOLD_BY_CONTACT_WHY) => ({
  sold_by: { by: 'contact' as const, contact, why: SOLD_BY_CONTACT_WHY[why] },
});

/** The issuer-pays fees: the annual vendor listing is an operation of ours; the others are services sold by contact. */
const ISSUER_PAYS_ENDPOINTS: Record<string, string> = { vendor_listing_annual_usd: 'POST /api/v1/issuer-pays/listings' };

/** The gate pages that carry a price (SPEC 4.1: the bind-room pack deposit and the diligence price), by the row that lists it. */
export const GATE_PAGE_PRICE_ROWS: Record<string, string> = { diligence: 'diligence', 'bind-room': 'bind_room_deposit' };

const TOLL_NOTES: Record<string, string> = {
  pdtr_bind:
    "What a PDTR bind charges (SPEC 8). The PDTR catalog lists toll_usd 0.10 as the layer's catalog toll; a bind is metered at pdtr_bind 0.15.",
};

/**
 * The price list. `operatorFloorUsd` is the running service's OPERATOR_FLOOR_USD (undefined: show it
 * as a setting); `salesContact` its SALES_CONTACT (the build names a placeholder the server replaces).
 */
export function pricingTable(opts: { operatorFloorUsd?: string; salesContact?: string } = {}): PricingTable {
  const tiers = DATA.clear.bps_tiers;
  const contact = opts.salesContact ?? BUILD_SALES_CONTACT;
  return {
    schema: 'fusegate-pricing-v1',
    currency: 'USD',
    sections: [
      {
        id: 'bps',
        title: 'Basis-point tiers on cleared exposure',
        note: "Graduated: each tier's bps applies to the part of the month's cleared exposure (execute-gate PERMITs and pre-finality GOs in USD or USDC) inside that tier, so more exposure never costs less. Fees are rounded half up to the cent.",
        rows: tiers.map((t, i) => ({
          id: t.id,
          label: t.label,
          bps: t.bps,
          unit:
            t.cleared_usd_monthly_up_to === null
              ? `on monthly cleared USD above ${usd(tiers[i - 1]?.cleared_usd_monthly_up_to ?? 0)}`
              : `on monthly cleared USD from ${usd(tiers[i - 1]?.cleared_usd_monthly_up_to ?? 0)} up to ${usd(t.cleared_usd_monthly_up_to)}`,
        })),
      },
      {
        id: 'tolls',
        title: 'Per-act tolls',
        note: 'The base Clear catalog lists the tolls marked (Clear); the foundry catalog extends the list (Foundry).',
        rows: TOLLS.map((t) => ({
          id: t.sku,
          label: `${TOLL_LABELS[t.sku] ?? idWords(t.sku)} (${t.base ? 'Clear' : 'Foundry'})`,
          amount_usd: usd(t.usd),
          unit: 'per act',
          ...(TOLL_ENDPOINTS[t.sku] ? { endpoint: TOLL_ENDPOINTS[t.sku] } : {}),
          ...(TOLL_NOTES[t.sku] ? { note: TOLL_NOTES[t.sku] } : {}),
        })),
      },
      {
        id: 'settlement',
        title: 'Settlement fees (trigger templates)',
        note: "A fire charges bps_fire plus the template's fee_bps on the enabled exposure (at most the exposure ceiling). A caller cannot set its own fee_bps; a template without one would fall back to the Clear tiers.",
        rows: DATA.foundry.trigger_templates.map((t) => ({
          id: t.template_id,
          label: t.label,
          bps: t.obligation_surface.fee_bps,
          unit: `per fire, on the enabled exposure (ceiling ${usd(t.obligation_surface.exposure_ceiling_usd)})`,
          endpoint: 'POST /api/v1/foundry/trigger/fire',
        })),
      },
      {
        id: 'nap',
        title: 'Negative-act premium (NAP) SKUs',
        note: DATA.nap.nap_rule,
        rows: DATA.nap.skus.map((k) => ({
          id: k.sku,
          label: k.label,
          amount_usd: usd(tollUsd(k.sku)),
          unit: 'per refusal',
          endpoint: k.endpoint,
        })),
      },
      {
        id: 'layers',
        title: 'Layer fees',
        rows: [
          {
            id: 'orn_sharp',
            label: 'ORN SHARP slice',
            amount_usd: usd(DATA.orn.sharp_toll_usd),
            unit: 'per agent in the graph per orchestration event',
            endpoint: 'POST /api/v1/orn/sharp',
          },
          {
            id: 'orn_ga_declare',
            label: 'ORN General Average declare',
            amount_usd: usd(DATA.orn.ga_declare_toll_usd),
            unit: 'per declaration (flat, with the pro rata allocation export)',
            endpoint: 'POST /api/v1/orn/declare',
          },
          {
            id: 'absence_witness',
            label: 'Absence non-membership witness',
            amount_usd: usd(DATA.absence.witness_toll_usd),
            unit: 'per witness',
            endpoint: 'POST /api/v1/absence/witness',
          },
          {
            id: 'rr1_challenge',
            label: 'RR-1 challenge (HTTP 428)',
            amount_usd: usd(DATA.require_receipt.challenge_toll_usd),
            unit: 'per challenge to a keyed caller',
            endpoint: 'POST /api/v1/require-receipt/demo/pay',
          },
          {
            id: 'astl_publish',
            label: 'ASTL manifest publish',
            amount_usd: usd(tollUsd('astl_publish')),
            unit: 'per publish',
            endpoint: 'POST /api/v1/astl/publish',
          },
          {
            id: 'pdtr_catalog_toll',
            label: 'PDTR listed layer toll',
            amount_usd: usd(DATA.pdtr.toll_usd),
            unit: 'as the PDTR catalog states it',
            note: 'Not what a bind is charged: a bind is metered at pdtr_bind 0.15 (per-act tolls).',
          },
          {
            id: 'pdtr_bind',
            label: 'PDTR bind (payment_hash to action_ref)',
            amount_usd: usd(tollUsd('pdtr_bind')),
            unit: 'per bind',
            endpoint: 'POST /api/v1/bind-payment',
          },
          {
            id: 'signal_platform',
            label: 'Signal platform',
            amount_usd: usd(DATA.signal.pricing_usd.platform_annual_usd),
            unit: 'per year',
            ...byContact(contact, 'signal_platform'),
          },
          {
            id: 'signal_mandate_overage',
            label: 'Signal mandate overage',
            amount_usd: usd(DATA.signal.pricing_usd.mandate_overage_usd),
            unit: 'per mandate beyond the platform',
            endpoint: 'POST /signal/mandates',
          },
          ...Object.entries(DATA.issuer_pays.fees_usd).map(([id, v]) => ({
            id: `issuer_pays_${id.replace(/_usd$/, '')}`,
            label: `Issuer-pays: ${idWords(id.replace(/_usd$/, '')).toLowerCase()}`,
            amount_usd: usd(v),
            unit: /annual/.test(id) ? 'per year' : 'each',
            ...(ISSUER_PAYS_ENDPOINTS[id] ? { endpoint: ISSUER_PAYS_ENDPOINTS[id] } : byContact(contact, 'issuer_pays_service')),
          })),
        ],
      },
      {
        id: 'clearing',
        title: 'Clearing SKUs (proof clearing window)',
        rows: DATA.clearing.skus.map((k) => ({
          id: k.id,
          label: k.label,
          amount_usd: usd(k.price_usd),
          unit: `per ${k.interval} window (${k.weeks} weeks), with ${usd(k.gam_credits_usd)} USD of governed-act credits`,
          endpoint: 'POST /api/v1/gam/credits/purchase (operator key)',
        })),
      },
      {
        id: 'relay',
        title: 'Relay',
        note: `${DATA.relay.rev_share.rule} Optional ${DATA.relay.rev_share.referred_tenant_toll_bps.bps} bps on referred-tenant toll: future.`,
        rows: [
          ...Object.entries(DATA.relay.retail_band_usd).map(([id, b]) => ({
            id: `retail_${id}`,
            label: `Retail band: ${idWords(id)}`,
            amount_usd: usd(b.min),
            unit: `from, up to ${usd(b.max)}`,
            sold_by: {
              by: 'partner' as const,
              why: 'What a relay partner charges its own customers: sold by the partner, not by this service.',
            },
          })),
          ...Object.entries(DATA.relay.wholesale_usd).map(([id, w]) => ({
            id: `wholesale_${id}`,
            label: `Wholesale: ${idWords(id)}`,
            amount_usd: usd(w.usd),
            unit: w.deposit_usd === undefined ? 'each' : `each, with a deposit of ${usd(w.deposit_usd)}`,
            ...byContact(contact, 'relay_wholesale'),
          })),
        ],
      },
      {
        id: 'engagements',
        title: 'Diligence and the bind room',
        note: "The amounts the gate's diligence and bind-room pages state (SPEC 4.1), sold by contact.",
        rows: [
          {
            id: 'diligence',
            label: GATE_PAGES.diligence!.amount_label!,
            amount_usd: usd(GATE_PAGES.diligence!.amount_usd!),
            unit: 'per engagement',
            ...byContact(contact, 'diligence'),
          },
          {
            id: 'bind_room_deposit',
            label: GATE_PAGES['bind-room']!.amount_label!,
            amount_usd: usd(GATE_PAGES['bind-room']!.amount_usd!),
            unit: 'deposit per pack',
            ...byContact(contact, 'bind_room_deposit'),
          },
        ],
      },
      {
        id: 'operator',
        title: 'Operator checkout',
        note: 'One production write per key and closed UTC month (POST /v1/operator/checkout, an operator key): the month owes the greater of the floor, 10 bps of its cleared exposure and 0.10 USD per hop; its per-act charges count toward that and the checkout charges the rest. GET /v1/me shows the open month.',
        rows: [
          opts.operatorFloorUsd === undefined
            ? {
                id: 'floor',
                label: 'Floor',
                unit: 'per month',
                endpoint: 'POST /v1/operator/checkout',
                note: "OPERATOR_FLOOR_USD, set by the operator of this service (default 0.10); GET /api/v1/pricing shows this service's value",
              }
            : {
                id: 'floor',
                label: 'Floor',
                amount_usd: usd(opts.operatorFloorUsd),
                unit: 'per month',
                endpoint: 'POST /v1/operator/checkout',
                note: 'OPERATOR_FLOOR_USD of this service',
              },
          { id: 'bps', label: 'Cleared exposure', bps: OPERATOR_BPS, unit: 'per month, on cleared exposure' },
          {
            id: 'per_hop',
            label: 'Per hop',
            amount_usd: usd(tollUsd(OPERATOR_PER_HOP_SKU)),
            unit: 'per hop (every call counted against the hop limit)',
            endpoint: 'POST /v1/operator/checkout',
          },
        ],
      },
    ],
  };
}

/** The price list as built into the site (the floor shown as a setting). */
export const PRICING_TABLE: PricingTable = pricingTable();

/** The price rows of each stack layer (section id, row id), shown on the layer's page beside its catalog. */
const LAYER_ROWS: Record<string, Array<[string, string]>> = {
  clear: [
    ['tolls', 'execute_gate'],
    ['bps', 'starter'],
    ['bps', 'growth'],
    ['bps', 'network'],
  ],
  nap: DATA.nap.skus.map((k) => ['nap', k.sku] as [string, string]),
  clearing: DATA.clearing.skus.map((k) => ['clearing', k.id] as [string, string]),
  signal: [
    ['layers', 'signal_platform'],
    ['layers', 'signal_mandate_overage'],
  ],
  orn: [
    ['layers', 'orn_sharp'],
    ['layers', 'orn_ga_declare'],
  ],
  absence: [['layers', 'absence_witness']],
  pdtr: [
    ['layers', 'pdtr_catalog_toll'],
    ['layers', 'pdtr_bind'],
  ],
  require_receipt: [['layers', 'rr1_challenge']],
  issuer_pays: Object.keys(DATA.issuer_pays.fees_usd).map((id) => ['layers', `issuer_pays_${id.replace(/_usd$/, '')}`] as [string, string]),
  relay: [
    ...Object.keys(DATA.relay.retail_band_usd).map((id) => ['relay', `retail_${id}`] as [string, string]),
    ...Object.keys(DATA.relay.wholesale_usd).map((id) => ['relay', `wholesale_${id}`] as [string, string]),
  ],
  astl: [['layers', 'astl_publish']],
};

/** The row of the price list a gate page (/diligence, /bind-room) states, if any. */
export function priceForGatePage(pageId: string, table: PricingTable = PRICING_TABLE): PriceRow | undefined {
  const id = GATE_PAGE_PRICE_ROWS[pageId];
  return id === undefined ? undefined : table.sections.find((s) => s.id === 'engagements')?.rows.find((r) => r.id === id);
}

/** The price rows of a stack layer, from the one price list. */
export function pricesForLayer(layerId: string, table: PricingTable = PRICING_TABLE): PriceRow[] {
  return (LAYER_ROWS[layerId] ?? []).flatMap(
    ([section, id]) => table.sections.find((s) => s.id === section)?.rows.filter((r) => r.id === id) ?? [],
  );
}
