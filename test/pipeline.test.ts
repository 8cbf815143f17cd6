/**
 * The write path of issue 13: the embedded connection's prepared statements,
 * the batch seal of the receipts log (one signature per batch, never per
 * receipt), the one stale-state retry that ends in a 409, never a 500, and
 * the keyed act routes' declared prefix (key, Idempotency-Key, body, role, after).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { H3 } from 'h3';
import { z } from 'zod';
import {} from '../src/api/act.ts';
import { keyGuard } from '../src/api/auth.ts';
import { Problem } from '../src/api/problem.ts';
import { reply } from '../src/api/reply.ts';
import { Router } from '../src/api/router.ts';
import { retryIfStale, STALE_RETRIES, StateChanged } from '../src/api/stale-retry.ts';
import { loadConfig } from '../src/config.ts';
import { openLedger } from '../src/ledger/db.ts';
import { commitReceipts, verifiedReceiptPayload } from './support/receipts.ts';
import { join } from 'node:path';
import { CompactSign, SignJWT } from 'jose';
import { compactJwsSync, signCompactJws } from '../src/crypto/jws.ts';
import { loadKeyring } from '../src/crypto/keys.ts';
import { startTestServer, tempDir, testEnv, type TestServer } from './support/server.ts';
import { operation } from '../src/api/operation.ts';

describe('embedded connection', () => {
  it('reads its own writes with @libsql/client result shapes (named columns, numbers, blobs, RETURNING)', async () => {
    const ledger = await openLedger(loadConfig(testEnv(tempDir())));
    const rs = await ledger.write(async (tx) => {
      await tx.execute({ sql: 'INSERT INTO logs (name, size, created_at) VALUES (?, 0, ?)', args: ['t', 'now'] });
      return tx.execute({ sql: 'UPDATE logs SET size = size + 1 WHERE name = ? RETURNING size', args: ['t'] });
    });
    expect(rs.rows[0]!.size).toBe(1);
    expect(rs.rowsAffected).toBe(1);
    await ledger.write((tx) =>
      tx.execute({
        sql: 'INSERT INTO log_segments (log, start, count, entries, created_at) VALUES (?, ?, ?, ?, ?)',
        args: ['t', 0, 1, new Uint8Array([1, 2, 3]), 'now'],
      }),
    );
    const leaf = (await ledger.read.execute({ sql: 'SELECT entries FROM log_segments WHERE log = ?', args: ['t'] })).rows[0]!.entries;
    expect([...new Uint8Array(leaf as ArrayBuffer)]).toEqual([1, 2, 3]);
    await expect(ledger.read.execute({ sql: 'SELECT ? AS v', args: [undefined as never] })).rejects.toThrow(/undefined/);
    await ledger.close();
  });
});

describe('stale-state retry', () => {
  /** A route's attempt loop, as the signed acts write it. */
  async function attempts<T>(attempt: () => Promise<T>): Promise<T> {
    for (let n = 0; ; n++) {
      try {
        return await attempt();
      } catch (e) {
        if (retryIfStale(e, n)) continue;
        throw e;
      }
    }
  }

  it('tries again while the state changes, then answers a 409 problem', async () => {
    let n = 0;
    expect(await attempts(async () => (++n < 3 ? Promise.reject(new StateChanged()) : 'done'))).toBe('done');
    expect(n).toBe(3);
    let tried = 0;
    const err = await attempts(async () => {
      tried++;
      throw new StateChanged();
    }).catch((e: unknown) => e);
    expect(tried).toBe(STALE_RETRIES + 1);
    expect(err).toBeInstanceOf(Problem);
    expect((err as Problem).status).toBe(409);
    expect((err as Problem).code).toBe('state_changed');
    await expect(attempts(async () => Promise.reject(new Error('other')))).rejects.toThrow('other');
  });
});

describe('batch-sealed receipts', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('seals each batch once, in the batch: one seal for receipts committed together', async () => {
    const sealCount = async () => Number((await s.ctx.ledger.read.execute('SELECT COUNT(*) AS n FROM receipt_seals')).rows[0]!.n);
    const before = await sealCount();
    // Twenty receipts queued in one tick commit in one batch: one seal, at the batch's end size.
    const made = await commitReceipts(
      s.ctx.ledger,
      s.ctx,
      Array.from({ length: 20 }, (_, i) => ({ kind: 'test', decision: 'PERMIT', subject: `s${i}` })),
    );
    expect(await sealCount()).toBe(before + 1);
    const size = Number((await s.ctx.ledger.read.execute("SELECT size FROM logs WHERE name = 'receipts'")).rows[0]!.size);
    const last = Number((await s.ctx.ledger.read.execute('SELECT MAX(tree_size) AS n FROM receipt_seals')).rows[0]!.n);
    expect(last).toBe(size);
    for (const r of [made[0]!, made[19]!]) {
      expect(await verifiedReceiptPayload(s, r.receipt_id)).toMatchObject({ kind: 'test', receipt_id: r.receipt_id });
      const e = await (await s.fetch(`/v1/receipts/${r.receipt_id}`, { headers: { accept: 'application/json' } })).json();
      expect(e.inclusion.tree_size).toBe(last);
    }
  });

  it('proves every hop against a stored seal (the seal commits with the hop)', async () => {
    const key = await s.newKey('seal');
    const fuse = (await (await s.fetch('/v1/fuses', { key: key.secret, json: {} })).json()) as { fuse_id: string };
    const hops = await Promise.all(
      Array.from(
        { length: 10 },
        async () =>
          (await (await s.fetch('/v1/fuse/hop', { key: key.secret, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay' } } })).json()) as {
            receipt_id: string;
            verify_url: string;
          },
      ),
    );
    const seals = (await s.ctx.ledger.read.execute('SELECT tree_size FROM receipt_seals')).rows.map((r) => Number(r.tree_size));
    for (const h of hops) {
      expect(await verifiedReceiptPayload(s, h.verify_url)).toMatchObject({ kind: 'hop', decision: 'PERMIT', receipt_id: h.receipt_id });
      const e = await (await s.fetch(new URL(h.verify_url).pathname, { headers: { accept: 'application/json' } })).json();
      expect(seals).toContain(e.inclusion.tree_size);
      expect(e.receipt).toBeNull();
      expect(e.log.origin).toBe(`${new URL(s.config.SITE_URL).host}/receipts`);
    }
  });

  it('verifies a sealed receipt from its evidence, and refuses the evidence when the payload is changed', async () => {
    const hop = await (await s.fetch('/demo/hop', { json: {} })).json();
    const e = await (await s.fetch(new URL(hop.verify_url).pathname, { headers: { accept: 'application/json' } })).json();
    expect(await (await s.fetch('/v1/receipts/verify', { json: { receipt: e } })).json()).toMatchObject({ valid: true, in_log: true });
    const forged = { ...e, payload: { ...e.payload, decision: 'PERMIT!' } };
    expect(await (await s.fetch('/v1/receipts/verify', { json: { receipt: forged } })).json()).toMatchObject({
      valid: false,
      reason: 'bad_leaf',
    });
  });
});

describe('compact JWS signing on node:crypto', () => {
  it("makes, byte for byte, the JWS and the JWT that jose's signers make with the same key", async () => {
    const key = (await loadKeyring({ SIGNING_KEY_FILE: join(tempDir(), 'keys.json') })).current;
    const payload = JSON.stringify({ receipt_id: 'rcpt_x', note: 'ünïcode ✓', n: 1 });
    const viaJose = await new CompactSign(new TextEncoder().encode(payload))
      .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: 'fusegate-receipt+jws' })
      .sign(key.privateKey);
    expect(compactJwsSync(payload, key, 'fusegate-receipt+jws')).toBe(viaJose);
    // Each key and typ has its own header (encoded headers are kept by their JSON text).
    const other = (await loadKeyring({ SIGNING_KEY_FILE: join(tempDir(), 'keys.json') })).current;
    const otherViaJose = await new CompactSign(new TextEncoder().encode(payload))
      .setProtectedHeader({ alg: 'EdDSA', kid: other.kid, typ: 'checkpoint+jws' })
      .sign(other.privateKey);
    expect(compactJwsSync(payload, other, 'checkpoint+jws')).toBe(otherViaJose);
    expect(compactJwsSync(payload, key, 'fusegate-receipt+jws')).toBe(viaJose);
    const claims = { iss: 'http://gate.test', iat: 1, exp: 2, jti: 'j', decision: 'GO' };
    const jwtViaJose = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'EdDSA', typ: 'prefinality+jwt', kid: key.kid })
      .sign(key.privateKey);
    expect(signCompactJws(JSON.stringify(claims), key, { alg: 'EdDSA', typ: 'prefinality+jwt', kid: key.kid })).toBe(jwtViaJose);
  });
});

describe('keyed act routes (operation with act)', () => {
  let s: TestServer;
  let operator: string;
  let agent: string;
  beforeAll(async () => {
    s = await startTestServer();
    operator = (await s.newKey('keyed-operator')).secret;
    agent = (await s.newKey('keyed-agent', undefined, 'agent')).secret;
  });
  afterAll(() => s.stop());

  const post = (path: string, json: unknown, key?: string, headers?: Record<string, string>) =>
    s.fetch(path, { method: 'POST', json, ...(key ? { key } : {}), ...(headers ? { headers } : {}) });
  const code = async (r: Response) => ((await r.json()) as { code: string }).code;

  it('check the key, then the Idempotency-Key, then the body, in that order', async () => {
    const bad = { not_a_field: true };
    for (const path of ['/api/v1/orn/sharp', '/v1/classify', '/v1/pas/bind-check', '/v1/act', '/api/v1/execute-gate']) {
      expect((await post(path, bad)).status, path).toBe(401);
      const longKey = await post(path, bad, operator, { 'idempotency-key': 'k'.repeat(256) });
      expect([longKey.status, await code(longKey)], path).toEqual([400, 'invalid_idempotency_key']);
      const body = await post(path, bad, operator, { 'idempotency-key': `body-${path}` });
      expect([400, 422], path).toContain(body.status);
      expect(await code(body), path).not.toBe('invalid_idempotency_key');
    }
  });

  it("keeps the route's declared role: the router's guard answers an agent key 403 before the handler runs", async () => {
    const router = new Router(new H3(), (route) => keyGuard(s.ctx, route));
    let handled = 0;
    operation(
      router,
      s.ctx,
      {
        method: 'POST',
        path: '/t/operator-act',
        auth: 'key',
        summary: 'test',
        role: 'operator',
        tag: 'test',
        body: z.strictObject({ n: z.number() }),
        act: {},
      },
      async ({ input: b }) => (handled++, reply({ n: b.n })),
    );
    expect(router.routes[0]!.doc).toMatchObject({ auth: 'key', role: 'operator' });
    const call = (key: string, json: unknown) =>
      router.app.fetch(
        new Request('http://gate.test/t/operator-act', {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(json),
        }),
      );
    const refused = await call(agent, { n: 1 });
    // A bare H3 (no app error handler): the guard's problem is its status here.
    expect(refused.status).toBe(403);
    expect(handled).toBe(0);
    const ok = await call(operator, { n: 2 });
    expect([ok.status, await ok.json()]).toEqual([200, { n: 2 }]);
    expect(handled).toBe(1);
  });

  it("enforces a route's declared key before its handler, for GET and HEAD alike, and hands the handler that key", async () => {
    const router = new Router(new H3(), (route) => keyGuard(s.ctx, route));
    const seen: string[] = [];
    operation(
      router,
      s.ctx,
      { method: 'GET', path: '/t/keyed-read', summary: 'test', auth: 'key', tag: 'test' },
      ({ key }) => (seen.push(key.id), reply({ ok: true })),
    );
    const call = (method: string, key?: string) =>
      router.app.fetch(new Request('http://gate.test/t/keyed-read', { method, headers: key ? { authorization: `Bearer ${key}` } : {} }));
    expect((await call('GET')).status).toBe(401);
    expect((await call('HEAD')).status).toBe(401);
    expect(seen).toEqual([]);
    expect((await call('GET', agent)).status).toBe(200);
    expect((await call('HEAD', operator)).status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(seen[0]).not.toBe(seen[1]);
  });

  it('applies the after step to the first answer and to its replay (ASTL publish: a signed checkpoint note both times)', async () => {
    const headers = { 'idempotency-key': 'astl-after-1' };
    const first = await post('/api/v1/astl/publish', { entity: 'agent:keyed-after', preset: 'agentic' }, operator, headers);
    expect(first.status).toBe(201);
    const again = await post('/api/v1/astl/publish', { entity: 'agent:keyed-after', preset: 'agentic' }, operator, headers);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const a = (await first.json()) as { index: number; checkpoint: { tree_size: number; note?: string } };
    const b = (await again.json()) as typeof a;
    expect(typeof a.checkpoint.note).toBe('string');
    expect(b.index).toBe(a.index);
    expect(b.checkpoint.note).toBe(a.checkpoint.note);
  });
});
