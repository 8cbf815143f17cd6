/**
 * What an answer shows about money is what was charged, labelled for what it
 * covers (issue 45): a welded act shows one list of its charges.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

type J = Record<string, any>;

let s: TestServer;
let key: { id: string; secret: string; accountId: string };
let fuse: string;
const post = async (path: string, json: unknown, k = key.secret) => {
  const r = await s.fetch(path, { method: 'POST', json, key: k });
  return { status: r.status, body: (await r.json()) as J };
};

beforeAll(async () => {
  s = await startTestServer();
  key = await s.newKey('exact-answers');
  fuse = (await post('/v1/fuses', { state: 'LIVE' })).body.fuse_id;
});
afterAll(() => s.stop());

describe('a welded act shows one list of what it charged', () => {
  it('an act that acted: charges execute_gate 0.10 and seal 0.05, no single charge beside them, and they are the meter lines', async () => {
    const { status, body } = await post('/v1/act', { fuse_id: fuse, action: { kind: 'pay' } });
    expect(status).toBe(200);
    expect(body).not.toHaveProperty('charge');
    expect(body.charges).toEqual([
      { sku: 'execute_gate', amount_usd: '0.10', nap: false },
      { sku: 'seal', amount_usd: '0.05', nap: false },
    ]);
    const lines = (await chargesOf(s.ctx.ledger.read, key.id)).filter((c) => c.ref === body.receipt_id).map((c) => [c.sku, c.amount_micros]);
    expect(lines).toEqual([['execute_gate', 100_000], ['seal', 50_000]]);
  });

  it('a refused act: the NAP hold alone', async () => {
    const dead = (await post('/v1/fuses', { state: 'LIVE' })).body.fuse_id;
    await post(`/v1/fuses/${dead}/dead`, undefined);
    const { status, body } = await post('/v1/act', { fuse_id: dead, action: { kind: 'pay' } });
    expect(status).toBe(200);
    expect(body).toMatchObject({ acted: false, charges: [{ sku: 'hold', amount_usd: '0.50', nap: true }] });
    expect(body).not.toHaveProperty('charge');
  });
});
