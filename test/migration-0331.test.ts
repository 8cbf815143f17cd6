/**
 * Migration 0331: an ASTL entity a keyless x402 payer published before issue 45
 * was the public's (owner ''), so any other payer could publish its next
 * version. A database holding such an entity (made here by a real paid publish,
 * its owner then set back to the public's as that code stored it) gives it to
 * the payer of its first version: that payer publishes on, another is refused.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, tempDir, type TestServer } from './support/server.ts';
import { approveAllEnv, newPayer, signPayment, startApproveAll, type ApproveAll } from './support/x402-approve-all.ts';

let s: TestServer;
let fac: ApproveAll;
const first = newPayer();
const second = newPayer();

const publish = async (who: ReturnType<typeof newPayer>, body: unknown) => {
  const path = '/api/v1/astl/publish';
  const header = await signPayment({ payer: who, price: 250_000n, resource: s.config.BASE_URL + path });
  return s.fetch(path, { json: body, headers: { 'payment-signature': header } });
};

beforeAll(async () => {
  fac = await startApproveAll();
  const dir = tempDir();
  s = await startTestServer(approveAllEnv(fac.url), dir);
  expect((await publish(first, { entity: 'agent:legacy', preset: 'agentic' })).status).toBe(201);
  expect((await publish(first, { entity: 'agent:legacy', act_kinds: ['pay'] })).status).toBe(201);
  // As the code before 0331 left it: the entity the public's, the migration not applied.
  await s.ctx.ledger.write(async (tx) => {
    await tx.execute("UPDATE astl_entities SET key_id = '' WHERE entity = 'agent:legacy'");
    await tx.execute("DELETE FROM schema_migrations WHERE version = '0331_astl_payer_owners'");
  });
  await s.close();
  s = await startTestServer(approveAllEnv(fac.url), dir);
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await fac?.close();
});

it('gives the entity to the payer of its first version', async () => {
  const head = (await s.ctx.ledger.read.execute("SELECT key_id, version FROM astl_entities WHERE entity = 'agent:legacy'")).rows[0]!;
  expect({ ...head }).toEqual({ key_id: `x402:eip155:84532:${first.address.toLowerCase()}`, version: 2 });
});

it('that payer publishes the next version; another payer is refused and pays nothing', async () => {
  const settles = fac.calls.settle;
  const refused = await publish(second, { entity: 'agent:legacy', preset: 'agentic' });
  expect(refused.status).toBe(403);
  expect((await refused.json()).code).toBe('entity_owned');
  expect(fac.calls.settle).toBe(settles);
  const next = await publish(first, { entity: 'agent:legacy', preset: 'hiring' });
  expect(next.status).toBe(201);
  expect((await next.json()).manifest.version).toBe(3);
});
