import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifiedReceiptPayload } from './support/receipts.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const leaf = (hex: string) => sha(Buffer.from([0]), Buffer.from(hex, 'hex'));
const node = (l: Buffer, r: Buffer) => sha(Buffer.from([1]), l, r);

async function meterRows(s: TestServer, keyId: string) {
  return (await chargesOf(s.ctx.ledger.read, keyId)).map((r) => ({ sku: r.sku, micros: r.amount_micros, nap: r.nap, ref: r.ref }));
}

describe('NAP: counterfactual replay, spoliation seal, usage, scale', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  let other: { id: string; secret: string };
  const fuses: Record<string, string> = {};
  const post = (path: string, json: unknown, k = key.secret) => s.fetch(path, { method: 'POST', json, key: k });

  beforeAll(async () => {
    s = await startTestServer();
    key = await s.newKey('agent');
    other = await s.newKey('other');
    for (const name of ['LIVE', 'DEAD'] as const)
      fuses[name] = (await (await post('/v1/fuses', { state: 'LIVE', label: name })).json()).fuse_id;
    await post(`/v1/fuses/${fuses.DEAD}/dead`, undefined);
  });
  afterAll(() => s.stop());

  it('replays a DENY exactly (same decision), and with an assumed LIVE fuse says it would have acted; charged ccr', async () => {
    const refused = await (
      await post('/api/v1/execute-gate', { fuse_id: fuses.DEAD, action: { kind: 'wire' }, exposure_usd: '5000' })
    ).json();
    expect(refused.decision).toBe('DENY');
    const same = await post('/tcb/counterfactual-replay', { receipt_id: refused.receipt_id });
    expect(same.status).toBe(200);
    const a = await same.json();
    expect(a).toMatchObject({
      rules_version: 'clear-rules-v1',
      replayed: { decision: 'DENY', rule: 'fuse_dead' },
      changed: false,
      would_have_acted: false,
    });
    const alt = await (await post('/tcb/counterfactual-replay', { receipt_id: refused.receipt_id, assume: { state: 'LIVE' } })).json();
    expect(alt).toMatchObject({
      replayed: { decision: 'PERMIT' },
      changed: true,
      would_have_acted: true,
      assumed: { state: 'LIVE', exposure_micros: 5_000_000_000 },
    });
    expect(alt.charge).toEqual({ sku: 'ccr', amount_usd: '1.00', nap: true });
    // with a hold threshold below the exposure, the same act would have been held
    const held = await (
      await post('/tcb/counterfactual-replay', { receipt_id: refused.receipt_id, assume: { state: 'LIVE', hold_above_usd: '1000' } })
    ).json();
    expect(held.replayed).toMatchObject({ decision: 'HOLD', rule: 'above_hold' });
    const rows = (await meterRows(s, key.id)).filter((r) => r.sku === 'ccr');
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatchObject({ micros: 1_000_000, nap: 1, ref: a.receipt_id });
    // the replay is sealed: a receipt naming the original and the replayed decision
    const p = await verifiedReceiptPayload(s, alt.verify_url);
    expect(p).toMatchObject({ kind: 'counterfactual_replay', decision: 'PERMIT', subject: refused.receipt_id });
  });

  it('replays a refused hop (fuse rules) too', async () => {
    const hop = await (await post('/v1/fuse/hop', { fuse_id: fuses.LIVE, action: { kind: 'launch_rocket' } })).json();
    expect(hop.decision).toBe('BLOCK');
    const r = await (await post('/tcb/counterfactual-replay', { receipt_id: hop.receipt_id, assume: { in_surface: true } })).json();
    expect(r).toMatchObject({
      rules_version: 'fuse-rules-v1',
      original: { decision: 'BLOCK' },
      replayed: { decision: 'PERMIT' },
      changed: true,
    });
  });

  it("refuses to replay a PERMIT (422), another key's receipt (404), and bad input (400), charging nothing", async () => {
    const ok = await (await post('/api/v1/execute-gate', { fuse_id: fuses.LIVE, action: { kind: 'pay' } })).json();
    const before = await meterRows(s, key.id);
    const p = await post('/tcb/counterfactual-replay', { receipt_id: ok.receipt_id });
    expect(p.status).toBe(422);
    expect((await p.json()).code).toBe('not_replayable');
    const foreign = await post('/tcb/counterfactual-replay', { receipt_id: ok.receipt_id }, other.secret);
    expect(foreign.status).toBe(404);
    expect((await foreign.json()).code).toBe('unknown_receipt');
    for (const [body, field] of [
      [{ receipt_id: 'nope' }, 'receipt_id'],
      [{ receipt_id: ok.receipt_id, assume: { state: 'ALIVE' } }, 'assume.state'],
      [{ receipt_id: ok.receipt_id, assume: { color: 'red' } }, 'assume'],
    ] as const) {
      const r = await post('/tcb/counterfactual-replay', body);
      expect(r.status, field).toBe(400);
      expect((await r.json()).errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    expect(await meterRows(s, key.id)).toEqual(before);
  });

  it('spoliation seal: the root is the RFC 9162 root of the evidence hashes, sealed and charged spoliation_seal', async () => {
    const h = ['a', 'b', 'c'].map((x) => createHash('sha256').update(x).digest('hex'));
    const r = await post('/api/v1/spoliation-seal', { matter_ref: 'claim-1', evidence: h.map((sha256, i) => ({ name: `f${i}`, sha256 })) });
    expect(r.status).toBe(200);
    const b = await r.json();
    const expected = node(node(leaf(h[0]!), leaf(h[1]!)), leaf(h[2]!)).toString('hex');
    expect(b).toMatchObject({
      matter_ref: 'claim-1',
      evidence_count: 3,
      root_hash: expected,
      charge: { sku: 'spoliation_seal', amount_usd: '0.50', nap: true },
    });
    expect((await meterRows(s, key.id)).at(-1)).toMatchObject({ sku: 'spoliation_seal', micros: 500_000, nap: 1, ref: b.receipt_id });
    const e = await (await s.fetch(new URL(b.verify_url).pathname)).json();
    expect(e.verification).toEqual({ signature: true, inclusion: true });
    const before = await meterRows(s, key.id);
    for (const [body, field] of [
      [{ matter_ref: 'm', evidence: [] }, 'evidence'],
      [{ matter_ref: 'm', evidence: [{ name: 'x', sha256: 'ABC' }] }, 'evidence.0.sha256'],
      [
        {
          matter_ref: 'm',
          evidence: [
            { name: 'x', sha256: h[0] },
            { name: 'x', sha256: h[1] },
          ],
        },
        'evidence',
      ],
    ] as const) {
      const bad = await post('/api/v1/spoliation-seal', body);
      expect(bad.status, field).toBe(400);
      expect((await bad.json()).errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const unknown = await post('/api/v1/spoliation-seal', {
      matter_ref: 'm',
      evidence: [{ name: 'x', sha256: h[0] }],
      refers_to: 'rcpt_nothing',
    });
    expect(unknown.status).toBe(404);
    expect(await meterRows(s, key.id)).toEqual(before);
    expect(Number((await s.ctx.ledger.read.execute('SELECT COUNT(*) AS n FROM spoliation_seals')).rows[0]!.n)).toBe(1);
  });

  it('a spoliation root is recomputed as the companion docs say: from the public entry and the opening of its evidence list', async () => {
    // The docs promise what the server does: the public receipt commits to the list, so the opening is needed.
    const docs = readFileSync(join(process.cwd(), 'docs/companion-metered-apis.md'), 'utf8');
    const paragraph = /\*\*Spoliation seal\*\* root:[\s\S]*?\n\n/.exec(docs)![0].replace(/\s+/g, ' ');
    expect(paragraph).not.toMatch(/receipt carries the whole evidence list/);
    expect(paragraph).toContain('GET /v1/receipts/{receipt_id}/openings');

    const sealer = await s.newKey('sealer');
    const evidence = ['chat-export.jsonl', 'mailbox.pst', 'ticket-4411.pdf'].map((name) => ({
      name,
      sha256: createHash('sha256').update(name).digest('hex'),
    }));
    const sealed = await (await post('/api/v1/spoliation-seal', { matter_ref: 'claim-docs', evidence }, sealer.secret)).json();
    // The public entry, as any stranger reads it at the receipt's verify_url: a commitment, not the file names.
    const entry = (await verifiedReceiptPayload(s, sealed.verify_url)) as Record<string, any>;
    expect(entry.data).toMatchObject({ root_hash: sealed.root_hash, evidence_count: 3, evidence: expect.stringMatching(/^c1:sha256:/) });
    expect(JSON.stringify(entry)).not.toContain('mailbox.pst');
    // The account's opening of the list; a second implementation checks it against the commitment, then the root.
    const opened = (await (await s.fetch(`/v1/receipts/${sealed.receipt_id}/openings`, { key: sealer.secret })).json()).openings.find(
      (o: { field: string }) => o.field === 'data.evidence',
    );
    const canon = (v: unknown): string =>
      v === null || typeof v !== 'object'
        ? JSON.stringify(v)
        : Array.isArray(v)
          ? `[${v.map(canon).join(',')}]`
          : `{${Object.keys(v)
              .sort()
              .map((k) => `${JSON.stringify(k)}:${canon((v as Record<string, unknown>)[k])}`)
              .join(',')}}`;
    expect(
      'c1:sha256:' + createHash('sha256').update(Buffer.from(opened.salt, 'base64url')).update(canon(opened.value)).digest('base64url'),
    ).toBe(entry.data.evidence);
    const [a, b, c] = (opened.value as Array<{ sha256: string }>).map((e) => leaf(e.sha256));
    expect(node(node(a!, b!), c!).toString('hex')).toBe(entry.data.root_hash);
  });

  it('NAP usage lists only NAP SKUs of the key; the scale is a labelled illustrative projection from units and tolls', async () => {
    const u = await (await s.fetch('/api/v1/nap/usage', { key: key.secret })).json();
    const skus = u.by_sku.map((x: { sku: string }) => x.sku).sort();
    expect(skus).toEqual(['ccr', 'hold', 'spoliation_seal']);
    expect(u.by_sku.find((x: { sku: string }) => x.sku === 'ccr')).toEqual({ sku: 'ccr', count: 4, amount_usd: '4.00' });
    // hold: the DENY (0.50) and the BLOCKed hop (0.50); nap = 4 x 1.00 + 1.00 + 0.50; total adds execute_gate 0.10
    expect(u).toMatchObject({ nap_usd: '5.50', total_usd: '5.60' });
    expect((await s.fetch('/api/v1/nap/usage')).status).toBe(401);
    const d = await (await s.fetch('/api/v1/nap/scale')).json();
    expect(d).toMatchObject({ layer: 'nap', illustrative: true, inputs: { acts_per_month: 1_000_000, refusal_rate_pct: 5 } });
    // 1M x 0.02 + 50k x 0.50
    expect(d.lines.map((l: { monthly_usd: string }) => l.monthly_usd)).toEqual(['20000.00', '25000.00']);
    expect(d).toMatchObject({ monthly_usd: '45000.00', annual_usd: '540000.00' });
    const c = await (await s.fetch('/api/v1/nap/scale?acts_per_month=200&refusal_rate_pct=12.5')).json();
    expect(c.lines[1]).toMatchObject({ units: 25, toll_usd: '0.50', monthly_usd: '12.50' });
    const bad = await s.fetch('/api/v1/nap/scale?acts_per_month=-1');
    expect(bad.status).toBe(400);
    expect((await bad.json()).errors[0].field).toBe('acts_per_month');
  });
});
