import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactVerify, importJWK } from 'jose';
import { leafHash, rootOf, verifyConsistency, verifyInclusion } from '../src/crypto/merkle.ts';
import { openNote, parseCheckpointText } from '../src/crypto/note.ts';
import { canonicalJson } from '../src/crypto/canonical.ts';
import { sealNow } from '../src/api/site/clearing.ts';
import { untilCommitted } from './support/commits.ts';
import { startReceiver } from './support/receiver.ts';
import { startTestServer, tempDir, testEnv, type TestServer } from './support/server.ts';
import { openLedger } from '../src/ledger/db.ts';
import { loadConfig } from '../src/config.ts';
import { createSubscription, enqueueDeliveries } from '../src/ledger/webhooks.ts';
import { chargesOf } from './support/ledger-reads.ts';
import { firedExposureSince } from '../src/ledger/triggers.ts';

const unb64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));

async function meter(s: TestServer, keyId: string) {
  return (await chargesOf(s.ctx.ledger.read, keyId)).map((r) => ({ sku: r.sku, micros: r.amount_micros }));
}

/** Checks a C2SP checkpoint note with the log's published verifier key and an inclusion proof against it. */
async function checkInclusion(s: TestServer, log: string, note: string, index: number, leaf: Uint8Array, hashes: string[]) {
  const { verifier_key } = await (await s.fetch(`/api/v1/logs/${log}`)).json();
  const cp = parseCheckpointText(await openNote(note, verifier_key));
  verifyInclusion(index, cp.size, leafHash(leaf), hashes.map(unb64), cp.root);
  return cp;
}

function expectBadInput(body: { code: string; errors?: Array<{ field: string }> }, field: string) {
  expect(body.code).toMatch(/^invalid_(body|query)$/);
  expect(body.errors!.map((e) => e.field)).toContain(field);
}

describe('companion ledger', () => {
  let s: TestServer;
  let key: { id: string; secret: string; accountId: string };
  const post = (path: string, json: unknown, k = key.secret, headers: Record<string, string> = {}) =>
    s.fetch(path, { method: 'POST', json, key: k, headers });

  beforeAll(async () => {
    s = await startTestServer({ CLEARING_INTERVAL_HOURS: '0', WEBHOOK_POLL_MS: '50', WEBHOOK_BACKOFF_MS: '50' });
    key = await s.newKey('ledger');
  });
  afterAll(() => s.stop());

  it('ASTL: publishes manifests with proofs against a signed checkpoint; republish appends a version; lookup, verify, feed', async () => {
    const r1 = await post('/api/v1/astl/publish', { entity: 'agent:acme', act_kinds: ['wire', 'pay', 'pay'] });
    expect(r1.status).toBe(201);
    const a = await r1.json();
    expect(a.manifest).toMatchObject({ type: 'astl.manifest', entity: 'agent:acme', version: 1, act_kinds: ['pay', 'wire'] });
    await checkInclusion(s, 'astl', a.checkpoint.note, a.index, new TextEncoder().encode(canonicalJson(a.manifest)), a.inclusion.hashes);
    const r2 = await post('/api/v1/astl/publish', { entity: 'agent:acme', preset: 'hiring' });
    const b = await r2.json();
    expect(b.manifest.version).toBe(2);
    expect(b.index).toBe(a.index + 1);
    // Another key may not write the entity's versions.
    const other = await s.newKey('other');
    const sizeBefore = (await s.ctx.ledger.read.execute("SELECT size FROM logs WHERE name = 'astl'")).rows[0]!.size;
    const r3 = await post('/api/v1/astl/publish', { entity: 'agent:acme', preset: 'agentic' }, other.secret);
    expect(r3.status).toBe(403);
    expect((await r3.json()).code).toBe('entity_owned');
    // Refused under the write lock: nothing appended, nothing charged.
    expect((await s.ctx.ledger.read.execute("SELECT size FROM logs WHERE name = 'astl'")).rows[0]!.size).toBe(sizeBefore);
    expect(await chargesOf(s.ctx.ledger.read, other.id)).toHaveLength(0);
    // Lookup: newest first; the first version is still there, unchanged.
    const look = await (await s.fetch('/api/v1/astl/lookup?entity=agent:acme')).json();
    expect(look.manifests.map((m: { manifest: { version: number } }) => m.manifest.version)).toEqual([2, 1]);
    expect(look.manifests[1].manifest).toEqual(a.manifest);
    expect((await s.fetch('/api/v1/astl/lookup?entity=nobody')).status).toBe(404);
    // Verify the old version against the newest checkpoint.
    const v = await (await post('/api/v1/astl/verify', { manifest: a.manifest }, '')).json();
    expect(v.included).toBe(true);
    const cp = await checkInclusion(
      s,
      'astl',
      v.checkpoint.note,
      a.index,
      new TextEncoder().encode(canonicalJson(a.manifest)),
      v.inclusion.hashes,
    );
    expect(cp.size).toBe(b.index + 1);
    const forged = await (await post('/api/v1/astl/verify', { manifest: { ...a.manifest, act_kinds: ['pay'] } }, '')).json();
    expect(forged).toEqual({ included: false, reason: 'leaf_not_in_log' });
    // A leaf is found by the id it carries: without one, or with an id never published, it is not in the log.
    const { manifest_id: _id, ...unnamed } = a.manifest;
    for (const manifest of [unnamed, { ...a.manifest, manifest_id: 'mfst_neverpublished' }]) {
      expect(await (await post('/api/v1/astl/verify', { manifest }, '')).json()).toEqual({ included: false, reason: 'leaf_not_in_log' });
    }
    // Feed: both leaves, and the newest checkpoint.
    const feed = await (await s.fetch('/api/v1/astl/log.json')).json();
    expect(feed.entries.map((e: { value: { version: number } }) => e.value.version)).toEqual([1, 2]);
    expect(feed.checkpoint.tree_size).toBe(2);
    // Metered once per publish (the refusal charged nothing).
    expect((await meter(s, key.id)).filter((m) => m.sku === 'astl_publish')).toEqual([
      { sku: 'astl_publish', micros: 250_000 },
      { sku: 'astl_publish', micros: 250_000 },
    ]);
    expect(await meter(s, other.id)).toEqual([]);
    const scale = await (await s.fetch('/api/v1/astl/scale?entities=10&versions_per_year=2')).json();
    expect(scale).toMatchObject({ illustrative: true, publishes_per_year: 20, annual_usd: '5.00' });
  });

  it('ASTL: bad input is a 400 naming the field, idempotent retries charge once', async () => {
    const before = (await meter(s, key.id)).length;
    for (const [body, field] of [
      [{ entity: 'agent:x' }, 'act_kinds'],
      [{ entity: '', preset: 'agentic' }, 'entity'],
      [{ entity: 'x', act_kinds: ['Pay!'] }, 'act_kinds.0'],
      [{ entity: 'x', preset: 'nope' }, 'preset'],
    ] as const) {
      const r = await post('/api/v1/astl/publish', body);
      expect(r.status).toBe(400);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expectBadInput(await r.json(), field);
    }
    expect((await s.fetch('/api/v1/astl/publish', { method: 'POST', json: { entity: 'x', preset: 'agentic' } })).status).toBe(401);
    const headers = { 'idempotency-key': 'astl-1' };
    const first = await (await post('/api/v1/astl/publish', { entity: 'idem', preset: 'agentic' }, key.secret, headers)).json();
    const again = await post('/api/v1/astl/publish', { entity: 'idem', preset: 'agentic' }, key.secret, headers);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const second = await again.json();
    expect(second).toEqual(first);
    expect((await meter(s, key.id)).length).toBe(before + 1);
  });

  it('ASTL: publishes sent together are each proved against a signed checkpoint that includes them all up to its size', async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, async (_, i) =>
        (await post('/api/v1/astl/publish', { entity: `agent:together-${i}`, preset: 'agentic' })).json(),
      ),
    );
    for (const a of answers) {
      // Proved at the size its group left the log at (its own size when it ran alone).
      expect(a.checkpoint.tree_size).toBeGreaterThan(a.index);
      expect(a.inclusion).toMatchObject({ index: a.index, tree_size: a.checkpoint.tree_size, leaf_hash: a.leaf_hash });
      const cp = await checkInclusion(
        s,
        'astl',
        a.checkpoint.note,
        a.index,
        new TextEncoder().encode(canonicalJson(a.manifest)),
        a.inclusion.hashes,
      );
      expect([cp.size, Buffer.from(cp.root).toString('base64')]).toEqual([a.checkpoint.tree_size, a.checkpoint.root_hash]);
    }
    expect(new Set(answers.map((a) => a.index)).size).toBe(12);
  });

  it('ASTL: publishes of one entity sent together get consecutive versions; another key sent among them is refused and writes nothing', async () => {
    const other = await s.newKey('together-other');
    const entity = 'agent:storm';
    const sizeBefore = Number((await s.ctx.ledger.read.execute("SELECT size FROM logs WHERE name = 'astl'")).rows[0]!.size);
    const sends = Array.from({ length: 10 }, (_, i) =>
      post('/api/v1/astl/publish', { entity, preset: 'agentic' }, i === 3 || i === 7 ? other.secret : key.secret),
    );
    const answers = await Promise.all(
      sends.map(async (r) => {
        const res = await r;
        return { status: res.status, body: await res.json() };
      }),
    );
    // The owner is the first publisher in arrival order; whichever key that was, the other's are refused.
    const ownerSent = answers[0]!.status === 201 ? [0, 1, 2, 4, 5, 6, 8, 9] : [3, 7];
    const refused = answers.filter((a) => a.status === 403);
    expect(answers.filter((a) => a.status === 201).length + refused.length).toBe(10);
    expect(refused.every((a) => a.body.code === 'entity_owned')).toBe(true);
    const published = ownerSent.map((i) => answers[i]!).filter((a) => a.status === 201);
    expect(published.map((a) => a.body.manifest.version).sort((x, y) => x - y)).toEqual(published.map((_, i) => i + 1));
    // The log holds exactly the published manifests, and the stored rows agree with the answers.
    expect(Number((await s.ctx.ledger.read.execute("SELECT size FROM logs WHERE name = 'astl'")).rows[0]!.size)).toBe(
      sizeBefore + published.length,
    );
    const look = await (await s.fetch(`/api/v1/astl/lookup?entity=${encodeURIComponent(entity)}`)).json();
    expect(look.latest_version).toBe(published.length);
    expect(look.manifests.map((m: { index: number }) => m.index).sort()).toEqual(published.map((a) => a.body.index).sort());
    // Newest first, each with the leaf hash its publish answered, whether its version came from the group or before it.
    const byVersion = [...published].sort((x, y) => y.body.manifest.version - x.body.manifest.version);
    expect(look.manifests.map((m: { manifest: { version: number }; leaf_hash: string }) => [m.manifest.version, m.leaf_hash])).toEqual(
      byVersion.map((a) => [a.body.manifest.version, a.body.leaf_hash]),
    );
    for (const a of published) {
      const cp = await checkInclusion(
        s,
        'astl',
        a.body.checkpoint.note,
        a.body.index,
        new TextEncoder().encode(canonicalJson(a.body.manifest)),
        a.body.inclusion.hashes,
      );
      expect(cp.size).toBe(a.body.checkpoint.tree_size);
    }
  });

  it('absence: witnesses non-membership over a preset and an ASTL surface; the public verifier and jose agree', async () => {
    const r = await post('/api/v1/absence/witness', { act_kind: 'wire', preset: 'hiring' });
    expect(r.status).toBe(200);
    const w = await r.json();
    expect(w).toMatchObject({ absent: true, act_kind: 'wire', surface: { source: 'preset', preset: 'hiring', tree_size: 5 } });
    // Second implementation: jose checks the witness signature with the published key.
    const pub = await (await s.fetch('/crypto/public-key')).json();
    const { payload } = await compactVerify(w.witness, await importJWK(pub.jwk, 'EdDSA'));
    const claims = JSON.parse(new TextDecoder().decode(payload));
    expect(claims).toMatchObject({
      kind: 'absence_witness',
      decision: 'ABSENT',
      data: { act_kind: 'wire', surface: { root: w.surface.root } },
    });
    // The signed root is the RFC 9162 root of the sorted preset, computed here independently.
    const sorted = ['background_check', 'extend_offer', 'hire', 'reject_candidate', 'schedule_interview'];
    expect(Buffer.from(rootOf(sorted.map((k) => leafHash(new TextEncoder().encode(k))))).toString('base64')).toBe(w.surface.root);
    expect(w.proof.left.key < 'wire' && 'wire' < (w.proof.right?.key ?? '~')).toBe(true);
    const ok = await (await post('/standards/absence-ledger/verify', { witness: w.witness, proof: w.proof }, '')).json();
    expect(ok).toMatchObject({ valid: true, absent: true, act_kind: 'wire' });
    // A proof for another act, or a tampered witness, fails.
    const hire = await (await post('/api/v1/absence/witness', { act_kind: 'hire', preset: 'hiring' })).json();
    expect(hire.absent).toBe(false);
    const mixed = await (await post('/standards/absence-ledger/verify', { witness: w.witness, proof: hire.proof }, '')).json();
    expect(mixed.valid).toBe(false);
    const [h, p, sig] = w.witness.split('.');
    const tampered = `${h}.${p}.${sig.startsWith('A') ? 'B' : 'A'}${sig.slice(1)}`;
    expect((await (await post('/standards/absence-ledger/verify', { witness: tampered, proof: w.proof }, '')).json()).reason).toBe(
      'bad_signature',
    );
    // Over an ASTL manifest: the entity's newest version.
    const e = await (await post('/api/v1/absence/witness', { act_kind: 'pay', entity: 'agent:acme' })).json();
    expect(e).toMatchObject({ absent: true, surface: { source: 'astl', entity: 'agent:acme', version: 2 } });
    expect((await post('/api/v1/absence/witness', { act_kind: 'pay', entity: 'nobody' })).status).toBe(404);
    const bad = await post('/api/v1/absence/witness', { act_kind: 'pay', preset: 'hiring', entity: 'agent:acme' });
    expect(bad.status).toBe(400);
    expectBadInput(await bad.json(), 'entity');
    expect((await meter(s, key.id)).filter((m) => m.sku === 'absence_witness').every((m) => m.micros === 50_000)).toBe(true);
    expect((await meter(s, key.id)).filter((m) => m.sku === 'absence_witness')).toHaveLength(3);
  });

  it('oracle: a weighted trimmed mean checked by hand, the DISPUTED guard, bad input', async () => {
    const readings = [
      { source_id: 'network_a', value: '100' },
      { source_id: 'network_b', value: '101' },
      { source_id: 'network_c', value: '102' },
      { source_id: 'first_party', value: '103' },
      { source_id: 'sealed_reading', value: '150' },
    ];
    const r = await post('/api/v1/oracle/aggregate', { metric: 'drift', readings });
    expect(r.status).toBe(200);
    const a = await r.json();
    // 5 readings, 20 % trimmed at each end: drop 100 and 150. (101*1.0 + 102*0.9 + 103*1.1) / 3.0 = 306.1 / 3 = 102.0333...
    expect(a).toMatchObject({ status: 'CONSENSUS', value: '102.033333', spread: '2', trim_per_side: 1 });
    expect(a.trimmed.map((t: { source_id: string }) => t.source_id).sort()).toEqual(['network_a', 'sealed_reading']);
    // Spread 90 - 110 = 20 on a mean near 100 is 20 % > 5 %: DISPUTED, no value.
    const d = await (
      await post('/api/v1/oracle/aggregate', {
        metric: 'drift',
        readings: [
          { source_id: 'network_a', value: '90' },
          { source_id: 'network_b', value: '110' },
          { source_id: 'network_c', value: '100' },
        ],
      })
    ).json();
    expect(d).toMatchObject({ status: 'DISPUTED', value: null, reason: 'spread' });
    const few = await (await post('/api/v1/oracle/aggregate', { metric: 'drift', readings: readings.slice(0, 2) })).json();
    expect(few).toMatchObject({ status: 'DISPUTED', reason: 'too_few_sources' });
    // 3 readings, no trim: (1.0*10 + 1.0*10 + 0.9*10.5) / 2.9 = 29.45 / 2.9 = 10.155172...
    const three = await (
      await post('/api/v1/oracle/aggregate', {
        metric: 'm',
        readings: [
          { source_id: 'network_a', value: '10' },
          { source_id: 'network_b', value: '10' },
          { source_id: 'network_c', value: '10.5' },
        ],
      })
    ).json();
    expect(three).toMatchObject({ status: 'CONSENSUS', value: '10.155172' });
    const before = (await meter(s, key.id)).length;
    for (const [body, field] of [
      [{ metric: 'm', readings: [{ source_id: 'network_z', value: '1' }] }, 'readings.0.source_id'],
      [{ metric: 'm', readings: [{ source_id: 'network_a', value: '1e3' }] }, 'readings.0.value'],
      [
        {
          metric: 'm',
          readings: [
            { source_id: 'network_a', value: '1' },
            { source_id: 'network_a', value: '2' },
          ],
        },
        'readings',
      ],
      [{ readings: [] }, 'metric'],
    ] as const) {
      const res = await post('/api/v1/oracle/aggregate', body);
      expect(res.status).toBe(400);
      expectBadInput(await res.json(), field);
    }
    expect((await meter(s, key.id)).length).toBe(before);
    expect((await meter(s, key.id)).filter((m) => m.sku === 'oracle_aggregate')).toHaveLength(4);
    // The result is sealed: its receipt verifies and is in the receipts log.
    const e = await (await s.fetch(new URL(a.verify_url).pathname)).json();
    expect(e.verification).toEqual({ signature: true, inclusion: true });
  });

  it('trigger rail: publish ARMED, fire only at the threshold, fee on enabled exposure, never twice; Clear tier fallback; feed', async () => {
    const pub = await post('/signal/trigger/publish', {
      template_id: 'ai_model_change',
      threshold: { metric: 'drift', operator: 'gte', value: '100' },
      enabled_exposure_usd: '1000000',
    });
    expect(pub.status).toBe(201);
    const t = await pub.json();
    expect(t).toMatchObject({
      state: 'ARMED',
      obligation_surface: { fee_bps: 25, exposure_ceiling_usd: 5000000 },
      enabled_exposure_usd: '1000000.00',
    });
    await checkInclusion(
      s,
      'triggers',
      t.checkpoint.note,
      t.inclusion.index,
      unb64((await (await s.fetch(`/api/v1/logs/triggers/entries?start=${t.inclusion.index}&limit=1`)).json()).entries[0].leaf),
      t.inclusion.hashes,
    );
    // Below the threshold: stays ARMED, nothing charged.
    const low = await (await post('/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id, reading: '99.999999' })).json();
    expect(low).toMatchObject({ fired: false, state: 'ARMED' });
    // A DISPUTED aggregate is refused; a CONSENSUS one fires.
    const disputed = await (
      await post('/api/v1/oracle/aggregate', { metric: 'drift', readings: [{ source_id: 'network_a', value: '1' }] })
    ).json();
    const rd = await post('/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id, aggregate_id: disputed.aggregate_id });
    expect(rd.status).toBe(409);
    expect((await rd.json()).code).toBe('reading_disputed');
    const agg = await (
      await post('/api/v1/oracle/aggregate', {
        metric: 'drift',
        readings: [
          { source_id: 'network_a', value: '101' },
          { source_id: 'network_b', value: '101' },
          { source_id: 'sealed_reading', value: '101' },
        ],
      })
    ).json();
    const before = (await meter(s, key.id)).length;
    const fired = await post('/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id, aggregate_id: agg.aggregate_id });
    expect(fired.status).toBe(200);
    const f = await fired.json();
    // 25 bps of 1,000,000 USD = 2,500 USD, plus the bps_fire toll of 1.00.
    expect(f).toMatchObject({
      fired: true,
      state: 'FIRED',
      fire: { reading: '101', fee: { bps: 25, source: 'obligation', amount_usd: '2500.00' } },
    });
    expect((await meter(s, key.id)).slice(before)).toEqual([
      { sku: 'bps_fire', micros: 1_000_000 },
      { sku: 'bps_fee', micros: 2_500_000_000 },
    ]);
    // A second fire is refused and charges nothing.
    const twice = await post('/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id, reading: '500' });
    expect(twice.status).toBe(409);
    expect((await twice.json()).code).toBe('trigger_already_fired');
    expect((await meter(s, key.id)).length).toBe(before + 2);
    // The foundry catalog lists the fire among its live recent_settlements; its ETag revalidates.
    const cat = await s.fetch('/api/v1/foundry/catalog.json');
    const body = await cat.json();
    expect(body.schema).toBe('svc-actuation-foundry-v1');
    expect(body.recent_settlements[0]).toMatchObject({
      trigger_id: t.trigger_id,
      template_id: 'ai_model_change',
      reading: '101',
      fee: { bps: 25, amount_usd: '2500.00' },
      receipt_id: f.receipt_id,
    });
    expect((await s.fetch(new URL(body.recent_settlements[0].verify_url).pathname)).status).toBe(200);
    expect((await s.fetch('/api/v1/foundry/catalog.json', { headers: { 'if-none-match': cat.headers.get('etag')! } })).status).toBe(304);
    // Concurrent fires of one trigger: exactly one wins.
    const t2 = await (
      await post('/signal/trigger/publish', {
        template_id: 'incident_sealed',
        threshold: { metric: 'x', operator: 'gt', value: '0' },
        enabled_exposure_usd: '10000000',
      })
    ).json();
    const results = await Promise.all(
      [1, 2, 3, 4].map(() => post('/api/v1/foundry/trigger/fire', { trigger_id: t2.trigger_id, reading: '1' })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    // The template's fee_bps (a caller cannot set it; the Clear tier fallback is tested in exactness.test.ts): 15 bps of 10,000,000 = 15,000 USD.
    const won = await results.find((r) => r.status === 200)!.json();
    expect(won.fire.fee).toMatchObject({ source: 'obligation', bps: 15, amount_usd: '15000.00' });
    // What a tiered fee reads, the owner's fired exposure since a date, counts fired triggers only
    // (its index holds nothing else): the same as a scan of the table, and no armed trigger moves it.
    const scanned = async (since: string) =>
      BigInt(
        Number(
          (
            await s.ctx.ledger.read.execute({
              sql: `SELECT COALESCE(SUM(enabled_exposure_micros), 0) AS m FROM triggers${s.ctx.ledger.read.dialect.engine === 'embedded' ? ' NOT INDEXED' : ''} WHERE key_id = ? AND state = 'FIRED' AND fired_at >= ?`,
              args: [key.accountId, since],
            })
          ).rows[0]!.m,
        ),
      );
    const firedSince = (since: string) => firedExposureSince(s.ctx.ledger.read, key.accountId, since);
    expect(await firedSince('1970-01-01T00:00:00.000Z')).toBe(await scanned('1970-01-01T00:00:00.000Z'));
    expect(await firedSince('1970-01-01T00:00:00.000Z')).toBeGreaterThanOrEqual(11_000_000_000_000n);
    expect(await firedSince('2999-01-01T00:00:00.000Z')).toBe(0n);
    const firedBefore = await firedSince('1970-01-01T00:00:00.000Z');
    expect(
      (
        await post('/signal/trigger/publish', {
          template_id: 'incident_sealed',
          threshold: { metric: 'x', operator: 'gt', value: '0' },
          enabled_exposure_usd: '1000',
        })
      ).status,
    ).toBe(201);
    expect(await firedSince('1970-01-01T00:00:00.000Z')).toBe(firedBefore);
    // Bad input.
    for (const [path, body, field] of [
      ['/signal/trigger/publish', { template_id: 'nope', threshold: { metric: 'x', operator: 'gte', value: '1' } }, 'template_id'],
      [
        '/signal/trigger/publish',
        { template_id: 'ai_model_change', threshold: { metric: 'x', operator: 'about', value: '1' } },
        'threshold.operator',
      ],
      [
        '/signal/trigger/publish',
        {
          template_id: 'ai_model_change',
          threshold: { metric: 'x', operator: 'gte', value: '1' },
          obligation: { callable_actions: ['bind_hold', 'launch'] },
        },
        'obligation.callable_actions',
      ],
      [
        '/signal/trigger/publish',
        { template_id: 'ai_model_change', threshold: { metric: 'x', operator: 'gte', value: '1' }, enabled_exposure_usd: '5000000.01' },
        'enabled_exposure_usd',
      ],
      ['/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id }, 'reading'],
    ] as const) {
      const r = await post(path, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expectBadInput(await r.json(), field);
    }
    expect((await post('/api/v1/foundry/trigger/fire', { trigger_id: 'trg_missing', reading: '1' })).status).toBe(404);
    // Feed: publish and fire events, newest checkpoint.
    const feed = await (await s.fetch('/signal/trigger/feed.json?start=0')).json();
    const mine = feed.entries
      .filter((e: { value: { trigger_id: string } }) => e.value.trigger_id === t.trigger_id)
      .map((e: { value: { type: string } }) => e.value.type);
    expect(mine).toEqual(['trigger.published', 'trigger.fired']);
    expect(feed.checkpoint.tree_size).toBe(feed.entries.length);
    const doc = await (await s.fetch('/signal/trigger-oracle')).json();
    expect(doc.aggregation.sources).toHaveLength(5);
  });

  it('clearing: seals per-SKU totals over a receipts range; a stranger checks it against the receipts log', async () => {
    expect((await s.fetch('/api/v1/clearing/network/latest.json')).status).toBe(404);
    const sealed = await sealNow(s.ctx.ledger);
    const ev = await (await s.fetch('/api/v1/clearing/network/latest.json')).json();
    expect(ev.attestation).toEqual(sealed.attestation);
    const att = ev.attestation;
    expect(att.receipts.from).toBe(0);
    // Per-SKU totals equal the meter, summed here.
    const rows = await meter(s, key.id);
    const astl = att.per_sku.find((x: { sku: string }) => x.sku === 'astl_publish');
    expect(astl.amount_micros).toBe(String(rows.filter((r) => r.sku === 'astl_publish').reduce((a, r) => a + r.micros, 0)));
    expect(att.net_root).toBe(
      Buffer.from(rootOf(att.per_sku.map((x: unknown) => leafHash(new TextEncoder().encode(canonicalJson(x)))))).toString('base64'),
    );
    // The leaf is in the clearing log under a signed checkpoint.
    await checkInclusion(s, 'clearing', ev.clearing.checkpoint.note, ev.clearing.index, unb64(ev.leaf), ev.clearing.hashes);
    expect(new TextDecoder().decode(unb64(ev.leaf))).toBe(canonicalJson(att));
    // The attested receipts root is a prefix of the signed receipts log.
    const { verifier_key } = await (await s.fetch('/api/v1/logs/receipts')).json();
    const rcp = parseCheckpointText(await openNote(ev.receipts.checkpoint.note, verifier_key));
    verifyConsistency(att.receipts.to, rcp.size, ev.receipts.consistency.hashes.map(unb64), unb64(att.receipts.tree_root), rcp.root);
    // Recount acts from the receipts log's entries.
    const entries = (await (await s.fetch(`/api/v1/logs/receipts/entries?start=0&limit=1000`)).json()).entries.slice(0, att.receipts.to);
    const counted = new Map<string, number>();
    for (const e of entries)
      counted.set(`${e.payload.kind}/${e.payload.decision}`, (counted.get(`${e.payload.kind}/${e.payload.decision}`) ?? 0) + 1);
    for (const a of att.receipts.acts) expect(counted.get(`${a.kind}/${a.decision}`)).toBe(a.count);
    // The catalog shows it; the next seal starts where this one ended.
    const cat = await (await s.fetch('/api/v1/clearing/catalog')).json();
    expect(cat).toMatchObject({
      schema: 'svc-clearing-window-v1',
      network_checkpoint: { checkpoint_id: att.checkpoint_id, net_root: att.net_root },
    });
    await post('/api/v1/absence/witness', { act_kind: 'zzz', preset: 'agentic' });
    const next = await sealNow(s.ctx.ledger);
    expect(next.attestation.receipts.from).toBe(att.receipts.to);
    expect(next.attestation.per_sku).toEqual([expect.objectContaining({ sku: 'absence_witness', count: 1, amount_usd: '0.05' })]);
  });
});

describe('webhooks', () => {
  it('delivers signed publish and fire events, retries with backoff, and survives a restart', async () => {
    // The first three attempts fail (503), every later one is delivered (200).
    const failFirst = 3;
    const hook = await startReceiver([503, 503, 503]);
    const url = hook.url('/hook');
    const env = {
      CLEARING_INTERVAL_HOURS: '0',
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_BACKOFF_MS: '400',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    };
    let s = await startTestServer(env);
    const dir = s.dir;
    try {
      const key = await s.newKey('hooks');
      const bad = await s.fetch('/signal/trigger/webhooks', { method: 'POST', key: key.secret, json: { url: 'ftp://x' } });
      expect(bad.status).toBe(400);
      expectBadInput(await bad.json(), 'url');
      const sub = await s.fetch('/signal/trigger/webhooks', {
        method: 'POST',
        key: key.secret,
        json: { url, template_id: 'bind_gate_hold' },
      });
      expect(sub.status).toBe(201);
      const t = await (
        await s.fetch('/signal/trigger/publish', {
          method: 'POST',
          key: key.secret,
          json: { template_id: 'bind_gate_hold', threshold: { metric: 'holds', operator: 'gte', value: '1' } },
        })
      ).json();
      const f = await s.fetch('/api/v1/foundry/trigger/fire', {
        method: 'POST',
        key: key.secret,
        json: { trigger_id: t.trigger_id, reading: '2' },
      });
      expect(f.status).toBe(200);
      // Wait for the first failed attempt, then stop the server mid-retry.
      await hook.arrived(1);
      await s.close();
      s = await startTestServer(env, dir);
      await hook.arrived(failFirst + 2);
      const received = hook.calls.slice(failFirst);
      expect(received.map((r) => JSON.parse(r.body).type).sort()).toEqual(['trigger.fired', 'trigger.published']);
      // Each body names its event's entry in the triggers log: the publish's is the index its answer proved.
      const published = received.map((r) => JSON.parse(r.body)).find((b) => b.type === 'trigger.published');
      expect(published).toMatchObject({ trigger_id: t.trigger_id, log_index: t.inclusion.index });
      // Verify each signature with WebCrypto (a second implementation).
      const pub = await (await s.fetch('/crypto/public-key')).json();
      const k = await crypto.subtle.importKey('jwk', pub.jwk, { name: 'Ed25519' }, false, ['verify']);
      for (const r of received) {
        const [scheme, sig] = String(r.headers['webhook-signature']).split(',');
        expect(scheme).toBe('v1a');
        const signed = new TextEncoder().encode(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`);
        expect(await crypto.subtle.verify('Ed25519', k, Buffer.from(sig!, 'base64'), signed)).toBe(true);
        expect(
          await crypto.subtle.verify(
            'Ed25519',
            k,
            Buffer.from(sig!, 'base64'),
            new TextEncoder().encode(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body} `),
          ),
        ).toBe(false);
        expect(JSON.parse(r.body).trigger_id).toBe(t.trigger_id);
      }
      const listing = async () =>
        (await (await s.fetch('/signal/trigger/webhooks', { key: key.secret })).json()) as {
          deliveries: Array<{ state: string; attempts: Array<{ status: number }> }>;
        };
      // Both deliveries recorded as delivered: nothing is pending, so no request can follow.
      await untilCommitted(s.ctx.ledger, async () => (await listing()).deliveries.every((d) => d.state === 'delivered'));
      const attempts = (await listing()).deliveries.flatMap((d) => d.attempts.map((a) => a.status));
      // The receiver saw every attempt; the one in flight when the first server stopped may have no record (it was retried after its lease).
      expect(hook.calls).toHaveLength(failFirst + 2);
      expect(attempts.filter((x: number) => x === 503).length).toBeGreaterThanOrEqual(failFirst - 1);
      expect(attempts.filter((x: number) => x === 200)).toHaveLength(2);
    } finally {
      await s.stop();
      await hook.close();
    }
  }, 30_000);
});

describe('webhook deliveries queued with a group', () => {
  it("queue a row for each event of a subscribed owner, none for an owner without subscriptions, in one group's events", async () => {
    const ledger = await openLedger(loadConfig(testEnv(tempDir())));
    try {
      const event = (keyId: string, id: string) => ({
        keyId,
        match: { trigger_id: `trg_${id}`, template_id: 'incident_sealed' },
        event: { id, type: 'trigger.published', body: { event_id: id } },
      });
      await ledger.write(async (tx) => {
        await createSubscription(tx, {
          id: 'whs_a',
          key_id: 'key_a',
          url: 'https://a.hooks.fusegate.invalid/',
          trigger_id: null,
          template_id: null,
          created_at: '2026-11-27T00:00:00.000Z',
        });
        await createSubscription(tx, {
          id: 'whs_a2',
          key_id: 'key_a',
          url: 'https://a2.hooks.fusegate.invalid/',
          trigger_id: null,
          template_id: 'ai_model_change',
          created_at: '2026-11-27T00:00:00.000Z',
        });
      });
      await ledger.write((tx) => enqueueDeliveries(tx, [event('key_a', 'evt_1'), event('key_b', 'evt_2'), event('key_a', 'evt_3')]));
      const rs = await ledger.read.execute('SELECT subscription_id, event_id, body FROM webhook_deliveries ORDER BY event_id');
      // key_a's subscription to everything gets both of its events; the one to another template none; key_b has no subscription.
      expect(rs.rows.map((r) => [r.subscription_id, r.event_id, JSON.parse(String(r.body))])).toEqual([
        ['whs_a', 'evt_1', { event_id: 'evt_1' }],
        ['whs_a', 'evt_3', { event_id: 'evt_3' }],
      ]);
      await ledger.write((tx) => enqueueDeliveries(tx, [event('key_b', 'evt_4')]));
      expect((await ledger.read.execute('SELECT count(*) AS n FROM webhook_deliveries')).rows[0]!.n).toBe(2);
    } finally {
      ledger.close();
    }
  });
});
