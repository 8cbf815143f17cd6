import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

// A second implementation of the chain rule and canonical JSON (sorted keys, no spaces).
const canon = (v: unknown): string =>
  v === null || typeof v !== 'object'
    ? JSON.stringify(v)
    : Array.isArray(v)
      ? `[${v.map(canon).join(',')}]`
      : `{${Object.keys(v)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canon((v as Record<string, unknown>)[k])}`)
          .join(',')}}`;
const link = (prev: string, rec: unknown) =>
  createHash('sha256')
    .update(Buffer.from(prev, 'hex'))
    .update(createHash('sha256').update(canon(rec)).digest())
    .digest('hex');

describe('Depository attestation: five event types, custody parity, hash chain', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  const post = (json: unknown, k = key.secret) => s.fetch('/api/v1/depository/attest', { method: 'POST', json, key: k });
  const meter = async () => (await chargesOf(s.ctx.ledger.read, key.id)).map((r) => [r.sku, Number(r.amount_micros)]);

  beforeAll(async () => {
    s = await startTestServer();
    key = await s.newKey('custodian');
  });
  afterAll(() => s.stop());

  it('tokenize, mint, split, burn and transfer keep parity; each extends the chain; each is charged dtcc_attest 0.50', async () => {
    const events = [
      [{ event_type: 'tokenize', asset_id: 'ISIN1', units: 1000, custodian: 'cust-a' }, 1000],
      [{ event_type: 'mint', asset_id: 'ISIN1', units: 500, custody_ref: 'dep-7', attested_custody_units: 1500 }, 1500],
      [{ event_type: 'corporate_action', asset_id: 'ISIN1', action: 'split', split_ratio: 2 }, 3000],
      [{ event_type: 'corporate_action', asset_id: 'ISIN1', action: 'dividend' }, 3000],
      [{ event_type: 'burn', asset_id: 'ISIN1', units: 1000 }, 2000],
      [{ event_type: 'custody_transfer', asset_id: 'ISIN1', from_custodian: 'cust-a', to_custodian: 'cust-b' }, 2000],
    ] as const;
    let prev = '0'.repeat(64);
    for (const [i, [body, units]] of events.entries()) {
      const r = await post(body);
      expect(r.status, body.event_type).toBe(200);
      const b = await r.json();
      expect(b.parity).toEqual({ holds: true, custody_units: units, token_supply: units });
      expect(b.chain.seq).toBe(i + 1);
      expect(b.chain.prev_hash).toBe(prev);
      // The chain is recomputed from the public receipts alone: each link hashes the event as the log shows it.
      const payload = (await (await s.fetch(`/v1/receipts/${b.receipt_id}`, { headers: { accept: 'application/json' } })).json()).payload;
      expect(payload.data).toMatchObject({
        seq: i + 1,
        prev_hash: prev,
        chain_hash: b.chain.chain_hash,
        chain_rule: 'depository-chain-v2',
      });
      expect(b.chain.chain_hash).toBe(link(prev, { ...payload.data.event, seq: i + 1 }));
      prev = b.chain.chain_hash;
      expect(b.charge).toEqual({ sku: 'dtcc_attest', amount_usd: '0.50', nap: false });
    }
    const last = await (await post({ event_type: 'mint', asset_id: 'ISIN1', units: 1, custody_ref: 'x' })).json();
    expect(last.before).toEqual({ custody_units: 2000, token_supply: 2000, custodian: 'cust-b' });
    expect((await meter()).every(([sku, m]) => sku === 'dtcc_attest' && m === 500_000)).toBe(true);
    expect(await meter()).toHaveLength(7);
  });

  it('the public receipt commits to the asset id, the custodians and the custody reference; the account opens them', async () => {
    const r = await (
      await post({ event_type: 'tokenize', asset_id: 'US0378331005', units: 10, custodian: 'custodian-bank-of-zug' })
    ).json();
    const m = await (await post({ event_type: 'mint', asset_id: 'US0378331005', units: 5, custody_ref: 'vault-ledger-7731' })).json();
    const t = await (
      await post({
        event_type: 'custody_transfer',
        asset_id: 'US0378331005',
        from_custodian: 'custodian-bank-of-zug',
        to_custodian: 'second-street-trust',
      })
    ).json();
    for (const [b, text] of [
      [r, ['US0378331005', 'custodian-bank-of-zug']],
      [m, ['vault-ledger-7731']],
      [t, ['second-street-trust']],
    ] as const) {
      const stored = await (await s.fetch(`/v1/receipts/${b.receipt_id}`, { headers: { accept: 'application/json' } })).json();
      const shown = JSON.stringify(stored);
      for (const x of text) expect(shown, x).not.toContain(x);
      expect(stored.payload.subject).toMatch(/^c1:sha256:/);
      // The fingerprint is over the receipt as committed, not a plain hash of the request (which a guess could match).
      expect(stored.payload.fingerprint).toBe(
        createHash('sha256')
          .update(canon({ subject: stored.payload.subject, data: stored.payload.data }))
          .digest('hex'),
      );
    }
    const opened = await (await s.fetch(`/v1/receipts/${t.receipt_id}/openings`, { key: key.secret })).json();
    const byField = Object.fromEntries(
      opened.openings.map((o: { field: string; value: unknown; salt: string; commitment: string }) => [o.field, o]),
    );
    expect(Object.keys(byField).sort()).toEqual([
      'data.after.custodian',
      'data.event.asset_id',
      'data.event.from_custodian',
      'data.event.to_custodian',
      'subject',
    ]);
    expect(byField['data.event.to_custodian'].value).toBe('second-street-trust');
    // A second implementation of the commitment: SHA-256(salt || canonical JSON of the value).
    const o = byField['data.event.asset_id'];
    expect('c1:sha256:' + createHash('sha256').update(Buffer.from(o.salt, 'base64url')).update(canon(o.value)).digest('base64url')).toBe(
      o.commitment,
    );
    expect(o.value).toBe('US0378331005');
  });

  it('refusals: breaking parity, burning past the supply, a wrong custodian, an unknown asset; nothing written or charged', async () => {
    const before = await meter();
    const cases = [
      [{ event_type: 'mint', asset_id: 'ISIN1', units: 10, custody_ref: 'r', attested_custody_units: 2005 }, 409, 'parity_violation'],
      [{ event_type: 'burn', asset_id: 'ISIN1', units: 999999 }, 409, 'insufficient_supply'],
      [{ event_type: 'custody_transfer', asset_id: 'ISIN1', from_custodian: 'cust-a', to_custodian: 'cust-c' }, 409, 'custodian_mismatch'],
      [{ event_type: 'mint', asset_id: 'NOPE', units: 1, custody_ref: 'r' }, 404, 'unknown_asset'],
    ] as const;
    for (const [body, status, code] of cases) {
      const r = await post(body);
      expect(r.status, code).toBe(status);
      expect((await r.json()).code).toBe(code);
    }
    expect(await meter()).toEqual(before);
    const row = (await s.ctx.ledger.read.execute("SELECT custody_units, token_supply, seq FROM depository_assets WHERE asset_id = 'ISIN1'"))
      .rows[0]!;
    expect([Number(row.custody_units), Number(row.token_supply), Number(row.seq)]).toEqual([2001, 2001, 7]);
    // another key's asset of the same id is a different twin
    const other = await s.newKey('other');
    expect((await post({ event_type: 'burn', asset_id: 'ISIN1', units: 1 }, other.secret)).status).toBe(404);
  });

  it('bad input is 400 naming the field', async () => {
    for (const [body, field] of [
      [{ event_type: 'melt', asset_id: 'A', units: 1 }, 'event_type'],
      [{ event_type: 'mint', asset_id: 'A', units: 1 }, 'custody_ref'],
      [{ event_type: 'burn', asset_id: 'A', units: 0 }, 'units'],
      [{ event_type: 'burn', asset_id: 'A', units: 1.5 }, 'units'],
      [{ event_type: 'corporate_action', asset_id: 'A', action: 'split' }, 'split_ratio'],
      [{ event_type: 'corporate_action', asset_id: 'A', action: 'dividend', split_ratio: 2 }, 'split_ratio'],
    ] as const) {
      const r = await post(body);
      expect(r.status, field).toBe(400);
      expect((await r.json()).errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });
});
