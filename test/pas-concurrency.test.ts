/**
 * Exactly once under load (issue 6, point 3): 100 concurrent redeems of one
 * bind ticket give one success and 99 HALT replay, on a file database, in one
 * process and across several server processes sharing the database; and
 * the exclusion tree, updated by each redeem in its own transaction, stays
 * exactly the tree of the spend leaves when redeems race across processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobKey, verifyExclusionProof } from '../src/crypto/exclusion.ts';
import { buildTree } from '../src/crypto/sparse-merkle.ts';
import { exclusionHead } from '../src/ledger/pas-exclusion.ts';
import { startTestServer, testEnv, type TestServer } from './support/server.ts';
import { allReceipts, chargesOf } from './support/ledger-reads.ts';
import { PROCESS_TEST_TIMEOUT_MS } from './support/cli.ts';

const WRITE = { op: 'bind', policy: 'P-7', premium: '100.00' };

let s: TestServer;
let key: { id: string; secret: string };
let fuseId: string;
const children: ChildProcess[] = [];

async function issue(licenseId: string, jobId: string): Promise<string> {
  const r = await s.fetch('/v1/pas/pas-a/pre-bind', {
    json: { fuse_id: fuseId, license_id: licenseId, job_id: jobId, write: WRITE },
    key: key.secret,
  });
  expect(r.status).toBe(200);
  return (await r.json()).ticket.ticket_id;
}

async function storm(urls: string[], ticketId: string, n = 100) {
  const results = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const r = await fetch(urls[i % urls.length] + '/v1/pas/bind-ticket/redeem', {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ticket_id: ticketId, write: WRITE, now: new Date().toISOString() }),
      });
      return { status: r.status, body: await r.json() };
    }),
  );
  return {
    ok: results.filter((r) => r.status === 200 && r.body.decision === 'ALLOW').length,
    replay: results.filter((r) => r.status === 409 && r.body.decision === 'HALT' && r.body.reason === 'replay').length,
    other: results.filter((r) => !(r.status === 200 || (r.status === 409 && r.body.reason === 'replay'))),
  };
}

async function ledgerCounts(ticketId: string) {
  const db = s.ctx.ledger.read;
  const leaves = await db.execute({ sql: 'SELECT COUNT(*) AS n FROM pas_spend_leaves WHERE ticket_id = ?', args: [ticketId] });
  const receipts: Record<string, number> = {};
  for (const r of await allReceipts(db))
    if (r.payload.subject === ticketId) receipts[r.payload.decision] = (receipts[r.payload.decision] ?? 0) + 1;
  return { leaves: Number(leaves.rows[0]!.n), receipts };
}

function spawnServer(env: Record<string, string>): Promise<string> {
  const { BASE_URL: _b, SITE_URL: _s, ...parent } = process.env;
  const child = spawn(process.execPath, ['src/server.ts'], {
    env: { ...parent, ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /"url":"(http:\/\/[^"]+)"/.exec(buf);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${buf}`)));
  });
}

beforeAll(async () => {
  s = await startTestServer();
  key = await s.newKey('storm');
  fuseId = (await (await s.fetch('/v1/fuses', { json: { state: 'LIVE' }, key: key.secret })).json()).fuse_id;
  expect((await s.fetch('/v1/pas/licenses/lic_storm/charge', { method: 'POST', key: key.secret })).status).toBe(200);
});
afterAll(async () => {
  await Promise.all(
    children.map((c) =>
      c.exitCode !== null
        ? undefined
        : new Promise<void>((r) => {
            c.once('exit', () => r());
            c.kill('SIGTERM');
          }),
    ),
  );
  await s.stop();
});

describe('exactly-once redeem', () => {
  it('100 concurrent redeems in one process: one ALLOW, 99 HALT replay, one spend leaf', async () => {
    const ticket = await issue('lic_storm', 'job_storm_1');
    const r = await storm([s.url], ticket);
    expect(r.other).toEqual([]);
    expect(r.ok).toBe(1);
    expect(r.replay).toBe(99);
    expect(await ledgerCounts(ticket)).toEqual({ leaves: 1, receipts: { ALLOW: 1, HALT: 99 } });
  });

  it('four tickets stormed together in one process (their redeems read in one statement a group): each ALLOWs once', async () => {
    // A key of its own, so that the other tests' counts of the storm key's charges stay as they are.
    const own = await s.newKey('storm-many');
    const fuse = (await (await s.fetch('/v1/fuses', { json: { state: 'LIVE' }, key: own.secret })).json()).fuse_id;
    expect((await s.fetch('/v1/pas/licenses/lic_many/charge', { method: 'POST', key: own.secret })).status).toBe(200);
    const tickets = await Promise.all(
      [1, 2, 3, 4].map(async (i) => {
        const r = await s.fetch('/v1/pas/pas-a/pre-bind', {
          json: { fuse_id: fuse, license_id: 'lic_many', job_id: `job_many_${i}`, write: WRITE },
          key: own.secret,
        });
        return String((await r.json()).ticket.ticket_id);
      }),
    );
    const redeem = async (ticketId: string) => {
      const r = await s.fetch('/v1/pas/bind-ticket/redeem', {
        json: { ticket_id: ticketId, write: WRITE, now: new Date().toISOString() },
        key: own.secret,
      });
      return { ticketId, status: r.status, body: await r.json() };
    };
    // Interleaved, with an unknown ticket among them: the groups hold redeems of several tickets and one that is not there.
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => redeem(i % 25 === 24 ? 'bt_not_issued' : tickets[i % 4]!)));
    const unknown = results.filter((r) => r.ticketId === 'bt_not_issued');
    expect(unknown.map((r) => [r.status, r.body.code])).toEqual(Array(4).fill([404, 'unknown_ticket']));
    for (const t of tickets) {
      const mine = results.filter((r) => r.ticketId === t);
      expect(mine.filter((r) => r.status === 200 && r.body.decision === 'ALLOW')).toHaveLength(1);
      expect(mine.filter((r) => r.status === 409 && r.body.reason === 'replay')).toHaveLength(mine.length - 1);
      expect(await ledgerCounts(t)).toEqual({ leaves: 1, receipts: { ALLOW: 1, HALT: mine.length - 1 } });
    }
  });

  it(
    '100 concurrent redeems spread over three server processes on one database file: the same',
    async () => {
      const env = testEnv(s.dir);
      const urls = await Promise.all([spawnServer(env), spawnServer(env)]);
      const ticket = await issue('lic_storm', 'job_storm_2');
      const r = await storm([s.url, ...urls], ticket);
      expect(r.other).toEqual([]);
      expect(r.ok).toBe(1);
      expect(r.replay).toBe(99);
      expect(await ledgerCounts(ticket)).toEqual({ leaves: 1, receipts: { ALLOW: 1, HALT: 99 } });
      const meter: Record<string, number> = {};
      for (const c of await chargesOf(s.ctx.ledger.read, key.id)) meter[c.sku] = (meter[c.sku] ?? 0) + 1;
      // 2 pre-binds + 2 successful redeems are execute_gate; 198 HALTs are NAP hold.
      expect(meter).toEqual({ execute_gate: 4, hold: 198 });

      // Redeems of different jobs, at once through the three processes: each adds its job to the
      // exclusion tree in its own transaction, and the tree ends up exactly that of the spend leaves.
      const jobs = Array.from({ length: 24 }, (_, i) => `job_tree_${i}`);
      const tickets = await Promise.all(jobs.map((j) => issue('lic_storm', j)));
      const all = [s.url, ...urls];
      const statuses = await Promise.all(
        tickets.map(async (t, i) => {
          const res = await fetch(all[i % all.length] + '/v1/pas/bind-ticket/redeem', {
            method: 'POST',
            headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
            body: JSON.stringify({ ticket_id: t, write: WRITE, now: new Date().toISOString() }),
          });
          return res.status;
        }),
      );
      expect(statuses).toEqual(jobs.map(() => 200));
      const leaves = await s.ctx.ledger.read.execute({ sql: 'SELECT job_id FROM pas_spend_leaves WHERE key_id = ?', args: [key.id] });
      const head = await exclusionHead(s.ctx.ledger.read, key.id);
      expect(head.size).toBe(leaves.rows.length);
      const rebuilt = await buildTree(leaves.rows.map((r) => jobKey(String(r.job_id))).sort(Buffer.compare), () => undefined);
      expect(Buffer.from(head.root).toString('hex')).toBe(Buffer.from(rebuilt).toString('hex'));
      const pk = new Uint8Array(Buffer.from((await (await s.fetch('/crypto/public-key')).json()).jwk.x, 'base64url'));
      for (const [i, job] of jobs.entries()) {
        const answer = await (
          await fetch(`${all[i % all.length]}/v1/pas/exclusion?job_id=${job}`, { headers: { authorization: `Bearer ${key.secret}` } })
        ).json();
        expect((await verifyExclusionProof(job, answer, pk)).present, job).toBe(true);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
