/**
 * Migration 0290: a sealed oracle aggregate's row no longer keeps a copy of
 * its result (its receipt's data). On the database main wrote before tiles
 * (test/fixtures/main-7b6fb56.*), with an aggregate stored as that code stored
 * it, the row keeps everything a trigger fire reads of it by id.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { getAggregate } from '../src/ledger/oracle.ts';
import { startOnOldMain } from './support/old-main.ts';
import { verifiedReceiptPayload } from './support/receipts.ts';
import type { TestServer } from './support/server.ts';

let s: TestServer;
const stored = {
  id: 'agg_fixture',
  key_id: 'key_owner',
  metric: 'model_drift_score',
  status: 'CONSENSUS',
  value: '101.5',
  receipt_id: 'rcpt_fixture',
  created_at: '2026-11-20T10:00:00.000Z',
} as const;

beforeAll(async () => {
  s = await startOnOldMain(async (db) => {
    await db.execute({
      sql: 'INSERT INTO oracle_aggregates (id, key_id, metric, status, value, result, receipt_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      args: [
        stored.id,
        stored.key_id,
        stored.metric,
        stored.status,
        stored.value,
        JSON.stringify({ sources: 4, status: 'CONSENSUS', value: '101.5' }),
        stored.receipt_id,
        stored.created_at,
      ],
    });
  });
}, 60_000);
afterAll(() => s.stop());

it('drops the copy of the result and keeps what a fire reads of the aggregate', async () => {
  const columns = (await s.ctx.ledger.read.execute("SELECT name FROM pragma_table_info('oracle_aggregates')")).rows.map((r) =>
    String(r.name),
  );
  expect(columns).toEqual(['id', 'key_id', 'metric', 'status', 'value', 'receipt_id', 'created_at']);
  expect(await getAggregate(s.ctx.ledger.read, stored.id)).toEqual(stored);
});

it('records a new aggregate without it: the result is read from its receipt', async () => {
  const { secret } = await s.newKey('oracle');
  const readings = ['network_a', 'network_b', 'network_c'].map((source_id, i) => ({ source_id, value: String(100 + i) }));
  const res = await s.fetch('/api/v1/oracle/aggregate', { key: secret, json: { metric: 'after_0290', readings } });
  expect(res.status).toBe(200);
  const body = await res.json();
  expect(await getAggregate(s.ctx.ledger.read, body.aggregate_id)).toMatchObject({
    metric: 'after_0290',
    status: body.status,
    value: body.value,
    receipt_id: body.receipt_id,
  });
  const payload = await verifiedReceiptPayload(s, body.receipt_id);
  expect(payload.data).toMatchObject({
    metric: 'after_0290',
    status: body.status,
    value: body.value,
    kept: body.kept,
    trimmed: body.trimmed,
    policy: body.policy,
  });
});
