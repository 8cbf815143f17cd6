import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

async function meterRows(s: TestServer, keyId: string) {
  return (await chargesOf(s.ctx.ledger.read, keyId)).map((r) => ({ sku: r.sku, micros: r.amount_micros, nap: r.nap, ref: r.ref }));
}

describe('PDTR: bind-payment and scale', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  let other: { id: string; secret: string };
  const post = (path: string, json: unknown, k = key.secret) => s.fetch(path, { method: 'POST', json, key: k });
  const hash = (c: string) => c.repeat(64);

  beforeAll(async () => {
    s = await startTestServer();
    key = await s.newKey('agent');
    other = await s.newKey('other');
  });
  afterAll(() => s.stop());

  it('binds a payment hash to an action ref, sealed and charged pdtr_bind 0.15', async () => {
    const r = await post('/api/v1/bind-payment', { payment_hash: hash('A'), action_ref: 'order-1' });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b).toMatchObject({
      payment_hash: '0x' + hash('a'),
      action_ref: 'order-1',
      rail: 'x402_stablecoin',
      charge: { sku: 'pdtr_bind', amount_usd: '0.15', nap: false },
    });
    expect((await meterRows(s, key.id)).at(-1)).toEqual({ sku: 'pdtr_bind', micros: 150_000, nap: 0, ref: b.receipt_id });
    const e = await (await s.fetch(new URL(b.verify_url).pathname)).json();
    expect(e.verification).toEqual({ signature: true, inclusion: true });
  });

  it('one binding per payment hash: a second (any case, any key) is 409 and charges nothing', async () => {
    const before = await meterRows(s, key.id);
    const again = await post('/api/v1/bind-payment', { payment_hash: '0x' + hash('a'), action_ref: 'order-2' });
    expect(again.status).toBe(409);
    const p = await again.json();
    expect(p).toMatchObject({ code: 'payment_already_bound', bound_to: { action_ref: 'order-1' } });
    const foreign = await post('/api/v1/bind-payment', { payment_hash: hash('a'), action_ref: 'x' }, other.secret);
    expect(foreign.status).toBe(409);
    expect((await foreign.json()).bound_to).toBeUndefined();
    expect(await meterRows(s, key.id)).toEqual(before);
    expect(await meterRows(s, other.id)).toEqual([]);
  });

  it('concurrent binds of one payment hash: exactly one wins', async () => {
    const rs = await Promise.all(
      Array.from({ length: 8 }, (_, i) => post('/api/v1/bind-payment', { payment_hash: hash('b'), action_ref: `race-${i}` })),
    );
    const statuses = rs.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    const n = await s.ctx.ledger.read.execute({
      sql: 'SELECT COUNT(*) AS n FROM pdtr_bindings WHERE payment_hash = ?',
      args: ['0x' + hash('b')],
    });
    expect(Number(n.rows[0]!.n)).toBe(1);
    expect((await meterRows(s, key.id)).filter((r) => r.sku === 'pdtr_bind')).toHaveLength(2);
  });

  it('bad input is 400 naming the field; an unknown action receipt is 404; both change nothing', async () => {
    const before = await meterRows(s, key.id);
    for (const [body, field] of [
      [{ payment_hash: 'abc', action_ref: 'o' }, 'payment_hash'],
      [{ payment_hash: hash('c'), action_ref: '' }, 'action_ref'],
      [{ payment_hash: hash('c'), action_ref: 'o', rail: 'paypal' }, 'rail'],
      [{ payment_hash: hash('c') }, 'action_ref'],
    ] as const) {
      const r = await post('/api/v1/bind-payment', body);
      expect(r.status, field).toBe(400);
      expect((await r.json()).errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const r = await post('/api/v1/bind-payment', { payment_hash: hash('c'), action_ref: 'o', receipt_id: 'rcpt_missing' });
    expect(r.status).toBe(404);
    expect(await meterRows(s, key.id)).toEqual(before);
    expect(Number((await s.ctx.ledger.read.execute('SELECT COUNT(*) AS n FROM pdtr_bindings')).rows[0]!.n)).toBe(2);
    expect((await s.fetch('/api/v1/bind-payment', { method: 'POST', json: { payment_hash: hash('d'), action_ref: 'o' } })).status).toBe(
      401,
    );
  });

  it('scale: bindings x pdtr_bind, illustrative', async () => {
    const d = await (await s.fetch('/api/v1/pdtr/scale?bindings_per_month=1000')).json();
    expect(d).toMatchObject({ layer: 'pdtr', illustrative: true, monthly_usd: '150.00', annual_usd: '1800.00' });
    expect(d.note).toMatch(/illustrative/i);
    expect((await s.fetch('/api/v1/pdtr/scale?bindings_per_month=1.5')).status).toBe(400);
  });

  it("the public receipt commits to the action ref (the caller's own text); the account opens it", async () => {
    const b = await (await post('/api/v1/bind-payment', { payment_hash: hash('c'), action_ref: 'invoice-2026-0042-acme' })).json();
    const stored = await (await s.fetch(`/v1/receipts/${b.receipt_id}`, { headers: { accept: 'application/json' } })).json();
    expect(JSON.stringify(stored)).not.toContain('invoice-2026-0042-acme');
    expect(stored.payload.data).toMatchObject({ payment_hash: '0x' + hash('c'), action_ref: expect.stringMatching(/^c1:sha256:/) });
    // Nor a plain hash of the payment and the reference, which a guess of the reference could match.
    const plain = createHash('sha256')
      .update(JSON.stringify({ action_ref: 'invoice-2026-0042-acme', payment_hash: '0x' + hash('c') }))
      .digest('hex');
    expect(stored.payload.fingerprint).not.toBe(plain);
    const opened = await (await s.fetch(`/v1/receipts/${b.receipt_id}/openings`, { key: key.secret })).json();
    expect(opened.openings).toMatchObject([
      { field: 'data.action_ref', commitment: stored.payload.data.action_ref, value: 'invoice-2026-0042-acme' },
    ]);
    expect((await s.fetch(`/v1/receipts/${b.receipt_id}/openings`, { key: other.secret })).status).toBe(404);
  });
});
