import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifiedReceiptPayload } from './support/receipts.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

// A second implementation of canonical JSON (sorted keys, no spaces) and of RFC 9162 hashing.
const canon = (v: unknown): string =>
  v === null || typeof v !== 'object'
    ? JSON.stringify(v)
    : Array.isArray(v)
      ? `[${v.map(canon).join(',')}]`
      : `{${Object.keys(v)
          .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canon((v as Record<string, unknown>)[k])}`)
          .join(',')}}`;
const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const hex = (s: string) => createHash('sha256').update(s).digest('hex');
const leaf = (data: string) => sha(Buffer.from([0]), Buffer.from(data)).toString('hex');
const node = (l: string, r: string) => sha(Buffer.from([1]), Buffer.from(l, 'hex'), Buffer.from(r, 'hex')).toString('hex');

const meter = async (s: TestServer, keyId: string) => (await chargesOf(s.ctx.ledger.read, keyId)).map((r) => `${r.sku}:${r.amount_micros}`);

async function receiptPayload(s: TestServer, verifyUrl: string) {
  return verifiedReceiptPayload(s, verifyUrl);
}

const SYSTEM = {
  name: 'Underwriting assistant',
  version: '2.1.0',
  provider: 'Example Insurer SE',
  intended_purpose: 'Scores life-insurance applications for a human underwriter',
};
const READINGS = [
  { source_id: 'network_a', value: '0.82' },
  { source_id: 'network_b', value: '0.80' },
  { source_id: 'sealed_reading', value: '0.81' },
];

describe('Foundry: conformity packs, pipeline runs and tenant projections', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  let other: { id: string; secret: string };
  const post = (path: string, json: unknown, k = key.secret) => s.fetch(path, { method: 'POST', json, key: k });

  beforeAll(async () => {
    s = await startTestServer();
    key = await s.newKey('foundry');
    other = await s.newKey('other');
  });
  afterAll(() => s.stop());

  it('generates a sealed insurance pack: Annex III 5(c), Art 12 envelope, evidenced and open controls; the hash is recomputable and the receipt seals it', async () => {
    const r = await post('/api/v1/conformity/generate', {
      category_id: 'insurance',
      system: SYSTEM,
      evidence: { 'actuarial review': 'doc-2026-114' },
    });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b.pack.category).toMatchObject({ category_id: 'insurance', high_risk: true });
    expect(b.pack.category.annex_iii).toContain('point 5(c)');
    expect(b.pack.article_12_envelope.retention_min_months).toBe(6);
    expect(b.pack.article_12_envelope.record_fields.map((f: { field: string }) => f.field)).toContain('receipt_id');
    expect(b.pack.risk_controls).toEqual([
      { control: 'silent-AI disclosure', status: 'open', evidence: null },
      { control: 'actuarial review', status: 'evidenced', evidence: 'doc-2026-114' },
      { control: 'bind-gate proof', status: 'open', evidence: null },
    ]);
    expect(b.pack.open_controls).toBe(2);
    expect(b.pack_hash).toBe(hex(canon(b.pack)));
    expect(b.charge).toEqual({ sku: 'conformity_pack', amount_usd: '2.50', nap: false });
    const p = await receiptPayload(s, b.verify_url);
    expect(p).toMatchObject({ kind: 'conformity_pack', decision: 'SEALED', subject: b.pack_id, fingerprint: b.pack_hash, key_id: key.id });

    const again = await s.fetch(`/api/v1/conformity/packs/${b.pack_id}`, { key: key.secret });
    expect(again.status).toBe(200);
    const stored = await again.json();
    expect(stored.pack).toEqual(b.pack);
    expect(hex(canon(stored.pack))).toBe(b.pack_hash);
    expect((await s.fetch(`/api/v1/conformity/packs/${b.pack_id}`, { key: other.secret })).status).toBe(404);
  });

  it('a companion pack names no Annex III point and no conformity assessment', async () => {
    const b = await (await post('/api/v1/conformity/generate', { category_id: 'companion', system: SYSTEM })).json();
    expect(b.pack.category).toMatchObject({ category_id: 'companion', annex_iii: null, high_risk: false });
    expect(b.pack.conformity_assessment).toBeNull();
    expect(b.pack.open_controls).toBe(3);
  });

  it('refuses an unknown category, evidence for a control the category lacks, and no key; nothing is charged', async () => {
    const before = await meter(s, key.id);
    const badCat = await post('/api/v1/conformity/generate', { category_id: 'biometrics', system: SYSTEM });
    expect(badCat.status).toBe(400);
    expect(badCat.headers.get('content-type')).toContain('application/problem+json');
    expect((await badCat.json()).errors[0].field).toBe('category_id');
    const badControl = await post('/api/v1/conformity/generate', {
      category_id: 'justice',
      system: SYSTEM,
      evidence: { 'bias monitoring': 'x' },
    });
    expect(badControl.status).toBe(422);
    expect(await badControl.json()).toMatchObject({ code: 'unknown_control' });
    expect(
      (await s.fetch('/api/v1/conformity/generate', { method: 'POST', json: { category_id: 'justice', system: SYSTEM } })).status,
    ).toBe(401);
    expect(await meter(s, key.id)).toEqual(before);
  });

  it('a full pipeline run does every step (print optional), fires at 25 bps of the exposure, and charges foundry_pipeline once', async () => {
    const before = (await meter(s, key.id)).length;
    const r = await post('/api/v1/foundry/pipeline/run', {
      tenant_id: 'acme-mga',
      readings: READINGS,
      template_id: 'ai_model_change',
      threshold: { metric: 'model_drift_score', operator: 'gte', value: '0.75' },
      exposure_usd: '250000.00',
      conformity: { category_id: 'insurance', system: SYSTEM },
      asset: { asset_id: 'US0378331005', units: 1000, custodian: 'cust-a' },
    });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b.status).toBe('complete');
    expect(b.steps.map((x: { layer: string; status: string }) => `${x.layer}:${x.status}`)).toEqual([
      'physics:done',
      'print:skipped',
      'oracle:done',
      'obligation:done',
      'settlement:done',
      'conformity:done',
      'depository:done',
      'clearing:done',
      'stack:done',
    ]);
    const step = (layer: string) => b.steps.find((x: { layer: string }) => x.layer === layer);
    expect(step('oracle').detail.status).toBe('CONSENSUS');
    // 250 000.00 x 25 bps = 625.00
    expect(step('settlement').detail).toMatchObject({ state: 'FIRED', fee_bps: 25, fee_usd: '625.00' });
    expect(step('depository').detail.parity).toEqual({ holds: true, custody_units: 1000, token_supply: 1000 });
    expect(step('conformity').next).toEqual({ method: 'POST', path: '/api/v1/conformity/generate' });
    expect(b.charge).toEqual({ sku: 'foundry_pipeline', amount_usd: '0.35', nap: false });
    const rows = await meter(s, key.id);
    expect(rows.slice(before)).toEqual(['foundry_pipeline:350000']);
    // The tenant is the caller's own name for its customer: the public receipt holds a commitment, its account opens it.
    const payload = await receiptPayload(s, b.verify_url);
    expect(payload).toMatchObject({ kind: 'foundry_pipeline', decision: 'COMPLETE', subject: expect.stringMatching(/^c1:sha256:/) });
    expect(JSON.stringify(payload)).not.toContain('acme-mga');
    const opened = await (await s.fetch(`/v1/receipts/${b.receipt_id}/openings`, { key: key.secret })).json();
    expect(opened.openings).toMatchObject([{ field: 'subject', commitment: payload.subject, value: 'acme-mga' }]);
  });

  it('a disputed reading holds the oracle step and skips settlement; a threshold not reached holds settlement; the run is partial', async () => {
    const disputed = await (
      await post('/api/v1/foundry/pipeline/run', {
        tenant_id: 'acme-mga',
        readings: [
          { source_id: 'network_a', value: '1' },
          { source_id: 'network_b', value: '5' },
          { source_id: 'network_c', value: '9' },
        ],
        template_id: 'bind_gate_hold',
        threshold: { metric: 'm', operator: 'gte', value: '1' },
        exposure_usd: '1000.00',
      })
    ).json();
    expect(disputed.status).toBe('partial');
    const at = (b: { steps: Array<{ layer: string; status: string; detail: Record<string, unknown> }> }, layer: string) =>
      b.steps.find((x) => x.layer === layer)!;
    expect(at(disputed, 'oracle')).toMatchObject({ status: 'held', detail: { reason: 'disputed' } });
    expect(at(disputed, 'settlement').status).toBe('skipped');
    expect(at(disputed, 'conformity').status).toBe('skipped');

    const notYet = await (
      await post('/api/v1/foundry/pipeline/run', {
        tenant_id: 'acme-mga',
        readings: READINGS,
        template_id: 'ai_model_change',
        threshold: { metric: 'm', operator: 'gte', value: '0.9' },
        exposure_usd: '1000.00',
      })
    ).json();
    expect(at(notYet, 'settlement')).toMatchObject({
      status: 'held',
      detail: { reason: 'threshold_not_reached', state: 'ARMED', reading: '0.81' },
    });

    const above = await (
      await post('/api/v1/foundry/pipeline/run', {
        tenant_id: 'acme-mga',
        readings: READINGS,
        template_id: 'ai_model_change',
        threshold: { metric: 'm', operator: 'gte', value: '0.5' },
        exposure_usd: '5000000.01',
      })
    ).json();
    expect(at(above, 'settlement')).toMatchObject({ status: 'held', detail: { reason: 'exposure_above_ceiling' } });
  });

  it('refuses a malformed run (bad operator, unknown template) without charging', async () => {
    const before = await meter(s, key.id);
    const bad = await post('/api/v1/foundry/pipeline/run', {
      tenant_id: 'acme-mga',
      threshold: { metric: 'm', operator: 'about', value: '1' },
    });
    expect(bad.status).toBe(400);
    expect((await bad.json()).errors[0].field).toBe('threshold.operator');
    expect((await post('/api/v1/foundry/pipeline/run', { tenant_id: 'acme-mga', template_id: 'nope' })).status).toBe(400);
    expect((await post('/api/v1/foundry/pipeline/run', { tenant_id: 'a b' })).status).toBe(400);
    expect(await meter(s, key.id)).toEqual(before);
  });

  it("projects a tenant from its runs: lines for the last run's done steps that sum to the total; unknown tenants and other keys get 404", async () => {
    expect((await s.fetch('/api/v1/foundry/projection/nobody', { key: key.secret })).status).toBe(404);
    expect((await s.fetch('/api/v1/foundry/projection/acme-mga', { key: other.secret })).status).toBe(404);
    const r = await s.fetch('/api/v1/foundry/projection/acme-mga?runs_per_month=10', { key: key.secret });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b.runs).toBe(4);
    expect(b.runs_last_30_days).toBe(4);
    expect(b.last_run.status).toBe('partial');
    expect(b.last_run.done).toEqual(['physics', 'oracle', 'obligation', 'clearing', 'stack']);
    expect(b.projection.illustrative).toBe(true);
    expect(b.projection.lines.map((l: { line: string }) => l.line)).toEqual([
      'pipeline runs x foundry_pipeline',
      'physics x seal',
      'oracle x oracle_aggregate',
      'obligation x trigger_publish',
      'stack x execute_gate',
    ]);
    expect(b.projection.lines.every((l: { units: number }) => l.units === 10)).toBe(true);
    const micros = (u: string) => Math.round(Number(u) * 1e6);
    const sum = b.projection.lines.reduce((a: number, l: { monthly_usd: string }) => a + micros(l.monthly_usd), 0);
    expect(micros(b.projection.monthly_usd)).toBe(sum);
    // (0.35 + 0.05 + 0.15 + 0.25 + 0.10) x 10 = 9.00
    expect(b.projection.monthly_usd).toBe('9.00');
    const dflt = await (await s.fetch('/api/v1/foundry/projection/acme-mga', { key: key.secret })).json();
    expect(dflt.projection.inputs).toEqual({ runs_per_month: 4 });
    expect((await s.fetch('/api/v1/foundry/projection/acme-mga?runs_per_month=0', { key: key.secret })).status).toBe(400);
  });

  it('without an upstream the inference proxy answers 503 problem+json that says so, and charges nothing', async () => {
    const before = await meter(s, key.id);
    const r = await post('/api/v1/inference/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(503);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    const p = await r.json();
    expect(p.code).toBe('inference_upstream_not_configured');
    expect(p.detail).toContain('INFERENCE_UPSTREAM_URL');
    expect(await meter(s, key.id)).toEqual(before);
  });
});

describe('Inference-root proxy against a real upstream on loopback', () => {
  let s: TestServer;
  let upstream: Server;
  let upstreamEnv: Record<string, string>;
  let key: { id: string; secret: string };
  let other: { id: string; secret: string };
  const seen: Array<{ url: string; headers: IncomingHttpHeaders; body: unknown }> = [];
  const chat = (body: unknown, session?: string, k = key.secret) =>
    s.fetch('/api/v1/inference/chat/completions', {
      method: 'POST',
      json: body,
      key: k,
      headers: session ? { 'fusegate-session': session } : {},
    });
  const ask = (content: string, model = 'test-model') => ({ model, messages: [{ role: 'user', content }], temperature: 0 });

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        const body = JSON.parse(text);
        seen.push({ url: req.url ?? '', headers: req.headers, body });
        if (body.model === 'boom') return void res.writeHead(500).end('{"error":"upstream exploded"}');
        const answer = () =>
          res.writeHead(200, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              id: `chatcmpl-${seen.length}`,
              object: 'chat.completion',
              model: body.model,
              choices: [
                { index: 0, message: { role: 'assistant', content: `echo: ${body.messages.at(-1).content}` }, finish_reason: 'stop' },
              ],
              usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
            }),
          );
        // 'slow' is never answered: only the proxy's INFERENCE_TIMEOUT_MS ends that call.
        if (body.model !== 'slow') answer();
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    upstreamEnv = { INFERENCE_UPSTREAM_URL: `http://127.0.0.1:${port}/v1`, INFERENCE_UPSTREAM_KEY: 'upstream-secret' };
    // The default INFERENCE_TIMEOUT_MS: a busy machine's upstream calls are slow, not timed out.
    s = await startTestServer({ ...upstreamEnv, INFERENCE_SESSION_MAX_EXCHANGES: '2' });
    key = await s.newKey('agent');
    other = await s.newKey('other');
  });
  afterAll(async () => {
    await s.stop();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  it("forwards with the upstream key (never the caller's), answers the completion unchanged plus its seal, and chains a session Merkle root a second implementation recomputes", async () => {
    const first = await chat(ask('hello'));
    expect(first.status).toBe(200);
    const a = await first.json();
    const session = first.headers.get('fusegate-session')!;
    expect(session).toMatch(/^inf_/);
    expect(seen.at(-1)!.url).toBe('/v1/chat/completions');
    expect(seen.at(-1)!.headers.authorization).toBe('Bearer upstream-secret');
    expect(seen.at(-1)!.body).toEqual(ask('hello'));
    const { fusegate: sealA, ...completionA } = a;
    expect(completionA.choices[0].message.content).toBe('echo: hello');
    expect(sealA).toMatchObject({
      session_id: session,
      index: 0,
      session_size: 1,
      charge: { sku: 'inference_seal', amount_usd: '0.08', nap: false },
    });
    expect(sealA.request_sha256).toBe(hex(canon(ask('hello'))));
    expect(sealA.response_sha256).toBe(hex(canon(completionA)));
    const leafA = leaf(
      canon({ receipt_id: sealA.receipt_id, request_sha256: sealA.request_sha256, response_sha256: sealA.response_sha256 }),
    );
    expect(sealA.leaf_hash).toBe(leafA);
    expect(sealA.session_root).toBe(leafA);

    const second = await chat(ask('again'), session);
    expect(second.status).toBe(200);
    const { fusegate: sealB, ...completionB } = await second.json();
    const leafB = leaf(
      canon({ receipt_id: sealB.receipt_id, request_sha256: hex(canon(ask('again'))), response_sha256: hex(canon(completionB)) }),
    );
    expect(sealB).toMatchObject({ session_id: session, index: 1, session_size: 2, leaf_hash: leafB, session_root: node(leafA, leafB) });
    expect(await receiptPayload(s, sealB.verify_url)).toMatchObject({
      kind: 'inference_seal',
      subject: session,
      fingerprint: sealB.request_sha256,
      key_id: key.id,
    });

    const view = await (await s.fetch(`/api/v1/inference/sessions/${session}`, { key: key.secret })).json();
    expect(view).toMatchObject({ session_id: session, size: 2, root: node(leafA, leafB) });
    expect(view.leaves.map((l: { leaf_hash: string }) => l.leaf_hash)).toEqual([leafA, leafB]);
    expect((await s.fetch(`/api/v1/inference/sessions/${session}`, { key: other.secret })).status).toBe(404);
    expect(await meter(s, key.id)).toEqual(['inference_seal:80000', 'inference_seal:80000']);

    // The session holds INFERENCE_SESSION_MAX_EXCHANGES (2): a third is refused before the upstream is called.
    const calls = seen.length;
    const full = await chat(ask('third'), session);
    expect(full.status).toBe(409);
    expect((await full.json()).code).toBe('session_full');
    expect(seen.length).toBe(calls);
  });

  it('refuses streaming, an unknown or foreign session, an upstream failure and a timeout; nothing sealed or charged', async () => {
    const before = await meter(s, key.id);
    const stream = await chat({ ...ask('x'), stream: true });
    expect(stream.status).toBe(400);
    expect((await stream.json()).errors[0].field).toBe('stream');
    expect((await chat({ model: 'm', messages: [] })).status).toBe(400);
    const unknown = await chat(ask('x'), 'inf_nope');
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).code).toBe('unknown_session');
    const mine = (await chat(ask('mine'), undefined, other.secret)).headers.get('fusegate-session')!;
    expect((await chat(ask('x'), mine)).status).toBe(404);

    const boom = await chat(ask('x', 'boom'));
    expect(boom.status).toBe(502);
    expect(await boom.json()).toMatchObject({ code: 'upstream_error', upstream_status: 500 });
    expect(await meter(s, key.id)).toEqual(before);
    const leaves = await s.ctx.ledger.read.execute({ sql: 'SELECT COUNT(*) AS n FROM inference_leaves WHERE key_id = ?', args: [key.id] });
    expect(Number(leaves.rows[0]!.n)).toBe(2);

    // An upstream that never answers: only the timeout ends the call, short on a server of its own.
    const hurried = await startTestServer({ ...upstreamEnv, INFERENCE_TIMEOUT_MS: '200' });
    try {
      const k = await hurried.newKey('hurried');
      const before = await meter(hurried, k.id);
      const slow = await hurried.fetch('/api/v1/inference/chat/completions', { method: 'POST', json: ask('x', 'slow'), key: k.secret });
      expect(slow.status).toBe(504);
      expect((await slow.json()).code).toBe('upstream_timeout');
      expect(await meter(hurried, k.id)).toEqual(before);
      const none = await hurried.ctx.ledger.read.execute({
        sql: 'SELECT COUNT(*) AS n FROM inference_leaves WHERE key_id = ?',
        args: [k.id],
      });
      expect(Number(none.rows[0]!.n)).toBe(0);
    } finally {
      await hurried.stop();
    }
  });
});
