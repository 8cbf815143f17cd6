/**
 * Pre-finality clearance through the real server: every status, every rule,
 * every verify rejection, the RTP gate's checks, JWKS verification with a
 * stock JWT library, x402 wire format, demo.
 */
import { createHash, createHmac, generateKeyPairSync, sign as edSign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calculateJwkThumbprint, createLocalJWKSet, createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWK } from 'jose';
import { loadConfig } from '../src/config.ts';
import { loadKeyring, rotateSigningKey } from '../src/crypto/keys.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { getReceipt } from '../src/ledger/receipts.ts';
import { chargesOf, receiptCount, type ChargeRow } from './support/ledger-reads.ts';

const TYP = 'prefinality-receipt+jwt';
const RTP = {
  amount: '125.00',
  currency: 'USD',
  account_number: '000123456789',
  routing_number: '021000021',
  counterparty: 'ACME Supplies LLC',
};
const ORDER = { ...RTP, amount: '125' };
const X402_TRANSFER = { amount: '0.25', currency: 'USDC', counterparty: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C' };

const b64url = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** A compact JWS made by hand, signed with node:crypto (not jose). */
function handJwt(header: Record<string, unknown>, payload: Record<string, unknown>, key?: KeyObject): string {
  const input = `${b64url(header)}.${b64url(payload)}`;
  const sig = key ? edSign(null, Buffer.from(input), key).toString('base64url') : '';
  return `${input}.${sig}`;
}

/** Independent SHA-256 of a flat object's JSON with sorted keys. */
function flatHash(o: Record<string, string>): string {
  const sorted = Object.fromEntries(
    Object.keys(o)
      .sort()
      .map((k) => [k, o[k]]),
  );
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex');
}

/** Rows counted: receipts are the receipts log's entries, meter rows the charges receipts state (optionally those matching `where`). */
async function count(s: TestServer, table: 'meter' | 'receipts', where?: (c: ChargeRow) => boolean): Promise<number> {
  if (table === 'receipts') return receiptCount(s.ctx.ledger.read);
  return (await chargesOf(s.ctx.ledger.read)).filter(where ?? (() => true)).length;
}

async function rows(s: TestServer, table: string, where: string, args: unknown[]): Promise<number> {
  const rs = await s.ctx.ledger.read.execute({ sql: `SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`, args: args as never });
  return Number(rs.rows[0]!.n);
}

async function insertFuse(s: TestServer, id: string, keyId: string, state: string): Promise<void> {
  const now = new Date().toISOString();
  await s.ctx.ledger.write((tx) =>
    tx.execute({
      sql: 'INSERT INTO fuses (id, key_id, state, label, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
      args: [id, keyId, state, 'test', now, now],
    }),
  );
}

describe('pre-finality clearance', () => {
  let s: TestServer;
  let key: { id: string; secret: string; accountId: string };
  let other: { id: string; secret: string };

  /** k: the key secret, or null to send none. */
  const evaluate = (json: unknown, k: string | null = key.secret, headers: Record<string, string> = {}) =>
    s.fetch('/v1/prefinality/evaluate', { json, ...(k ? { key: k } : {}), headers });
  const verify = (receipt: string) => s.fetch('/v1/prefinality/verify', { json: { receipt } });
  const gate = (receipt: string, payment_order: unknown) =>
    s.fetch('/v1/prefinality/rtp/gate', { key: key.secret, json: { receipt, payment_order } });
  async function goReceipt(transfer: Record<string, string> = RTP, rail = 'rtp'): Promise<string> {
    const r = await evaluate({ rail, transfer });
    expect(r.status).toBe(200);
    return ((await r.json()) as { receipt_jwt: string }).receipt_jwt;
  }
  /** Claims the server would sign, for hand-made tokens. */
  const claims = (over: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return {
      iss: s.config.BASE_URL,
      sub: key.id,
      iat: now,
      exp: now + 600,
      jti: `pfr_hand${Math.random().toString(36).slice(2)}`,
      decision: 'GO',
      rail: 'rtp',
      transfer_hash: flatHash(RTP),
      transfer: RTP,
      rule: 'cleared',
      receipt_id: 'rcpt_hand',
      ...over,
    };
  };
  const ourHeader = (over: Record<string, unknown> = {}) => ({ alg: 'EdDSA', typ: TYP, kid: s.ctx.keyring.current.kid, ...over });

  beforeAll(async () => {
    s = await startTestServer();
    key = await s.newKey('agent');
    other = await s.newKey('other');
  });
  afterAll(() => s.stop());

  describe('evaluate: statuses', () => {
    it('200 GO with a signed JWT receipt, recorded in the receipts log and metered once', async () => {
      const before = (await chargesOf(s.ctx.ledger.read, key.id)).length;
      const r = await evaluate({ rail: 'rtp', transfer: RTP });
      expect(r.status).toBe(200);
      const body = (await r.json()) as Record<string, any>;
      expect(body).toMatchObject({
        decision: 'GO',
        rail: 'rtp',
        rule: { id: 'cleared' },
        demo: false,
        charge: { sku: 'execute_gate', amount_usd: '0.10', nap: false },
      });
      const header = decodeProtectedHeader(body.receipt_jwt);
      expect(header).toEqual({ alg: 'EdDSA', typ: TYP, kid: s.ctx.keyring.current.kid });
      // kid is the RFC 7638 thumbprint of the public key
      expect(header.kid).toBe(await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: s.ctx.keyring.current.jwk.x! }));
      const jwks = (await (await s.fetch('/.well-known/prefinality-jwks.json')).json()) as { keys: JWK[] };
      const { payload } = await jwtVerify(body.receipt_jwt, createLocalJWKSet(jwks), { typ: TYP, algorithms: ['EdDSA'] });
      expect(payload).toMatchObject({ iss: s.config.BASE_URL, sub: key.id, decision: 'GO', rail: 'rtp', rule: 'cleared', jti: body.jti });
      expect(payload.transfer_hash).toBe(flatHash(RTP));
      expect(body.transfer_hash).toBe(flatHash(RTP));
      expect(payload.exp! - payload.iat!).toBe(s.config.PREFINALITY_RECEIPT_TTL_SECONDS);
      expect((await getReceipt(s.ctx.ledger.read, body.receipt_id))!.payload).toMatchObject({
        kind: 'prefinality',
        decision: 'GO',
        key_id: key.id,
      });
      expect((await getReceipt(s.ctx.ledger.read, body.receipt_id))!.payload.data).toMatchObject({
        jti: body.jti,
        rule: 'cleared',
        rail: 'rtp',
      });
      expect(payload.receipt_id).toBe(body.receipt_id);
      expect((await chargesOf(s.ctx.ledger.read, key.id)).length).toBe(before + 1);
      expect(
        await count(s, 'meter', (c) => c.ref === body.receipt_id && c.sku === 'execute_gate' && c.amount_micros === 100000 && c.nap === 0),
      ).toBe(1);
    });

    it('a stock JWT library verifies a GO receipt from the remote JWKS alone', async () => {
      const token = await goReceipt();
      const jwks = createRemoteJWKSet(new URL(s.url + '/.well-known/prefinality-jwks.json'));
      const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer: s.config.BASE_URL, typ: TYP });
      expect(payload.decision).toBe('GO');
      expect(protectedHeader.alg).toBe('EdDSA');
    });

    it('401 with neither key nor payment, and writes nothing', async () => {
      const before = await count(s, 'receipts');
      const r = await evaluate({ rail: 'rtp', transfer: RTP }, null);
      expect(r.status).toBe(401);
      expect(r.headers.get('content-type')).toMatch(/problem\+json/);
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(((await r.json()) as { code: string }).code).toBe('missing_key');
      const paid = await evaluate({ rail: 'rtp', transfer: RTP }, null, { 'x-payment': 'eyJ4NDAyVmVyc2lvbiI6MX0=' });
      expect(paid.status).toBe(401);
      expect(((await paid.json()) as { code: string }).code).toBe('x402_not_configured');
      const bad = await evaluate({ rail: 'rtp', transfer: RTP }, 'not-a-key');
      expect(bad.status).toBe(401);
      expect(await count(s, 'receipts')).toBe(before);
    });

    it('403 NO_GO and 409 HOLD are decisions with receipts, metered as NAP hold, without a JWT', async () => {
      const no = await evaluate({ rail: 'rtp', transfer: { ...RTP, routing_number: undefined } });
      expect(no.status).toBe(403);
      const nb = (await no.json()) as Record<string, any>;
      expect(nb).toMatchObject({
        decision: 'NO_GO',
        rule: { id: 'transfer_incomplete' },
        fields: ['transfer.routing_number'],
        charge: { sku: 'hold', amount_usd: '0.50', nap: true },
      });
      expect(nb.receipt_jwt).toBeUndefined();
      const hold = await evaluate({ rail: 'rtp', transfer: RTP, context: { risk_flags: ['new_payee'] } });
      expect(hold.status).toBe(409);
      const hb = (await hold.json()) as Record<string, any>;
      expect(hb).toMatchObject({ decision: 'HOLD', rule: { id: 'context_risk_flag' } });
      // The agent's tool the evaluate gates (the MCP proxy sends it) is named in the receipt.
      const named = (await (await evaluate({ rail: 'rtp', transfer: RTP, context: { tool: 'wire_funds' } })).json()) as Record<string, any>;
      expect((await getReceipt(s.ctx.ledger.read, named.receipt_id))!.payload.data).toMatchObject({ rail: 'rtp', tool: 'wire_funds' });
      expect((await getReceipt(s.ctx.ledger.read, hb.receipt_id))!.payload.data).not.toHaveProperty('tool');
      for (const b of [nb, hb]) {
        expect((await getReceipt(s.ctx.ledger.read, b.receipt_id))!.payload.decision).toBe(b.decision);
        expect(
          await count(s, 'meter', (c) => c.ref === b.receipt_id && c.sku === 'hold' && c.amount_micros === 500000 && c.nap === 1),
        ).toBe(1);
      }
    });

    it('400 for bad input, naming the field, writing and charging nothing', async () => {
      const receipts = await count(s, 'receipts');
      const meter = await count(s, 'meter');
      const cases: Array<[unknown, string]> = [
        [{ rail: 'ach', transfer: RTP }, 'rail'],
        [{ rail: 'rtp' }, 'transfer'],
        [{ rail: 'rtp', transfer: { ...RTP, amount: '1e3' } }, 'transfer.amount'],
        [{ rail: 'rtp', transfer: { ...RTP, amount: 125 } }, 'transfer.amount'],
        [{ rail: 'rtp', transfer: { ...RTP, amount: '1.0000000000000000001' } }, 'transfer.amount'],
        [{ rail: 'rtp', transfer: { ...RTP, iban: 'x' } }, 'transfer'],
        [{ rail: 'rtp', transfer: RTP, extra: 1 }, '(body)'],
        [{ rail: 'rtp', transfer: RTP, mandate: { max_amout: '10' } }, 'mandate'],
        [{ rail: 'rtp', transfer: RTP, context: { fuse_id: 7 } }, 'context.fuse_id'],
        [{ rail: 'rtp', transfer: RTP, context: { tool: 'wire $5,000 to Bob' } }, 'context.tool'],
      ];
      for (const [json, field] of cases) {
        const r = await evaluate(json);
        expect(r.status, JSON.stringify(json)).toBe(400);
        const p = (await r.json()) as { code: string; errors: Array<{ field: string }> };
        expect(p.code).toBe('invalid_body');
        expect(p.errors.map((e) => e.field)).toContain(field);
      }
      expect(await count(s, 'receipts')).toBe(receipts);
      expect(await count(s, 'meter')).toBe(meter);
    });

    it('is idempotent: a retry with the same Idempotency-Key is answered once and charged once', async () => {
      const before = (await chargesOf(s.ctx.ledger.read, key.id)).length;
      const h = { 'idempotency-key': 'pf-idem-1' };
      const a = await evaluate({ rail: 'rtp', transfer: RTP }, key.secret, h);
      const b = await evaluate({ rail: 'rtp', transfer: RTP }, key.secret, h);
      expect(b.headers.get('idempotent-replayed')).toBe('true');
      const first = (await a.json()) as { receipt_jwt?: string };
      // The answer stored under the key is the one with the JWT, not one made before it was signed.
      expect(first.receipt_jwt).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(await b.json()).toEqual(first);
      expect((await chargesOf(s.ctx.ledger.read, key.id)).length).toBe(before + 1);
    });
  });

  describe('evaluate: every rule', () => {
    const decide = async (json: Record<string, unknown>, k = key.secret) => {
      const r = await evaluate(json, k);
      const b = (await r.json()) as { decision: string; rule: { id: string }; fields: string[] };
      return { status: r.status, decision: b.decision, rule: b.rule.id, fields: b.fields };
    };

    it('fuse_dead: a DEAD fuse named in the context is NO_GO, and beats a HOLD rule', async () => {
      await insertFuse(s, 'fuse_dead1', key.id, 'DEAD');
      expect(await decide({ rail: 'rtp', transfer: RTP, context: { fuse_id: 'fuse_dead1', risk_flags: ['x'] } })).toMatchObject({
        status: 403,
        decision: 'NO_GO',
        rule: 'fuse_dead',
        fields: ['context.fuse_id'],
      });
    });

    it("fuse_unknown: an unknown fuse, or another key's, is NO_GO; a LIVE fuse of the caller passes", async () => {
      await insertFuse(s, 'fuse_live1', key.id, 'LIVE');
      await insertFuse(s, 'fuse_other', other.id, 'LIVE');
      expect(await decide({ rail: 'rtp', transfer: RTP, context: { fuse_id: 'fuse_nope' } })).toMatchObject({
        status: 403,
        rule: 'fuse_unknown',
      });
      expect(await decide({ rail: 'rtp', transfer: RTP, context: { fuse_id: 'fuse_other' } })).toMatchObject({
        status: 403,
        rule: 'fuse_unknown',
      });
      expect(await decide({ rail: 'rtp', transfer: RTP, context: { fuse_id: 'fuse_live1' } })).toMatchObject({
        status: 200,
        rule: 'cleared',
      });
    });

    it('transfer_incomplete: each rail needs its fields (x402 needs no accounts)', async () => {
      expect(await decide({ rail: 'rtp', transfer: { amount: '1', currency: 'USD' } })).toMatchObject({
        status: 403,
        rule: 'transfer_incomplete',
        fields: ['transfer.account_number', 'transfer.routing_number', 'transfer.counterparty'],
      });
      expect(await decide({ rail: 'x402', transfer: { amount: '1', currency: 'USDC' } })).toMatchObject({
        status: 403,
        fields: ['transfer.counterparty'],
      });
      expect(await decide({ rail: 'x402', transfer: X402_TRANSFER })).toMatchObject({ status: 200, decision: 'GO' });
    });

    it('amount_not_positive: a zero amount is NO_GO', async () => {
      expect(await decide({ rail: 'rtp', transfer: { ...RTP, amount: '0.000' } })).toMatchObject({
        status: 403,
        rule: 'amount_not_positive',
      });
    });

    it('mandate_expired, mandate_rail, mandate_currency, mandate_counterparty', async () => {
      expect(await decide({ rail: 'rtp', transfer: RTP, mandate: { expires_at: '2020-01-01T00:00:00Z' } })).toMatchObject({
        status: 403,
        rule: 'mandate_expired',
      });
      expect(await decide({ rail: 'rtp', transfer: RTP, mandate: { expires_at: '2999-01-01T00:00:00Z' } })).toMatchObject({ status: 200 });
      expect(await decide({ rail: 'rtp', transfer: RTP, mandate: { rails: ['x402'] } })).toMatchObject({
        status: 403,
        rule: 'mandate_rail',
      });
      expect(await decide({ rail: 'rtp', transfer: RTP, mandate: { currency: 'EUR' } })).toMatchObject({
        status: 403,
        rule: 'mandate_currency',
      });
      expect(await decide({ rail: 'rtp', transfer: RTP, mandate: { counterparties: ['Someone Else'] } })).toMatchObject({
        status: 403,
        rule: 'mandate_counterparty',
      });
      expect(
        await decide({
          rail: 'rtp',
          transfer: RTP,
          mandate: { rails: ['rtp'], currency: 'USD', counterparties: [RTP.counterparty], max_amount: '500' },
        }),
      ).toMatchObject({ status: 200, rule: 'cleared' });
    });

    it('mandate_limit compares decimal strings exactly, never through a float', async () => {
      // As floats these two are equal (1e-18 is below double precision at 100).
      expect(
        await decide({ rail: 'rtp', transfer: { ...RTP, amount: '100.000000000000000001' }, mandate: { max_amount: '100' } }),
      ).toMatchObject({
        status: 403,
        rule: 'mandate_limit',
        fields: ['transfer.amount', 'mandate.max_amount'],
      });
      expect(
        await decide({ rail: 'rtp', transfer: { ...RTP, amount: '100.000000000000000000' }, mandate: { max_amount: '100' } }),
      ).toMatchObject({ status: 200 });
    });

    it('context_risk_flag and review_requested give HOLD', async () => {
      expect(await decide({ rail: 'rtp', transfer: RTP, context: { review_requested: true } })).toMatchObject({
        status: 409,
        decision: 'HOLD',
        rule: 'context_risk_flag',
      });
      expect(await decide({ rail: 'rtp', transfer: RTP, context: { risk_flags: [], note: 'free-form' } })).toMatchObject({ status: 200 });
    });

    it('review_threshold: above the currency threshold (or the mandate review_above) is HOLD', async () => {
      expect(await decide({ rail: 'rtp', transfer: { ...RTP, amount: '10000.01' } })).toMatchObject({
        status: 409,
        rule: 'review_threshold',
      });
      expect(await decide({ rail: 'rtp', transfer: { ...RTP, amount: '10000.00' } })).toMatchObject({ status: 200 });
      expect(await decide({ rail: 'rtp', transfer: { ...RTP, amount: '60' }, mandate: { review_above: '50' } })).toMatchObject({
        status: 409,
        rule: 'review_threshold',
        fields: ['transfer.amount', 'mandate.review_above'],
      });
      // A currency without a configured threshold has none.
      expect(await decide({ rail: 'rtp', transfer: { ...RTP, currency: 'GBP', amount: '999999' } })).toMatchObject({ status: 200 });
    });
  });

  describe('verify (RFC 8725)', () => {
    const check = async (token: string) =>
      (await (await verify(token)).json()) as { valid: boolean; reason?: string; claims?: Record<string, unknown> };

    it('accepts our GO receipt, and an Ed25519 (RFC 9864) alg name', async () => {
      expect(await check(await goReceipt())).toMatchObject({ valid: true, claims: { decision: 'GO' } });
      const t = handJwt(ourHeader({ alg: 'Ed25519' }), claims(), s.ctx.keyring.current.privateKey);
      expect(await check(t)).toMatchObject({ valid: true });
    });

    it('rejects alg none', async () => {
      expect(await check(handJwt(ourHeader({ alg: 'none' }), claims()))).toMatchObject({ valid: false, reason: 'alg_not_allowed' });
    });

    it('rejects HS256 signed with the public key', async () => {
      for (const secret of [Buffer.from(s.ctx.keyring.current.raw), Buffer.from(JSON.stringify(s.ctx.keyring.current.jwk))]) {
        const input = `${b64url(ourHeader({ alg: 'HS256' }))}.${b64url(claims())}`;
        const t = `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
        expect(await check(t)).toMatchObject({ valid: false, reason: 'alg_not_allowed' });
      }
    });

    it('rejects an unknown kid, and a foreign key claiming our kid', async () => {
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      const jwk = publicKey.export({ format: 'jwk' }) as JWK;
      const kid = await calculateJwkThumbprint(jwk);
      expect(await check(handJwt(ourHeader({ kid }), claims(), privateKey))).toMatchObject({ valid: false, reason: 'unknown_kid' });
      expect(await check(handJwt(ourHeader({ kid: undefined }), claims(), privateKey))).toMatchObject({
        valid: false,
        reason: 'unknown_kid',
      });
      expect(await check(handJwt(ourHeader(), claims(), privateKey))).toMatchObject({ valid: false, reason: 'bad_signature' });
    });

    it('rejects an expired token', async () => {
      const past = Math.floor(Date.now() / 1000) - 3600;
      const t = handJwt(ourHeader(), claims({ iat: past - 600, exp: past }), s.ctx.keyring.current.privateKey);
      expect(await check(t)).toMatchObject({ valid: false, reason: 'expired' });
    });

    it('rejects a changed claim', async () => {
      const [h, p, sig] = (await goReceipt()).split('.');
      const payload = JSON.parse(Buffer.from(p!, 'base64url').toString());
      payload.transfer.amount = '99999.00';
      expect(await check(`${h}.${b64url(payload)}.${sig}`)).toMatchObject({ valid: false, reason: 'bad_signature' });
      const other = { ...payload, transfer: { ...payload.transfer, amount: '125.00' }, decision: 'GO', sub: 'key_someone' };
      expect(await check(`${h}.${b64url(other)}.${sig}`)).toMatchObject({ valid: false, reason: 'bad_signature' });
    });

    it('pins typ, requires our issuer and every claim, and refuses garbage', async () => {
      const k = s.ctx.keyring.current.privateKey;
      expect(await check(handJwt(ourHeader({ typ: 'JWT' }), claims(), k))).toMatchObject({ valid: false, reason: 'typ_mismatch' });
      expect(await check(handJwt(ourHeader({ typ: undefined }), claims(), k))).toMatchObject({ valid: false, reason: 'typ_mismatch' });
      expect(await check(handJwt(ourHeader(), claims({ iss: 'https://evil.example' }), k))).toMatchObject({
        valid: false,
        reason: 'claim_invalid',
      });
      expect(await check(handJwt(ourHeader(), claims({ transfer_hash: undefined }), k))).toMatchObject({
        valid: false,
        reason: 'claim_invalid',
      });
      expect(await check(handJwt(ourHeader(), claims({ transfer_hash: flatHash({ a: 'b' }) }), k))).toMatchObject({
        valid: false,
        reason: 'claim_invalid',
      });
      expect(await check('not.a.jwt!')).toMatchObject({ valid: false, reason: 'malformed' });
      expect(await check('abc')).toMatchObject({ valid: false, reason: 'malformed' });
      const r = await s.fetch('/v1/prefinality/verify', { json: { token: 'x' } });
      expect(r.status).toBe(400);
    });
  });

  describe('JWKS and manifest', () => {
    it('publishes current and retired keys; receipts of a retired key still verify', async () => {
      const old = await goReceipt();
      const oldKid = s.ctx.keyring.current.kid;
      await rotateSigningKey(s.config.SIGNING_KEY_FILE);
      s.ctx.keyring = await loadKeyring(s.config);
      const jwks = (await (await s.fetch('/.well-known/prefinality-jwks.json')).json()) as { keys: JWK[] };
      expect(jwks.keys.map((k) => k.kid)).toEqual([s.ctx.keyring.current.kid, oldKid]);
      for (const k of jwks.keys) expect(k).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
      const fresh = await goReceipt();
      expect(decodeProtectedHeader(fresh).kid).toBe(s.ctx.keyring.current.kid);
      for (const t of [old, fresh]) {
        await jwtVerify(t, createLocalJWKSet(jwks), { typ: TYP });
        expect((await (await verify(t)).json()) as object).toMatchObject({ valid: true });
      }
    });

    it('the manifest names both rails, the statuses, where to verify, and x402_configured false', async () => {
      const r = await s.fetch('/.well-known/prefinality.json');
      expect(r.status).toBe(200);
      const m = (await r.json()) as Record<string, any>;
      expect(m.rails.map((x: { id: string }) => x.id)).toEqual(['x402', 'rtp']);
      expect(Object.keys(m.statuses)).toEqual(['200', '401', '402', '403', '409']);
      expect(m.receipt).toMatchObject({
        typ: TYP,
        jwks_uri: `${s.config.BASE_URL}/.well-known/prefinality-jwks.json`,
        verify_url: `${s.config.BASE_URL}/v1/prefinality/verify`,
      });
      expect(m.x402_configured).toBe(false);
      expect(m.rules.at(-1)).toMatchObject({ id: 'cleared', decision: 'GO' });
    });
  });

  describe('RTP gate', () => {
    type GateBody = { pass: boolean; reasons: Array<{ code: string }>; mismatched_fields: string[]; charge: { sku: string } };
    const run = async (receipt: string, order: unknown) => {
      const r = await gate(receipt, order);
      return { status: r.status, body: (await r.json()) as GateBody };
    };

    it('passes a matching order once; the same order again is refused; another order is refused', async () => {
      const t = await goReceipt();
      const first = await run(t, ORDER);
      expect(first).toMatchObject({ status: 200, body: { pass: true, reasons: [], charge: { sku: 'verify_attestation' } } });
      const replay = await run(t, ORDER);
      expect(replay).toMatchObject({ status: 403, body: { pass: false } });
      expect(replay.body.reasons.map((r) => r.code)).toEqual(['receipt_used']);
      const again = await run(t, { ...ORDER, order_id: 'another-order' });
      expect(again).toMatchObject({ status: 403, body: { pass: false, charge: { sku: 'hold' } } });
      expect(again.body.reasons.map((r) => r.code)).toEqual(['receipt_used']);
    });

    it('names each differing field', async () => {
      const t = await goReceipt();
      const diffs: Array<[Record<string, string>, string[]]> = [
        [{ amount: '125.01' }, ['payment_order.amount']],
        [{ currency: 'EUR' }, ['payment_order.currency']],
        [{ account_number: '999' }, ['payment_order.account_number']],
        [{ routing_number: '111000025' }, ['payment_order.routing_number']],
        [{ counterparty: 'Mallory' }, ['payment_order.counterparty']],
        [{ amount: '1', counterparty: 'Mallory' }, ['payment_order.amount', 'payment_order.counterparty']],
      ];
      for (const [change, fields] of diffs) {
        const r = await run(t, { ...ORDER, ...change });
        expect(r.status).toBe(403);
        expect(r.body.mismatched_fields).toEqual(fields);
      }
      // None of the refusals used the receipt up.
      expect((await run(t, ORDER)).status).toBe(200);
    });

    it('refuses a receipt that is not GO, demo, for another rail, expired or invalid', async () => {
      const k = s.ctx.keyring.current.privateKey;
      const hold = handJwt(ourHeader(), claims({ decision: 'HOLD', rule: 'context_risk_flag' }), k);
      expect((await run(hold, ORDER)).body.reasons.map((r) => r.code)).toEqual(['not_go']);
      const demo = (await (await s.fetch('/demo/prefinality/evaluate', { json: { rail: 'rtp', transfer: RTP } })).json()) as {
        receipt_jwt: string;
      };
      expect((await run(demo.receipt_jwt, ORDER)).body.reasons.map((r) => r.code)).toEqual(['demo_receipt']);
      const x402 = await goReceipt(X402_TRANSFER, 'x402');
      const wr = await run(x402, ORDER);
      expect(wr.body.reasons.map((r) => r.code)).toContain('wrong_rail');
      const past = Math.floor(Date.now() / 1000) - 60;
      const expired = handJwt(ourHeader(), claims({ iat: past - 600, exp: past }), k);
      expect(await run(expired, ORDER)).toMatchObject({ status: 403, body: { reasons: [{ code: 'expired' }] } });
      expect(await run(handJwt(ourHeader({ alg: 'none' }), claims()), ORDER)).toMatchObject({
        status: 403,
        body: { reasons: [{ code: 'alg_not_allowed' }] },
      });
    });

    it('clears exactly one of many concurrent orders for one receipt', async () => {
      const t = await goReceipt();
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => run(t, { ...ORDER, order_id: `concurrent-${i}` })));
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      expect(results.filter((r) => r.status === 403 && r.body.reasons[0]!.code === 'receipt_used')).toHaveLength(11);
      const jti = decodeJti(t);
      expect(await rows(s, 'prefinality_receipt_uses', 'jti = ?', [jti])).toBe(1);
    });

    it('needs a key, and names bad order fields with 400 and no write', async () => {
      const t = await goReceipt();
      const r = await s.fetch('/v1/prefinality/rtp/gate', { json: { receipt: t, payment_order: ORDER } });
      expect(r.status).toBe(401);
      const receipts = await count(s, 'receipts');
      const bad = await gate(t, { ...ORDER, amount: undefined });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toContain('payment_order.amount');
      expect(await count(s, 'receipts')).toBe(receipts);
      expect(await rows(s, 'prefinality_receipt_uses', 'jti = ?', [decodeJti(t)])).toBe(0);
    });
  });

  describe('the public log holds commitments, not the transfer or the order', () => {
    /** The receipt as anyone reads it from the log, and every text of it. */
    const logged = async (receiptId: string) => {
      const payload = (await getReceipt(s.ctx.ledger.read, receiptId))!.payload as Record<string, any>;
      return { payload, text: JSON.stringify(payload) };
    };
    /** A second implementation of the commitment: "c1:sha256:" + base64url(SHA-256(salt || canonical JSON of the value)). */
    const commitmentOf = (value: Record<string, string>, salt: string) => {
      const sorted = Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((k) => [k, value[k]]),
      );
      return 'c1:sha256:' + createHash('sha256').update(Buffer.from(salt, 'base64url')).update(JSON.stringify(sorted)).digest('base64url');
    };

    it('an evaluation: no account number, amount, counterparty nor a plain hash of them; the JWT carries the opening', async () => {
      const r = await evaluate({ rail: 'rtp', transfer: RTP });
      const body = (await r.json()) as Record<string, any>;
      const { payload, text } = await logged(body.receipt_id);
      for (const secret of [RTP.account_number, RTP.routing_number, RTP.counterparty, flatHash(RTP)])
        expect(text, secret).not.toContain(secret);
      expect(payload.subject).toBeUndefined();
      expect(payload.data.transfer).toMatch(/^c1:sha256:/);
      // The JWT still verifies with a stock library and the JWKS; it names the log's commitment and opens it.
      const jwks = (await (await s.fetch('/.well-known/prefinality-jwks.json')).json()) as { keys: JWK[] };
      const { payload: claims } = await jwtVerify(body.receipt_jwt, createLocalJWKSet(jwks), { typ: TYP, algorithms: ['EdDSA'] });
      expect(claims).toMatchObject({ transfer: RTP, transfer_hash: flatHash(RTP), transfer_commitment: payload.data.transfer });
      expect(commitmentOf(RTP, claims.transfer_salt as string)).toBe(payload.data.transfer);
      expect(body).toMatchObject({ transfer_commitment: payload.data.transfer, transfer_salt: claims.transfer_salt });
      expect(await (await verify(body.receipt_jwt)).json()).toMatchObject({ valid: true });
      // The account reads the opening too.
      const opened = await (await s.fetch(`/v1/receipts/${body.receipt_id}/openings`, { key: key.secret })).json();
      expect(opened.openings).toEqual([
        { field: 'data.transfer', commitment: payload.data.transfer, value: RTP, salt: claims.transfer_salt },
      ]);
      // A refusal is committed the same way (and its caller holds the salt from the answer).
      const held = (await (await evaluate({ rail: 'rtp', transfer: { ...RTP, amount: '20000.00' } })).json()) as Record<string, any>;
      expect(held.decision).toBe('HOLD');
      expect((await logged(held.receipt_id)).payload.data.transfer).toBe(commitmentOf({ ...RTP, amount: '20000.00' }, held.transfer_salt));
    });

    it("openings ride with the key's receipts of their batch; one kept in the table of earlier releases still opens, and no other account reads either", async () => {
      const body = (await (await evaluate({ rail: 'rtp', transfer: RTP })).json()) as Record<string, any>;
      const index = Number(/^rcpt_(\d+)_/.exec(body.receipt_id)![1]);
      const listed = await s.ctx.ledger.read.execute({
        sql: 'SELECT openings FROM key_receipts WHERE key_id = ? AND first <= ? ORDER BY first DESC LIMIT 1',
        args: [key.id, index],
      });
      expect(JSON.parse(String(listed.rows[0]!.openings))[index]).toEqual([['data.transfer', body.transfer_salt, RTP]]);
      // Moved to where a release before this one kept it: still opened, from there.
      await s.ctx.ledger.write(async (tx) => {
        await tx.execute({ sql: 'UPDATE key_receipts SET openings = NULL WHERE key_id = ? AND first <= ?', args: [key.id, index] });
        await tx.execute({
          sql: 'INSERT INTO commitment_openings (receipt_id, field, account_id, commitment, salt, value, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
          args: [
            body.receipt_id,
            'data.transfer',
            key.accountId,
            body.transfer_commitment,
            body.transfer_salt,
            JSON.stringify(RTP),
            new Date().toISOString(),
          ],
        });
      });
      const opened = await (await s.fetch(`/v1/receipts/${body.receipt_id}/openings`, { key: key.secret })).json();
      expect(opened.openings).toEqual([
        { field: 'data.transfer', commitment: body.transfer_commitment, value: RTP, salt: body.transfer_salt },
      ]);
      const refused = await s.fetch(`/v1/receipts/${body.receipt_id}/openings`, { key: other.secret });
      expect(refused.status).toBe(404);
      expect((await refused.json()).code).toBe('no_openings');
    });

    it('a JWT whose salt does not open its commitment is refused; one without either claim (issued before) still verifies', async () => {
      const k = s.ctx.keyring.current.privateKey;
      const check = async (token: string) => (await verify(token)).json();
      const salt = Buffer.alloc(32, 7).toString('base64url');
      expect(
        await check(handJwt(ourHeader(), claims({ transfer_commitment: commitmentOf(RTP, salt), transfer_salt: salt }), k)),
      ).toMatchObject({ valid: true });
      expect(
        await check(
          handJwt(ourHeader(), claims({ transfer_commitment: commitmentOf({ ...RTP, amount: '1.00' }, salt), transfer_salt: salt }), k),
        ),
      ).toMatchObject({ valid: false, reason: 'claim_invalid' });
      expect(await check(handJwt(ourHeader(), claims({ transfer_commitment: commitmentOf(RTP, salt) }), k))).toMatchObject({
        valid: false,
        reason: 'claim_invalid',
      });
      expect(await check(handJwt(ourHeader(), claims(), k))).toMatchObject({ valid: true });
    });

    it('the RTP gate still matches the order for the key that holds it; its receipt commits to the order', async () => {
      const t = await goReceipt();
      const r = await gate(t, { ...ORDER, order_id: 'psp-order-5521' });
      expect(r.status).toBe(200);
      const body = (await r.json()) as Record<string, any>;
      const { payload, text } = await logged(body.receipt_id);
      for (const secret of [ORDER.account_number, ORDER.counterparty, 'psp-order-5521', body.order_hash])
        expect(text, secret).not.toContain(secret);
      expect(payload.data.order).toMatch(/^c1:sha256:/);
      const opened = await (await s.fetch(`/v1/receipts/${body.receipt_id}/openings`, { key: key.secret })).json();
      expect(opened.openings).toMatchObject([
        { field: 'data.order', commitment: payload.data.order, value: { ...ORDER, order_id: 'psp-order-5521' } },
      ]);
    });
  });

  describe('demo', () => {
    it('needs no key, marks receipts demo, charges nothing, and honours drill fuses', async () => {
      const meter = await count(s, 'meter');
      const r = await s.fetch('/demo/prefinality/evaluate', { json: { rail: 'rtp', transfer: RTP } });
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit-policy')).toMatch(/^"demo"/);
      const b = (await r.json()) as Record<string, any>;
      expect(b).toMatchObject({ decision: 'GO', demo: true, charge: null });
      const { payload } = await jwtVerify(b.receipt_jwt, createRemoteJWKSet(new URL(s.url + '/.well-known/prefinality-jwks.json')), {
        typ: TYP,
      });
      expect(payload).toMatchObject({ demo: true, sub: 'demo' });
      expect((await getReceipt(s.ctx.ledger.read, b.receipt_id))!.payload.key_id).toBeUndefined();
      expect((await getReceipt(s.ctx.ledger.read, b.receipt_id))!.payload.demo).toBe(true);
      // fuse_drill_dead comes with the database (migration 0020).
      const dead = await s.fetch('/demo/prefinality/evaluate', {
        json: { rail: 'rtp', transfer: RTP, context: { fuse_id: 'fuse_drill_dead' } },
      });
      expect(dead.status).toBe(403);
      // A keyed caller's own fuse is invisible to the demo.
      const own = await s.fetch('/demo/prefinality/evaluate', { json: { rail: 'rtp', transfer: RTP, context: { fuse_id: 'fuse_live1' } } });
      expect(((await own.json()) as { rule: { id: string } }).rule.id).toBe('fuse_unknown');
      expect(await count(s, 'meter')).toBe(meter);
    });
  });
});

function decodeJti(token: string): string {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).jti as string;
}

describe('pre-finality with x402 configured, and the demo rate limit', () => {
  const vectors = JSON.parse(readFileSync(new URL('./vectors/x402-wire-examples.json', import.meta.url), 'utf8'));
  const X402_ENV = {
    X402_PAY_TO: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
    X402_NETWORK: 'eip155:84532',
    X402_ASSET: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
    // Nothing listens there: a payment that gets as far as the facilitator finds it unavailable (test/x402.test.ts pays for real).
    X402_FACILITATOR_URL: 'http://127.0.0.1:9',
    X402_FACILITATOR_TIMEOUT_MS: '2000',
    DEMO_RATE_LIMIT: '2',
  };
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(X402_ENV);
  });
  afterAll(() => s.stop());
  const body = { rail: 'x402', transfer: X402_TRANSFER };

  it('answers 402 in the x402 wire format: v2 PAYMENT-REQUIRED header and v1 body', async () => {
    const r = await s.fetch('/v1/prefinality/evaluate', { json: body });
    expect(r.status).toBe(402);
    const v2 = JSON.parse(Buffer.from(r.headers.get('payment-required')!, 'base64').toString());
    const want2 = vectors.v2['PAYMENT-REQUIRED.decoded'];
    expect(Object.keys(v2).sort()).toEqual(Object.keys(want2).sort());
    expect(Object.keys(v2.accepts[0]).sort()).toEqual(Object.keys(want2.accepts[0]).sort());
    expect(v2).toMatchObject({
      x402Version: 2,
      resource: { url: `${s.config.BASE_URL}/v1/prefinality/evaluate`, mimeType: 'application/json' },
      // the price is the GO toll (execute_gate, 0.10 USD) in USDC's 6-decimal units
      accepts: [
        {
          scheme: 'exact',
          network: 'eip155:84532',
          amount: '100000',
          asset: X402_ENV.X402_ASSET,
          payTo: X402_ENV.X402_PAY_TO,
          extra: { name: 'USDC', version: '2' },
        },
      ],
    });
    const v1 = (await r.json()) as Record<string, any>;
    const want1 = vectors.v1['402.body'];
    expect(Object.keys(v1).sort()).toEqual(Object.keys(want1).sort());
    expect(Object.keys(v1.accepts[0]).sort()).toEqual(Object.keys(want1.accepts[0]).sort());
    expect(v1.accepts[0]).toMatchObject({
      network: 'base-sepolia',
      maxAmountRequired: '100000',
      resource: `${s.config.BASE_URL}/v1/prefinality/evaluate`,
    });
  });

  it('checks a presented payment before the facilitator: wrong price 402, malformed 402, wrong signed terms 402; nothing charged; a key still works', async () => {
    const receipts = () => receiptCount(s.ctx.ledger.read);
    const before = await receipts();
    const cases: Array<[string, string, number, string]> = [
      // the spec's example pays 0.01 USDC to its own payee: not what this resource asks
      ['payment-signature', vectors.v2['PAYMENT-SIGNATURE'], 402, 'x402_payment_mismatch'],
      ['x-payment', '%%%', 402, 'x402_payment_malformed'],
      // a v1 payment on the right network, but its signed authorization pays the spec's payee 0.01:
      // the gate's own terms refuse it, so the facilitator (down here) is never asked
      ['x-payment', vectors.v1['X-PAYMENT'], 402, 'x402_payment_mismatch'],
    ];
    for (const [h, v, status, code] of cases) {
      const r = await s.fetch('/v1/prefinality/evaluate', { json: body, headers: { [h]: v } });
      expect(r.status, code).toBe(status);
      expect(((await r.json()) as { code: string }).code).toBe(code);
    }
    expect(await receipts()).toBe(before);
    const k = await s.newKey();
    expect((await s.fetch('/v1/prefinality/evaluate', { json: body, key: k.secret })).status).toBe(200);
    const m = (await (await s.fetch('/.well-known/prefinality.json')).json()) as Record<string, any>;
    expect(m.x402_configured).toBe(true);
  });

  it('rate limits the demo', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await s.fetch('/demo/prefinality/evaluate', { json: body })).status);
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('refuses a partial x402 configuration at start-up, naming the missing variables', () => {
    expect(() => loadConfig({ X402_PAY_TO: '0xabc' })).toThrow(/X402_NETWORK[\s\S]*X402_ASSET[\s\S]*X402_FACILITATOR_URL/);
  });
});
