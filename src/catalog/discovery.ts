/**
 * The gate's discovery documents (SPEC 4.1 `/.well-known/*.json`), the
 * diligence offer and the 13 gate landing pages, from src/content/.
 * Each states only what SPEC states and links to the live gate service.
 * `/.well-known/prefinality.json` and `prefinality-jwks.json` are served
 * live by the pre-finality routes, not here.
 */
import { discoveryDocsSchema, diligenceOfferSchema, gatePagesSchema, discoveryDocumentSchema, type GateEndpoint } from './schemas.ts';
import type { Urls } from './catalogs.ts';
import { BUILD_SALES_CONTACT } from '../urls.ts';
import docsJson from '../content/discovery.json' with { type: 'json' };
import pagesJson from '../content/gate-pages.json' with { type: 'json' };

export const DISCOVERY_DOCS = discoveryDocsSchema.parse(docsJson);
export const GATE_PAGES = gatePagesSchema.parse(pagesJson);

/** Names of the gate's discovery documents published by the site: `/.well-known/<name>.json`. */
export const DISCOVERY_NAMES = Object.keys(DISCOVERY_DOCS);

/**
 * One `/.well-known/<name>.json` document. `gate` lists the gate's endpoints,
 * written at build time from the operations' declarations
 * (src/api/gate-endpoints.ts -> src/generated/gate-endpoints.json).
 */
export function discoveryDocument(name: string, u: Urls, endpoints?: readonly GateEndpoint[]) {
  const d = DISCOVERY_DOCS[name];
  if (!d) throw new Error(`no discovery document ${name}`);
  if (name === 'gate' && !endpoints) throw new Error('the gate discovery document lists the endpoints: pass them');
  const doc = {
    name,
    title: d.title,
    summary: d.summary,
    base_url: u.gate,
    site_url: u.site,
    ...(d.rules ? { rules: d.rules } : {}),
    ...d.facts,
    ...(name === 'gate'
      ? {
          auth: { scheme: 'bearer', header: 'Authorization: Bearer <API_KEY>' },
          endpoints: endpoints!.map((e) => ({ ...e, url: u.gate + e.path })),
          discovery: [
            ...DISCOVERY_NAMES.map((n) => `${u.site}/.well-known/${n}.json`),
            `${u.site}/.well-known/prefinality.json`,
            `${u.site}/.well-known/prefinality-jwks.json`,
          ],
        }
      : {}),
    links: Object.fromEntries(Object.entries(d.links).map(([k, p]) => [k, (p.startsWith('/.well-known/') ? u.site : u.gate) + p])),
    ...(d.page ? { page: u.site + d.page } : {}),
  };
  return discoveryDocumentSchema.parse(doc);
}

function pageAmount(slug: string): number {
  const amount = GATE_PAGES[slug]?.amount_usd;
  if (amount === undefined) throw new Error(`gate page ${slug} states no amount`);
  return amount;
}

/** `/diligence/offer.json`. */
export function diligenceOffer(u: Urls) {
  return diligenceOfferSchema.parse({
    name: 'diligence-offer',
    title: GATE_PAGES.diligence!.title,
    price_usd: pageAmount('diligence'),
    bind_room_deposit_usd: pageAmount('bind-room'),
    sold_by: 'contact',
    contact: u.salesContact ?? BUILD_SALES_CONTACT,
    summary: GATE_PAGES.diligence!.summary,
    page: u.site + '/diligence',
    one_pager: u.site + '/diligence/one-pager.txt',
    base_url: u.gate,
    site_url: u.site,
  });
}

/** `/diligence/one-pager.txt`: the same offer in plain text. */
export function diligenceOnePager(u: Urls): string {
  const o = diligenceOffer(u);
  const lines = [
    'FUSE GATE - DILIGENCE OFFER',
    '',
    'A metered pre-execution check for software agents: can this agent still act right now?',
    'A fuse in state DEAD fails closed: a DEAD fuse never acts.',
    '',
    `Diligence: ${o.price_usd} USD`,
    `Bind-room pack deposit: ${o.bind_room_deposit_usd} USD`,
    `Both are sold by contact: write to ${o.contact}.`,
    '',
    'Metering: a toll per governed act, and a basis-point fee on cleared exposure.',
    'Refusal outcomes (BLOCK, HOLD, DENY, SILENCE) are metered as a negative-act premium (NAP).',
    'Scale examples in the catalogs are illustrative projections and carry no contract.',
    '',
    `Machine-readable offer: ${u.site}/diligence/offer.json`,
    `Gate service:           ${u.gate}`,
    `Agent discovery:        ${u.site}/.well-known/gate.json`,
    `Stack catalog:          ${u.site}/api/v1/stack/catalog`,
    `Foundry catalog:        ${u.site}/api/v1/foundry/catalog.json`,
    '',
  ];
  return lines.join('\n');
}
