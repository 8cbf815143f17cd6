/**
 * Every catalog and discovery document, fetched over HTTP from a real server
 * serving the Astro build, validated by its zod schema and compared with
 * values transcribed by hand from SPEC.md (never read from src/content/).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOGS } from '../src/catalog/catalogs.ts';
import * as s from '../src/catalog/schemas.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer();
});
afterAll(async () => {
  await srv?.stop();
});

type J = Record<string, any>;
async function getJson(path: string): Promise<{ res: Response; body: J }> {
  const res = await srv.fetch(path);
  expect(res.status, path).toBe(200);
  expect(res.headers.get('content-type'), path).toMatch(/^application\/json/);
  return { res, body: (await res.json()) as J };
}

// ---- SPEC, by hand -------------------------------------------------------------

const SPEC_PATHS: Record<string, string> = {
  '/api/v1/clear/catalog': 'svc-clear-catalog-v1',
  '/api/v1/nap/catalog': 'svc-nap-exchange-v1',
  '/api/v1/clearing/catalog': 'svc-clearing-window-v1',
  '/api/v1/relay/catalog': 'svc-partner-relay-v1',
  '/api/v1/orn/catalog': 'svc-orn-v1',
  '/api/v1/absence/catalog': 'svc-absence-exchange-v1',
  '/api/v1/pdtr/catalog': 'svc-pdtr-v1',
  '/api/v1/require-receipt/catalog': 'svc-require-receipt-v1',
  '/api/v1/issuer-pays/catalog': 'svc-issuer-pays-commercial-v1',
  '/api/v1/astl/catalog': 'svc-astl-v1',
  '/api/v1/stack/catalog': 'svc-stack-v2',
  '/api/v1/foundry/catalog.json': 'svc-actuation-foundry-v1',
};
const OTHER_PATHS = [
  '/signal/signal-catalog.json',
  '/standards/issuer-pays-scoreboard.json',
  '/.well-known/agent-actions.json',
  '/.well-known/x402',
  '/.well-known/x402-bazaar.json',
  '/api/v1/gam/credits/catalog',
];

const ALL_TOLLS: Record<string, number> = {
  astl_publish: 0.25,
  bps_fire: 1.0,
  ccr: 1.0,
  classify: 0.05,
  clear_before_act: 10.0,
  clear_before_contract: 150.0,
  clear_before_wire: 50.0,
  conformity_pack: 2.5,
  dtcc_attest: 0.5,
  execute_gate: 0.1,
  foundry_pipeline: 0.35,
  heartbeat: 0.1,
  hold: 0.5,
  inference_seal: 0.08,
  matter_spoliation: 500.0,
  oracle_aggregate: 0.15,
  panic_receipt: 49.0,
  parametric_run: 2.0,
  pdtr_bind: 0.15,
  restraint: 0.15,
  restraint_call: 0.15,
  seal: 0.05,
  spoliation_seal: 0.5,
  trigger_publish: 0.25,
  verify_attestation: 0.03,
  verify_pull: 0.05,
};
const BASE_TOLLS = [
  'astl_publish',
  'ccr',
  'classify',
  'execute_gate',
  'heartbeat',
  'hold',
  'pdtr_bind',
  'restraint',
  'restraint_call',
  'seal',
  'spoliation_seal',
  'verify_attestation',
  'verify_pull',
];

describe('catalog paths', () => {
  it('publishes every SPEC 4.2 catalog path as JSON with ETag, Cache-Control and CORS, with the SPEC 9 schema id', async () => {
    for (const [path, id] of Object.entries(SPEC_PATHS)) {
      const { res, body } = await getJson(path);
      expect(body.schema, path).toBe(id);
      expect(res.headers.get('etag'), path).toMatch(/^"[^"]+"$/);
      expect(res.headers.get('cache-control'), path).toContain('max-age=');
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
      for (const f of ['base_url', 'landing', 'issuer', 'product', 'tagline']) expect(typeof body[f], `${path} ${f}`).toBe('string');
      expect(body.base_url).toBe(srv.config.SITE_URL);
      expect(body.landing.startsWith(`${srv.config.SITE_URL}/`)).toBe(true);
    }
    for (const path of OTHER_PATHS) {
      const { res } = await getJson(path);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
    }
  });

  it('serves every catalog and discovery document as compact JSON (one line, no indentation)', async () => {
    for (const path of [...Object.keys(SPEC_PATHS), ...OTHER_PATHS, '/.well-known/gate.json']) {
      const text = await (await srv.fetch(path)).text();
      expect(text.trimEnd(), path).toBe(JSON.stringify(JSON.parse(text)));
    }
  });

  it('validates every published catalog against its zod schema', async () => {
    for (const c of CATALOGS) {
      const { body } = await getJson(c.path);
      const r = c.schema.safeParse(body);
      expect(r.success, `${c.path}: ${r.error?.message}`).toBe(true);
      expect(body.schema).toBe(c.schemaId);
    }
    expect(CATALOGS.map((c) => c.path).sort()).toEqual([...Object.keys(SPEC_PATHS), ...OTHER_PATHS].sort());
  });

  it('answers 304 to a matching If-None-Match', async () => {
    const first = await srv.fetch('/api/v1/clear/catalog');
    const etag = first.headers.get('etag')!;
    const second = await srv.fetch('/api/v1/clear/catalog', { headers: { 'if-none-match': etag } });
    expect(second.status).toBe(304);
  });

  it('refuses a write to a catalog with problem+json and leaves it unchanged', async () => {
    const before = await (await srv.fetch('/api/v1/clear/catalog')).text();
    const res = await srv.fetch('/api/v1/clear/catalog', { method: 'POST', json: { bps_tiers: [] } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await (await srv.fetch('/api/v1/clear/catalog')).text()).toBe(before);
  });
});

describe('SPEC 2.4 values', () => {
  it('clear: model, bps tiers, base tolls, NAP SKUs, apis, verticals', async () => {
    const { body } = await getJson('/api/v1/clear/catalog');
    expect(body.model).toBe('toll_per_governed_act + bps_on_cleared_exposure');
    expect(body.bps_tiers.map((t: J) => [t.id, t.bps, t.cleared_usd_monthly_up_to])).toEqual([
      ['starter', 2.0, 10000000],
      ['growth', 1.0, 100000000],
      ['network', 0.5, null],
    ]);
    expect(Object.keys(body.tolls_usd).sort()).toEqual([...BASE_TOLLS].sort());
    for (const k of BASE_TOLLS) expect(body.tolls_usd[k], k).toBe(ALL_TOLLS[k]);
    expect(body.nap_skus).toEqual(['ccr', 'hold', 'restraint', 'restraint_call', 'spoliation_seal']);
    expect(Object.keys(body.apis).sort()).toEqual(['catalog', 'exposure', 'network', 'usage']);
    expect(body.verticals.agents.endpoint).toBe('POST /api/v1/execute-gate');
    expect(body.verticals.bind_gate.endpoint).toBe('POST /api/v1/execute-gate/bind');
    expect(body.verticals.hiring.endpoint).toBe('POST /api/v1/restraint');
    for (const v of Object.values(body.verticals) as J[]) expect(Object.keys(v).sort()).toEqual(['ccb', 'demo', 'embed', 'endpoint']);
  });

  it('nap: SKUs with endpoints and tolls, volume toll 0.02', async () => {
    const { body } = await getJson('/api/v1/nap/catalog');
    expect(body.skus.map((k: J) => [k.sku, k.endpoint, k.toll_usd])).toEqual([
      ['ccr', 'POST /tcb/counterfactual-replay', 1.0],
      ['hold', 'POST /api/v1/execute-gate (DENY/SILENCE)', 0.5],
      ['restraint', 'POST /api/v1/restraint', 0.15],
      ['restraint_call', 'POST /api/v1/restraint (legacy alias, maps to restraint)', 0.15],
      ['spoliation_seal', 'POST /api/v1/spoliation-seal', 0.5],
    ]);
    for (const k of body.skus) expect(Object.keys(k).sort()).toEqual(['ccb', 'endpoint', 'label', 'nap', 'sku', 'toll_usd', 'why_premium']);
    expect(body.scale_example.volume_toll_usd).toBe(0.02);
    expect(body.scale_example.illustrative).toBe(true);
    for (const f of ['scale_api', 'usage_api', 'catalog_api']) expect(body[f]).toMatch(/^\/api\/v1\/nap\//);
  });

  it('clearing: SKUs, counts, live checkpoint sealed at start (issue 29: not a period later)', async () => {
    const { body } = await getJson('/api/v1/clearing/catalog');
    expect(body.skus.map((k: J) => [k.id, k.interval, k.weeks, k.price_usd, k.gam_credits_usd])).toEqual([
      ['clearing_annual', 'annual', 52, 9999.0, 50000.0],
      ['clearing_quarterly', 'quarterly', 13, 2499.0, 10000.0],
    ]);
    expect(body.total_count).toBe(2);
    expect(body.ready_count).toBe(body.skus.filter((k: J) => k.ready).length);
    expect(body.all_ready).toBe(body.ready_count === 2);
    expect(body.network_checkpoint).not.toBeNull();
  });

  it('relay: bands, wholesale, track targets, rev share', async () => {
    const { body } = await getJson('/api/v1/relay/catalog');
    expect(body.retail_band_usd).toEqual({ monitor: { min: 249, max: 499 }, sprint: { min: 7500, max: 12000 } });
    expect(body.wholesale_usd).toEqual({
      monitor_monthly: { usd: 199 },
      sprint: { usd: 4500, deposit_usd: 2250 },
      exhibit_d: { usd: 9000, deposit_usd: 4500 },
      '5pack': { usd: 18000, deposit_usd: 9000 },
      twin: { usd: 11000 },
    });
    expect(body.track_targets).toEqual(['relay', 'demo', 'verify', 'bind-room', 'scan', 'clocks', 'hiring', 'mortgage', 'chatbot']);
    expect(body.status_pattern).toBe('{site_url}/go/{partner}/status');
    expect(body.track_url_pattern).toBe('{site_url}/go/{partner}/{target}');
    expect(body.rev_share.partner_retail_spread_pct).toBe(100);
    expect(body.rev_share.referred_tenant_toll_bps).toEqual({ bps: 5, status: 'future' });
  });

  it('the other layers: fees, units, primitives, presets', async () => {
    const orn = (await getJson('/api/v1/orn/catalog')).body;
    expect([orn.sharp_toll_usd, orn.ga_declare_toll_usd]).toEqual([1.2, 25.0]);
    expect(orn.primitives).toEqual(['SHARP Slice', 'Coutility Backprop', 'General Average Declare', 'Average Adjuster Oracle']);
    expect(Object.keys(orn.apis).sort()).toEqual(['catalog', 'declare_ga', 'scale', 'sharp']);
    const abs = (await getJson('/api/v1/absence/catalog')).body;
    expect(abs.witness_toll_usd).toBe(0.05);
    expect(abs.primitives).toEqual(['Apoha Gate', 'Nyquist Floor', 'Absence Ledger', 'Type III spoliation']);
    expect(Object.keys(abs.surface_presets).sort()).toEqual(['agentic', 'hiring', 'insurance']);
    expect(Object.keys(abs.apis).sort()).toEqual(['catalog', 'scale', 'verify', 'witness']);
    const astl = (await getJson('/api/v1/astl/catalog')).body;
    expect(astl.publish_toll_usd).toBe(0.25);
    expect(astl.composes_with).toEqual(['absence', 'clear', 'clearing', 'issuer_pays', 'nap', 'require_receipt']);
    expect(Object.keys(astl.apis).sort()).toEqual(['catalog', 'lookup', 'publish', 'scale', 'verify']);
    const pdtr = (await getJson('/api/v1/pdtr/catalog')).body;
    expect(pdtr.toll_usd).toBe(0.1);
    expect(Object.keys(pdtr.apis).sort()).toEqual(['bind_payment', 'catalog', 'scale']);
    const rr = (await getJson('/api/v1/require-receipt/catalog')).body;
    expect([rr.header, rr.status_code, rr.challenge_toll_usd, rr.manifest]).toEqual([
      'Receipt-Required',
      428,
      0.02,
      '/.well-known/agent-actions.json',
    ]);
    expect(rr.conformance_requires).toEqual(['manifest', 'challenge', 'replay refuses unsigned holds']);
    expect(rr.badge).toBe('RR-1 conformant');
    const ip = (await getJson('/api/v1/issuer-pays/catalog')).body;
    expect(ip.rankings_count).toBe(9);
    expect(ip.rankings).toContainEqual({ vendor: 'velaru', grade: 'A' });
    expect(ip.fees_usd).toEqual({
      carrier_data_seat_annual_usd: 2500,
      independence_audit_sprint_usd: 8500,
      score_refresh_rush_usd: 1500,
      vendor_listing_annual_usd: 4999,
    });
    const sig = (await getJson('/signal/signal-catalog.json')).body;
    expect(sig.pricing_usd).toEqual({ platform_annual_usd: 125000, mandate_overage_usd: 3 });
    const gam = (await getJson('/api/v1/gam/credits/catalog')).body;
    expect(gam.credits.map((c: J) => [c.sku, c.gam_credits_usd])).toEqual([
      ['clearing_annual', 50000],
      ['clearing_quarterly', 10000],
    ]);
    const aa = (await getJson('/.well-known/agent-actions.json')).body;
    expect([aa.standard, aa.header, aa.status_code]).toEqual(['RR-1', 'Receipt-Required', 428]);
    for (const p of ['/.well-known/x402', '/.well-known/x402-bazaar.json']) expect((await getJson(p)).body.x402_configured).toBe(false);
  });

  it('stack: eleven layers in order with roles, attach flow, formula, chokepoint', async () => {
    const { body } = await getJson('/api/v1/stack/catalog');
    expect(body.layers.map((l: J) => [l.order, l.id, l.role])).toEqual([
      [1, 'relay', 'distribution'],
      [2, 'clear', 'volume'],
      [3, 'nap', 'margin'],
      [4, 'clearing', 'trust'],
      [5, 'signal', 'reference data'],
      [6, 'orn', 'agent swarms'],
      [7, 'absence', 'possibility surface'],
      [8, 'pdtr', 'agent commerce'],
      [9, 'require_receipt', 'standard'],
      [10, 'issuer_pays', 'category gate'],
      [11, 'astl', 'transparency log'],
    ]);
    const fields = ['api', 'catalog_url', 'color', 'complements', 'id', 'name', 'order', 'path', 'role', 'unit', 'url'];
    for (const l of body.layers) {
      const extra = l.id === 'clear' ? ['embed', 'embed_urls'] : [];
      expect(Object.keys(l).sort(), l.id).toEqual([...fields, ...extra].sort());
    }
    expect(body.attach_flow.map((s: J) => [s.step, s.layer])).toEqual([
      [1, 'relay'],
      [2, 'clear'],
      [3, 'nap'],
      [4, 'clearing'],
      [5, 'signal'],
      [6, 'orn'],
      [7, 'astl'],
      [8, 'absence'],
      [9, 'pdtr'],
      [10, 'require_receipt'],
      [11, 'issuer_pays'],
    ]);
    expect(body.attach_flow[9].outcome).toBe('publish RR-1 manifest, 428 before an irreversible act');
    expect(body.chokepoint).toBe('Capital Commitment Boundary');
    expect(body.revenue_formula).toContain('sum of the layer meters');
    // Each layer's landing is its catalog's landing.
    for (const l of body.layers) {
      const cat = (await getJson(new URL(l.catalog_url).pathname)).body;
      expect(cat.landing, l.id).toBe(l.url);
    }
  });
});

describe('SPEC 2.5 values', () => {
  it('foundry: layers, components, attach flow, extended tolls, oracle, triggers, conformity', async () => {
    const { body } = await getJson('/api/v1/foundry/catalog.json');
    expect(body.layers.map((l: J) => [l.layer, l.id, l.api])).toEqual([
      [0, 'physics', '/crypto/public-key'],
      [1, 'print', '/api/v1/inference/chat/completions'],
      [2, 'obligation', '/signal/trigger/publish'],
      [3, 'oracle', '/api/v1/oracle/aggregate'],
      [4, 'trigger', '/signal/trigger/publish'],
      [5, 'conformity', '/api/v1/conformity/generate'],
      [6, 'depository', '/api/v1/depository/attest'],
      [7, 'settlement', '/api/v1/foundry/trigger/fire'],
      [8, 'clearing', '/api/v1/clearing/catalog'],
      [9, 'stack', '/api/v1/stack/catalog'],
    ]);
    expect(body.layers[0].components).toEqual(['Ed25519', 'Merkle', 'SCITT COSE', 'external anchor', 'stranger /verify']);
    expect(body.layers[9].components).toEqual(['relay', 'clear', 'nap', 'orn', 'absence', 'pdtr', 'rr-1', 'astl', 'index']);
    for (const l of body.layers)
      expect(Object.keys(l).sort()).toEqual(['analog', 'api', 'api_url', 'components', 'id', 'layer', 'name', 'path', 'url']);
    expect(body.attach_flow.map((s: J) => s.layer)).toEqual([
      'physics',
      'print',
      'oracle',
      'obligation',
      'settlement',
      'conformity',
      'depository',
      'clearing',
      'stack',
    ]);
    expect(body.tolls_usd).toEqual(ALL_TOLLS);
    expect(body.oracle.sources.map((o: J) => [o.source_id, o.weight, o.latency_ms])).toEqual([
      ['network_a', 1.0, 2000],
      ['network_b', 1.0, 400],
      ['network_c', 0.9, 1500],
      ['first_party', 1.1, 5000],
      ['sealed_reading', 1.2, 100],
    ]);
    expect(
      body.trigger_templates.map((t: J) => [
        t.template_id,
        t.default_action,
        t.obligation_surface.callable_actions,
        t.obligation_surface.exposure_ceiling_usd,
        t.obligation_surface.fee_bps,
      ]),
    ).toEqual([
      ['ai_model_change', 'premium_adjust', ['premium_adjust', 'bind_hold', 'notify_underwriter'], 5000000, 25],
      ['bind_gate_hold', 'bind_hold', ['bind_hold', 'restraint_permit', 'notify_broker'], 25000000, 50],
      ['incident_sealed', 'parametric_window', ['parametric_window', 'regulatory_packet', 'spoliation_pack'], 10000000, 15],
    ]);
    expect(body.conformity_categories.map((c: J) => [c.category_id, c.risk_controls])).toEqual([
      ['employment', ['bias monitoring', 'human oversight', 'appeal pathway']],
      ['insurance', ['silent-AI disclosure', 'actuarial review', 'bind-gate proof']],
      ['education', ['human review', 'appeal', 'data minimization']],
      ['justice', ['judicial review', 'evidence-grade standard', 'spoliation pack']],
      ['critical_infrastructure', ['fail-safe', 'incident sealed triggers', 'resilience-regulation cross-hook']],
      ['companion', ['crisis routing', 'minor safety', 'deployer transparency file']],
    ]);
    expect(body.depository_event_types.map((e: J) => e.event_type)).toEqual([
      'tokenize',
      'mint',
      'burn',
      'corporate_action',
      'custody_transfer',
    ]);
    expect(body.recent_settlements).toEqual([]);
    expect(body.apis.projection).toBe('/api/v1/foundry/projection/{tenant_id}');
  });
});

describe('SPEC 4.1 documents', () => {
  const DOCS = [
    'gate',
    'mcp',
    'x402',
    'license-fuse',
    'commit-auth',
    'exclusion',
    'command-radiation',
    'capture',
    'spend-protocol',
    'operator',
    'restraint',
    'listings',
    'register',
    'bound-answer',
    'exclusive-timing',
    'floor',
    'particular',
  ];

  it('publishes every gate discovery document with CORS, linking the live gate service', async () => {
    for (const name of DOCS) {
      const { res, body } = await getJson(`/.well-known/${name}.json`);
      expect(res.headers.get('access-control-allow-origin'), name).toBe('*');
      expect(s.discoveryDocumentSchema.safeParse(body).success, name).toBe(true);
      // Every document names the running gate service (built ones get it substituted when served).
      expect(body.base_url).toBe(srv.config.BASE_URL);
    }
    const gate = (await getJson('/.well-known/gate.json')).body;
    // The 28 rows of SPEC 4.1, then our extensions, marked as such.
    expect(gate.endpoints.filter((e: { extension?: boolean }) => !e.extension)).toHaveLength(28);
    expect(gate.endpoints).toContainEqual(expect.objectContaining({ method: 'POST', path: '/v1/fuse/hop', auth: 'key' }));
    const lf = (await getJson('/.well-known/license-fuse.json')).body;
    expect(lf.rules.join(' ')).toMatch(/CHARGE-only resurrection/);
    const sp = (await getJson('/.well-known/spend-protocol.json')).body;
    expect(sp.rules.join(' ')).toMatch(/hash the write they forward/);
    const op = (await getJson('/.well-known/operator.json')).body;
    expect([op.bps, op.per_hop_usd]).toEqual([10, 0.1]);
    const cr = (await getJson('/.well-known/command-radiation.json')).body;
    expect(cr.rules.join(' ')).toMatch(/UTC now/);
  });

  it('serves the diligence offer with 2500 USD and the 1750 USD bind-room deposit, in JSON and text', async () => {
    const { body } = await getJson('/diligence/offer.json');
    expect(s.diligenceOfferSchema.safeParse(body).success).toBe(true);
    expect([body.price_usd, body.bind_room_deposit_usd]).toEqual([2500, 1750]);
    const txt = await srv.fetch('/diligence/one-pager.txt');
    expect(txt.headers.get('content-type')).toMatch(/^text\/plain/);
    const t = await txt.text();
    expect(t).toContain('2500 USD');
    expect(t).toContain('1750 USD');
  });

  it('publishes a JSON Schema per catalog schema id, and a sitemap', async () => {
    for (const c of CATALOGS) {
      const { body } = await getJson(`/schemas/${c.schemaId}.json`);
      expect(body.$schema).toMatch(/2020-12/);
      expect(body.type).toBe('object');
      expect(body.required).toEqual(expect.arrayContaining(['schema', 'base_url', 'landing', 'issuer', 'product', 'tagline']));
      expect(body.properties.schema.const).toBe(c.schemaId);
    }
    const map = await (await srv.fetch('/sitemap.xml')).text();
    for (const p of ['/stack', '/foundry', '/pricing', '/bind-room', '/api/v1/clear/catalog', '/schemas/svc-stack-v2.json']) {
      expect(map).toContain(`<loc>${srv.config.SITE_URL}${p}</loc>`);
    }
  });
});
