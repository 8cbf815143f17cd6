/**
 * Policy administration: POST /v1/pas/bind-ticket/redeem at 50 connections
 * against the bare node:http baseline (each request a HALT replay of one
 * consumed ticket: a batch-sealed receipt, its charge and the exactly-once
 * check, durably committed), POST /v1/pas/bind-check (an ALLOW on an
 * unbound job), POST /v1/pas/pas-a/pre-bind (a bind-only ticket for a new
 * job, under a parent whose outstanding children grow with every request)
 * and POST /v1/pas/mga-authority (an ALLOW within a grant's limits), and
 * exclusion proofs at 1,000,000 redeemed spend leaves (BENCH_PAS_LEAVES):
 * the proof right after a redeem, its size, its verify time and the tree
 * insert each redeem pays.
 */
import { createHash } from 'node:crypto';
import { createClient } from '@libsql/client';
import { verifyExclusionProof, type ExclusionProofJson } from '../src/crypto/exclusion.ts';
import { addExclusionLeaf, buildExclusionTree } from '../src/ledger/pas-exclusion.ts';
import { remoteSql } from '../src/ledger/drivers/embedded/open.ts';
import { cliJson, compareHttp, KEYED_WRITE_TARGET, fmt, report, spawnBaseline, spawnServer } from './lib.ts';

const LEAVES = Number(process.env.BENCH_PAS_LEAVES ?? 1_000_000);
const ROUNDS = 15;

async function benchRedeem(): Promise<void> {
  const server = await spawnServer();
  const baseline = await spawnBaseline();
  try {
    const { id, key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench']);
    const { fuse_id } = await cliJson(server.env, ['fuses', 'create', '--key', String(id)]);
    const auth = { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' };
    await fetch(`${server.url}/v1/pas/licenses/lic_bench/charge`, { method: 'POST', headers: auth });
    const write = { op: 'bind', policy: 'P-1', premium: '100.00' };
    const pre = await fetch(`${server.url}/v1/pas/pas-a/pre-bind`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ fuse_id, license_id: 'lic_bench', job_id: 'job_bench', write }),
    });
    const ticket = ((await pre.json()) as { ticket: { ticket_id: string } }).ticket.ticket_id;
    await compareHttp('pas', server, baseline, {
      name: 'POST /v1/pas/bind-ticket/redeem (HALT replay)',
      method: 'POST',
      path: '/v1/pas/bind-ticket/redeem',
      headers: auth,
      // HALT is 409 by design: count it as the answer it is.
      setupRequest: (req) => ({ ...req, body: JSON.stringify({ ticket_id: ticket, write, now: new Date().toISOString() }) }),
      target: KEYED_WRITE_TARGET,
    });
    await compareHttp('pas', server, baseline, {
      name: 'POST /v1/pas/bind-check (ALLOW)',
      method: 'POST',
      path: '/v1/pas/bind-check',
      headers: auth,
      body: JSON.stringify({ fuse_id, job_id: 'job_unbound' }),
      target: KEYED_WRITE_TARGET,
    });
    let job = 0;
    await compareHttp('pas', server, baseline, {
      name: 'POST /v1/pas/pas-a/pre-bind (bind-only ticket)',
      method: 'POST',
      path: '/v1/pas/pas-a/pre-bind',
      headers: auth,
      setupRequest: (req) => ({ ...req, body: JSON.stringify({ fuse_id, license_id: 'lic_bench', job_id: `job_${++job}`, write }) }),
      target: KEYED_WRITE_TARGET,
    });
    const granted = await fetch(`${server.url}/v1/pas/grants`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ lines: ['cyber'], states: ['CA'], max_premium: '25000.00', name: 'Bench MGA' }),
    });
    if (granted.status !== 201) throw new Error(`grant answered ${granted.status}`);
    const { grant_id } = (await granted.json()) as { grant_id: string };
    await compareHttp('pas', server, baseline, {
      name: 'POST /v1/pas/mga-authority (ALLOW)',
      method: 'POST',
      path: '/v1/pas/mga-authority',
      headers: auth,
      body: JSON.stringify({ fuse_id, grant_id, premium: '12500.00', line: 'cyber', state: 'CA' }),
      target: KEYED_WRITE_TARGET,
    });
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}

/** Bulk-loads `count` redeemed spend leaves for `keyId` and their exclusion tree (the migration's one-pass build). */
async function loadFixture(url: string, keyId: string, count: number): Promise<{ leaves: number; tree: number }> {
  const db = createClient({ url, intMode: 'number' });
  try {
    await db.execute('PRAGMA busy_timeout=10000');
    const ids = Array.from({ length: count }, (_, i) => `job_fx_${i.toString(36)}`);
    const now = new Date().toISOString();
    let t = performance.now();
    const tx = await db.transaction('write');
    for (let i = 0; i < ids.length; i += 2000) {
      const chunk = ids.slice(i, i + 2000);
      await tx.execute({
        sql: `INSERT INTO pas_spend_leaves (key_id, job_id, ticket_id, spend_fingerprint, redeemed_at) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
        args: chunk.flatMap((j) => [keyId, j, `bt_${j}`, 'fixture', now]),
      });
    }
    const leaves = performance.now() - t;
    t = performance.now();
    await buildExclusionTree(remoteSql(tx), keyId, ids);
    await tx.commit();
    return { leaves, tree: performance.now() - t };
  } finally {
    db.close();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Exclusion proofs at LEAVES redeemed spend leaves, on the real server: each
 * round redeems a ticket (adding its job to the tree in the redeem's own
 * transaction) and at once asks for the new job's proof and an absent job's;
 * against the same proof on a key with an empty tree. Then the insert cost
 * per redeem, in a write transaction on the 1,000,000-leaf tree (rolled
 * back), against the spend-leaf row insert the redeem makes anyway.
 */
async function benchExclusion(): Promise<void> {
  const server = await spawnServer();
  try {
    const { id, key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench-exclusion']);
    const { key: emptyKey } = await cliJson(server.env, ['keys', 'create', '--name', 'bench-empty']);
    const { fuse_id } = await cliJson(server.env, ['fuses', 'create', '--key', String(id)]);
    const auth = { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' };
    await fetch(`${server.url}/v1/pas/licenses/lic_excl/charge`, { method: 'POST', headers: auth });
    const write = { op: 'bind', policy: 'P-2', premium: '10.00' };
    const tickets: Array<{ job: string; ticket: string }> = [];
    for (let i = 0; i < ROUNDS; i++) {
      const job = `job_round_${i}`;
      const pre = await fetch(`${server.url}/v1/pas/pas-a/pre-bind`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ fuse_id, license_id: 'lic_excl', job_id: job, write }),
      });
      tickets.push({ job, ticket: ((await pre.json()) as { ticket: { ticket_id: string } }).ticket.ticket_id });
    }
    const built = await loadFixture(server.env.DATABASE_URL!, String(id), LEAVES);
    const n = LEAVES.toLocaleString('en-US');
    report(
      'pas',
      `fixture: ${n} spend leaves, then their tree in one pass (as the migration)`,
      fmt.ms(built.tree),
      `${fmt.ms(built.leaves)} (inserting the spend-leaf rows)`,
      fmt.ratio(built.tree, built.leaves),
    );

    const timed = async (path: string, headers: Record<string, string>, init: RequestInit = {}) => {
      const t = performance.now();
      const res = await fetch(`${server.url}${path}`, { ...init, headers });
      const body = await res.json();
      return { ms: performance.now() - t, status: res.status, body };
    };
    const emptyAuth = { authorization: `Bearer ${String(emptyKey)}` };
    // Warm-up; the first requests may find keep-alive sockets the server closed while the fixture loaded.
    for (let i = 0; i < 8; i++) await timed(`/v1/pas/exclusion?job_id=warm_${i}`, i % 2 ? auth : emptyAuth).catch(() => undefined);
    const empty: number[] = [];
    const afterPresent: number[] = [];
    const afterAbsent: number[] = [];
    const redeems: number[] = [];
    const answers: ExclusionProofJson[] = [];
    for (const { job, ticket } of tickets) {
      const r = await timed('/v1/pas/bind-ticket/redeem', auth, {
        method: 'POST',
        body: JSON.stringify({ ticket_id: ticket, write, now: new Date().toISOString() }),
      });
      if (r.status !== 200) throw new Error(`redeem answered ${r.status}`);
      redeems.push(r.ms);
      const present = await timed(`/v1/pas/exclusion?job_id=${job}`, auth);
      const absent = await timed(`/v1/pas/exclusion?job_id=${job}_absent`, auth);
      empty.push((await timed(`/v1/pas/exclusion?job_id=${job}`, emptyAuth)).ms);
      if (!present.body.present || absent.body.present) throw new Error('the exclusion proofs disagree with the redeems');
      afterPresent.push(present.ms);
      afterAbsent.push(absent.ms);
      answers.push(present.body as ExclusionProofJson, absent.body as ExclusionProofJson);
    }
    const base = median(empty);
    report(
      'pas',
      `exclusion proof right after a redeem @${n} leaves, absent job (median of ${ROUNDS}, max ${fmt.ms(Math.max(...afterAbsent))})`,
      fmt.ms(median(afterAbsent)),
      `${fmt.ms(base)} (same proof, empty tree)`,
      fmt.ratio(median(afterAbsent), base),
      { text: '< 50 ms', met: Math.max(...afterAbsent) < 50 },
    );
    report(
      'pas',
      `exclusion proof right after a redeem @${n} leaves, the redeemed job (max ${fmt.ms(Math.max(...afterPresent))})`,
      fmt.ms(median(afterPresent)),
      `${fmt.ms(base)} (same proof, empty tree)`,
      fmt.ratio(median(afterPresent), base),
    );
    report(
      'pas',
      `redeem @${n} leaves (HTTP, one at a time, durable; includes the tree insert)`,
      fmt.ms(median(redeems)),
      `${fmt.ms(base)} (exclusion proof, empty tree)`,
      fmt.ratio(median(redeems), base),
    );

    const pk = (await (await fetch(`${server.url}/crypto/public-key`)).json()) as { jwk: { x: string } };
    const raw = new Uint8Array(Buffer.from(pk.jwk.x, 'base64url'));
    let t = performance.now();
    const REPS = 20;
    for (let r = 0; r < REPS; r++) for (const a of answers) await verifyExclusionProof(a.job_id, a, raw);
    const check = (performance.now() - t) / (REPS * answers.length);
    t = performance.now();
    for (let i = 0; i < 20_000; i++) createHash('sha256').update(`job_${i}`).digest();
    const probeHash = (performance.now() - t) / 20_000;
    report(
      'pas',
      'exclusion verify time (note signature + sparse path)',
      `${(check * 1000).toFixed(1)} us`,
      `${(probeHash * 1000).toFixed(2)} us (one SHA-256)`,
      fmt.ratio(check, probeHash),
    );
    const bytes = answers.map((a) => Buffer.byteLength(JSON.stringify(a.proof)));
    const whole = answers.map((a) => Buffer.byteLength(JSON.stringify(a)));
    const sibs = answers.map((a) => a.proof.siblings.length);
    report(
      'pas',
      `exclusion proof size @${n} leaves (proof JSON; whole answer with signed note ${Math.round(median(whole))} B)`,
      `${Math.round(median(bytes))} B`,
      `${Math.round(median(sibs))} siblings of depth ${median(answers.map((a) => a.proof.depth))}`,
      'n/a',
    );

    const db = createClient({ url: server.env.DATABASE_URL!, intMode: 'number' });
    try {
      await db.execute('PRAGMA busy_timeout=10000');
      const tx = await db.transaction('write');
      let insert = 0;
      let row = 0;
      const INSERTS = 200;
      for (let i = 0; i < INSERTS; i++) {
        t = performance.now();
        await tx.execute({
          sql: 'INSERT INTO pas_spend_leaves (key_id, job_id, ticket_id, spend_fingerprint, redeemed_at) VALUES (?, ?, ?, ?, ?)',
          args: [String(id), `job_cost_${i}`, 'bt_cost', 'cost', new Date().toISOString()],
        });
        row += performance.now() - t;
        t = performance.now();
        await addExclusionLeaf(remoteSql(tx), String(id), `job_cost_${i}`);
        insert += performance.now() - t;
      }
      await tx.rollback();
      report(
        'pas',
        `exclusion insert per redeem @${n} leaves (in the write transaction)`,
        fmt.ms(insert / INSERTS),
        `${fmt.ms(row / INSERTS)} (the spend-leaf row insert)`,
        fmt.ratio(insert, row),
      );
    } finally {
      db.close();
    }
  } finally {
    await server.stop();
  }
}

export async function benchPas(): Promise<void> {
  await benchRedeem();
  await benchExclusion();
}
