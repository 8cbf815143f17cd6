import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli.ts';
import { startTestServer, testEnv, tempDir, type TestServer } from './support/server.ts';

describe('key roles: the operator holds the kill switch', () => {
  let s: TestServer;
  let agent: { id: string; secret: string };
  let operator: { id: string; secret: string; accountId: string };

  beforeAll(async () => {
    s = await startTestServer();
    operator = await s.newKey('operator');
    agent = await s.newKey('agent', 1000, 'agent', operator.accountId);
  });
  afterAll(() => s.stop());

  const post = (path: string, key: string, json?: unknown) =>
    s.fetch(path, { method: 'POST', key, ...(json !== undefined ? { json } : {}) });

  it('an agent key may blow its fuse but never charge it back: 403, the next hop fails closed, an operator key of the account revives it', async () => {
    const created = await post('/v1/fuses', operator.secret, { state: 'LIVE', label: 'agent fuse' });
    expect(created.status).toBe(201);
    const fuseId = (await created.json()).fuse_id as string;
    expect((await (await post('/v1/fuse/hop', agent.secret, { fuse_id: fuseId })).json()).decision).toBe('PERMIT');
    const blown = await post(`/v1/fuses/${fuseId}/dead`, agent.secret);
    expect(blown.status).toBe(200);
    expect((await blown.json()).state).toBe('DEAD');

    const charge = await post(`/v1/fuses/${fuseId}/charge`, agent.secret);
    expect(charge.status).toBe(403);
    expect(charge.headers.get('content-type')).toContain('application/problem+json');
    const problem = await charge.json();
    expect(problem.code).toBe('operator_key_required');
    expect(problem.required_role).toBe('operator');

    const hop = await (await post('/v1/fuse/hop', agent.secret, { fuse_id: fuseId })).json();
    expect(hop).toMatchObject({ state: 'DEAD', ok: false, verdict: false, decision: 'DENY' });

    const revived = await post(`/v1/fuses/${fuseId}/charge`, operator.secret);
    expect(revived.status).toBe(200);
    expect(await revived.json()).toMatchObject({ state: 'LIVE', previous_state: 'DEAD' });
    expect((await (await post('/v1/fuse/hop', agent.secret, { fuse_id: fuseId })).json()).decision).toBe('PERMIT');
  });

  it('an agent key cannot charge a licence parent, create a fuse or subscribe a webhook', async () => {
    const lic = await post('/v1/pas/licenses/lic_roles/charge', agent.secret);
    expect(lic.status).toBe(403);
    expect((await lic.json()).code).toBe('operator_key_required');
    expect((await post('/v1/fuses', agent.secret, { state: 'LIVE' })).status).toBe(403);
    expect((await post('/signal/trigger/webhooks', agent.secret, { url: 'https://hooks.fusegate.invalid/hook' })).status).toBe(403);
    // The operator key may do all of it.
    expect((await post('/v1/pas/licenses/lic_roles/charge', operator.secret)).status).toBe(200);
    expect((await post('/v1/fuses', operator.secret, { state: 'LIVE' })).status).toBe(201);
  });

  it('an annual or account-level commitment needs an operator key: an agent key gets 403 and nothing is charged or written', async () => {
    const month = '2026-02';
    const agent = await s.newKey('committing agent', 1000, 'agent', operator.accountId);
    const commitments: Array<[string, unknown]> = [
      ['/api/v1/issuer-pays/listings', { vendor: 'roles-audit', name: 'Roles Audit' }],
      ['/api/v1/gam/credits/purchase', { sku: 'clearing_quarterly' }],
      ['/signal/mandates', { metric: 'model_drift_score' }],
      ['/api/v1/relay/enroll', { partner_id: 'roles-brokers', name: 'Roles Brokers' }],
      ['/v1/operator/checkout', { month }],
    ];
    for (const [path, body] of commitments) {
      const r = await post(path, agent.secret, body);
      expect(r.status, path).toBe(403);
      expect((await r.json()).code, path).toBe('operator_key_required');
    }
    const written = async () =>
      (
        await s.ctx.ledger.read.execute(
          `SELECT (SELECT COUNT(*) FROM issuer_listings) + (SELECT COUNT(*) FROM gam_grants) + (SELECT COUNT(*) FROM signal_mandates)
                + (SELECT COUNT(*) FROM relay_partners) + (SELECT COUNT(*) FROM operator_checkouts) + (SELECT COUNT(*) FROM usage_counters WHERE key_id = '${agent.id}') AS n`,
        )
      ).rows[0]!.n;
    expect(Number(await written())).toBe(0);
    // The declarations say so, for each of them (the role is read by OpenAPI, MCP and the client from the same place).
    const doc = await (await s.fetch('/openapi.json')).json();
    for (const [path] of commitments) expect(doc.paths[path].post['x-key-role'], path).toBe('operator');

    // An agent key's month is checked out by an operator key of its account, and billed to the agent key.
    await s.ctx.ledger.write((tx) =>
      tx.execute({ sql: 'INSERT INTO hop_counters (key_id, day, hops) VALUES (?, ?, 3)', args: [agent.id, `${month}-10`] }),
    );
    const checkout = await post('/v1/operator/checkout', operator.secret, { month, key_id: agent.id });
    expect(checkout.status).toBe(201);
    const c = await checkout.json();
    expect(c).toMatchObject({ month, key_id: agent.id, hops: 3, per_hop_usd: '0.10', charge: { sku: 'operator_checkout' } });
    const billed = await s.ctx.ledger.read.execute({ sql: "SELECT key_id FROM usage_counters WHERE sku = 'operator_checkout'" });
    expect(billed.rows.map((r) => r.key_id)).toEqual([agent.id]);
    const receipt = await (await s.fetch(`/v1/receipts/${c.receipt_id}`, { headers: { accept: 'application/json' } })).json();
    expect(receipt.payload).toMatchObject({ kind: 'operator_checkout', key_id: agent.id, data: { checked_out_by: operator.id } });
    // A key of another account is not this operator's to check out: 404, as if it did not exist.
    const stranger = await s.newKey('stranger');
    const foreign = await post('/v1/operator/checkout', operator.secret, { month, key_id: stranger.id });
    expect(foreign.status).toBe(404);
    expect((await foreign.json()).code).toBe('unknown_key');
  });

  it('OpenAPI and MCP discovery say which role each operation needs', async () => {
    const doc = await (await s.fetch('/openapi.json')).json();
    const charge = doc.paths['/v1/fuses/{fuse_id}/charge'].post;
    expect(charge['x-key-role']).toBe('operator');
    expect(Object.keys(charge.responses)).toContain('403');
    expect(doc.paths['/v1/fuses/{fuse_id}/dead'].post['x-key-role']).toBe('agent');
    expect(doc.paths['/v1/fuse/hop'].post['x-key-role']).toBe('agent');
  });

  it(
    'the CLI creates operator keys by default, agent keys with --role agent, and refuses anything else',
    { timeout: 120_000 },
    async () => {
      const dir = tempDir();
      const cli = async (...args: string[]) => {
        const r = await runCli(args, testEnv(dir));
        return { ...r, status: r.code };
      };
      const op = await cli('keys', 'create', '--name', 'ops', '--json');
      expect(op.status, op.stderr).toBe(0);
      expect(JSON.parse(op.stdout).role).toBe('operator');
      const ag = await cli('keys', 'create', '--name', 'bot', '--role', 'agent', '--json');
      expect(JSON.parse(ag.stdout).role).toBe('agent');
      const bad = await cli('keys', 'create', '--name', 'x', '--role', 'admin');
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain('--role must be agent or operator');
      const typo = await cli('keys', 'create', '--name', 'x', '--rol', 'agent');
      expect(typo.status).toBe(2);
      expect(typo.stderr).toContain("Unknown option '--rol'");
      rmSync(dir, { recursive: true, force: true });
    },
  );
});
