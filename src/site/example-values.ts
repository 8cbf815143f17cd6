/**
 * Realistic values for the request and response examples of the layer pages
 * (issue 31): a field's example is chosen from its name and its JSON schema, so
 * that a reader sees `"fuse_id": "fuse_7Jm2kQv9XrT4pLw8Ns3bYd"` and
 * `"created_at": "2026-11-25T14:03:11.482Z"`, never `"string"`, `0` or `{}`.
 * Ids are stable per field name (the same fuse id on every page).
 */
import { createHash } from 'node:crypto';

const ORIGIN = 'https://gate.example.com';
const AT = '2026-11-25T14:03:11.482Z';

/** A 22-character id body that looks random and is the same for the same seed. */
const idBody = (seed: string) => createHash('sha256').update(seed).digest('base64url').replace(/[-_]/g, 'x').slice(0, 22);
const hex = (seed: string) => createHash('sha256').update(seed).digest('hex');
const b64 = (seed: string) => createHash('sha256').update(seed).digest('base64');

/** Id prefixes of the objects this service names (src/ids.ts callers). */
const PREFIX: Record<string, string> = {
  fuse_id: 'fuse',
  receipt_id: 'rcpt',
  key_id: 'key',
  trigger_id: 'trg',
  account_id: 'acct',
  subscription_id: 'whs',
  event_id: 'evt',
  ticket_id: 'tkt',
  license_id: 'lic',
  grant_id: 'grant',
  manifest_id: 'astl',
  witness_id: 'wit',
  pack_id: 'pack',
  run_id: 'run',
  session_id: 'sess',
  attestation_id: 'att',
  aggregate_id: 'agg',
  declaration_id: 'ga',
  restraint_id: 'rst',
  seal_id: 'seal',
  fire_id: 'fire',
  slot_id: 'slot',
  partner_id: 'partner_acme',
  tenant_id: 'tenant_acme',
  job_id: 'job_2026_11_0042',
  graph_id: 'graph_claims_7',
  source_id: 'src_reuters',
  party_id: 'party_carrier_a',
  asset_id: 'asset_tbill_2027',
  policy_id: 'pol_88213',
  payment_id: 'pay_5521',
  category_id: 'annex_iii_5b',
};

/** Values by exact field name, for fields whose meaning fixes a realistic value. */
const NAMED: Record<string, unknown> = {
  act_kind: 'pay',
  template_id: 'bind_gate_hold',
  kind: 'pay',
  action_ref: 'wire-2026-11-0042',
  subject_ref: 'invoice-2026-0042',
  event_ref: 'incident-2026-11-25-a',
  payment_hash: hex('payment'),
  metric: 'holds',
  operator: 'gte',
  value: '3',
  reason: 'the fuse is LIVE',
  rule: 'dead fuse fails closed',
  name: 'Acme payments agent',
  label: 'payments agent',
  entity: 'acme-insurance',
  vendor: 'Northwind Analytics',
  issuer: 'Fuse Gate',
  product: 'Fuse Gate',
  tagline: 'Ask before every act; prove every answer.',
  description: 'Signed, logged pre-execution decisions for software agents.',
  note: 'illustrative projection: carries no contract',
  text: 'wire 5,000 USD to the supplier',
  url: 'https://ops.example.com/hooks/fusegate',
  email: 'ops@example.com',
  origin: 'gate.example.com/receipts',
  log: 'receipts',
  q: 'rcpt_5Hq2LmX8vR3tKp9WzN4cBd',
  format: 'json',
  custodian: 'State Street',
  event_type: 'mint',
  layer: 'clear',
  line: 'hops',
  status: 'active',
  currency: 'USD',
  period: 'month',
  month: '2026-11',
  share_pct: '25.00',
  spread: '0.8',
  annex_iii: '5(b) creditworthiness',
  job: 'bind policy 88213',
  method: 'POST',
  path: '/v1/fuse/hop',
  model: 'gpt-4.1-mini',
  role: 'agent',
  grade: 'A',
  line_of_business: 'cyber',
  state: 'LIVE',
  vertical: 'agents',
  leaf: Buffer.from('{"kind":"hop","decision":"PERMIT"}').toString('base64'),
  witness: 'eyJhbGciOiJFZERTQSIsImtpZCI6Ik1rVGd3In0.eyJ3aXRuZXNzIjoiYWJzZW50In0.qX8u3lN0c9Yk2FhR7pWm1sZ4vB6tA0dJ5eKx9LgQjPo',
  receipt:
    'eyJhbGciOiJFZERTQSIsInR5cCI6ImZ1c2VnYXRlLXJlY2VpcHQranNvbiIsImtpZCI6Ik1rVGd3In0.eyJyZWNlaXB0X2lkIjoicmNwdF81SHEyTG1YOHZSM3RLcDlXek40Y0JkIn0.3vQ9sLk2WmX7pR4tN8yB1cD6fH0jK5gZ2aE9uV3iOqA',
};

/** Plausible whole numbers by field name (a schema's bounds win when they exclude these). */
const NUMBERS: Record<string, number> = {
  version: 2,
  index: 41,
  log_index: 41,
  tree_size: 42,
  size: 42,
  from: 21,
  to: 42,
  start: 0,
  limit: 20,
  hops: 3200,
  hop_limit: 10000,
  hops_used: 3200,
  attempts: 1,
  weight: 1,
  weeks: 13,
  units: 3,
  count: 3,
  bps: 2,
  fee_bps: 25,
  custody_units: 1000,
  token_supply: 1000,
  rankings_count: 12,
  session_size: 8,
  step: 1,
};

function pick(schema: Record<string, any>, key: string): string | undefined {
  const k = key.toLowerCase();
  if (k in NAMED && typeof NAMED[k] === 'string') return NAMED[k] as string;
  if (k in PREFIX) return PREFIX[k]!.includes('_') ? PREFIX[k] : `${PREFIX[k]}_${idBody(k)}`;
  if (k.endsWith('_id') || k === 'id') return `${k === 'id' ? 'obj' : k.slice(0, -3).split('_').pop()}_${idBody(k)}`;
  if (k === 'verify_url') return `${ORIGIN}/v1/receipts/rcpt_${idBody('receipt_id')}`;
  if (k.endsWith('_url') || k === 'landing' || schema.format === 'uri') return `${ORIGIN}/${k.replace(/_url$/, '').replace(/_/g, '-')}`;
  if (k.endsWith('_at') || schema.format === 'date-time') return AT;
  if (schema.format === 'date') return AT.slice(0, 10);
  if (schema.format === 'email') return 'ops@example.com';
  if (k.endsWith('_usd') || /decimal USD|USD amount/.test(String(schema.description ?? ''))) return '120.00';
  if (/base64/.test(String(schema.description ?? '')) || /(^|_)(root|root_hash|leaf_hash|hash)$/.test(k)) return b64(k);
  if (/sha256|hash|fingerprint|digest|root/.test(k)) return hex(k);
  if (k.endsWith('_pct')) return '25.00';
  if (k === 'sku' || k.endsWith('_sku')) return 'execute_gate';
  return undefined;
}

/** A realistic string for field `key` of `schema`, or undefined when none fits. */
export function exampleString(schema: Record<string, any>, key: string): string {
  if (typeof schema.pattern === 'string') {
    const lit = /^\^([a-z]+_)/.exec(schema.pattern);
    if (lit) return `${lit[1]}${idBody(key)}`;
  }
  return pick(schema, key) ?? (key ? key.replace(/_/g, '-') : 'text');
}

/** A realistic number for field `key` within the schema's bounds. */
export function exampleNumber(schema: Record<string, any>, key: string): number {
  const min =
    typeof schema.minimum === 'number'
      ? schema.minimum
      : typeof schema.exclusiveMinimum === 'number'
        ? schema.exclusiveMinimum + 1
        : undefined;
  const max = typeof schema.maximum === 'number' ? schema.maximum : undefined;
  let n = NUMBERS[key.toLowerCase()] ?? (/usd|amount|price/.test(key) ? 120 : 3);
  if (min !== undefined && n < min) n = min;
  if (max !== undefined && n > max) n = max;
  return n;
}

/** A value for an object that declares no properties, by its field name. */
export function exampleOpenObject(key: string): Record<string, unknown> {
  switch (key) {
    case 'obligation_surface':
      return { callable_actions: ['bind', 'pay'], exposure_ceiling_usd: 25000000, fee_bps: 50, regulatory_hooks: ['NAIC model bulletin'] };
    case 'track_links':
      return { pricing: `${ORIGIN}/go/partner_acme/pricing`, start: `${ORIGIN}/go/partner_acme/start` };
    case 'wholesale_usd':
      return { monitor_monthly: 199, sprint: 4500 };
    case 'rev_share':
      return { rule: 'partners earn 20% of first-year tolls of the tenants they refer' };
    case 'surface':
      return { act_kinds: ['pay', 'bind'] };
    case 'inputs':
      return { hops_per_month: 100000 };
    case 'detail':
      return { receipt_id: `rcpt_${idBody('receipt_id')}` };
    case 'payload':
      return { kind: 'hop', decision: 'PERMIT', subject: `fuse_${idBody('fuse_id')}` };
    case 'data':
      return { state: 'LIVE', ok: true };
    case 'headers':
      return { 'Gate-Receipt': `rcpt_${idBody('receipt_id')}` };
    default:
      return { [`${key || 'example'}_id`]: `${(key || 'obj').split('_')[0]}_${idBody(key)}` };
  }
}

/** A declared example with its elided ids (`"fuse_…"`) filled in with realistic ones. */
export function filledIn(v: unknown, key = ''): unknown {
  if (typeof v === 'string') {
    const m = /^([a-z]+)_…$/.exec(v);
    return m ? `${m[1]}_${idBody(key || m[1]!)}` : v;
  }
  if (Array.isArray(v)) return v.map((x) => filledIn(x, key));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, filledIn(x, k)]));
  return v;
}
