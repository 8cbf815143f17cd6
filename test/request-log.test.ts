/**
 * The request log (issue 49 item 4, docs/request-log.md), over real HTTP on a
 * real database: every request made with a known key, failures included, in
 * its account's log and no other's; filters and pages; nothing secret kept;
 * rows past the retention deleted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestLogOf, sweepRequestLog } from '../src/api/request-log.ts';
import { loadConfig } from '../src/config.ts';
import { insertRequests, listRequests, requestTime, type AnsweredRequest } from '../src/ledger/request-log.ts';
import { startTestServer, type TestServer } from './support/server.ts';

interface Row {
  id: string;
  at: string;
  method: string;
  path: string;
  status: number;
  code: string | null;
  latency_ms: number;
  key_id: string;
  key_name: string | null;
  receipt_id: string | null;
  verify_url: string | null;
  request_id: string | null;
}

describe('the request log', () => {
  let s: TestServer;
  let owner: { id: string; secret: string; accountId: string };
  let agent: { id: string; secret: string; accountId: string };
  let revoked: { id: string; secret: string; accountId: string };
  let stranger: { id: string; secret: string; accountId: string };
  let fuse: string;
  const list = async (query = '', key = owner.secret) => {
    const r = await s.fetch(`/v1/requests${query}`, { key });
    expect(r.status, await r.clone().text()).toBe(200);
    return (await r.json()) as { data: Row[]; next: string | null; retention_days: number; enabled: boolean };
  };

  beforeAll(async () => {
    s = await startTestServer({ REQUEST_LOG_ENABLED: 'true' });
    owner = await s.newKey('owner');
    agent = await s.newKey('ci-agent', 10_000, 'agent', owner.accountId);
    revoked = await s.newKey('old-agent', 10_000, 'agent', owner.accountId);
    stranger = await s.newKey('stranger');
    fuse = (await (await s.fetch('/v1/fuses', { key: owner.secret, json: { state: 'LIVE' } })).json()).fuse_id;
    expect((await s.fetch(`/v1/keys/${revoked.id}/revoke`, { key: owner.secret, json: {} })).status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('logs each keyed request with its status, problem code, key name, latency and receipt; failures too', async () => {
    // Hops, twice: the first goes through h3, later ones through the act lane once the key is cached.
    // The first hop names its own X-Request-Id; the others send none.
    const hops: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await s.fetch('/v1/fuse/hop', {
        key: agent.secret,
        json: { fuse_id: fuse, action: { kind: 'pay' } },
        headers: i === 0 ? { 'x-request-id': 'ci-run-7.hop-1' } : {},
      });
      expect(r.status).toBe(200);
      hops.push((await r.json()).receipt_id as string);
    }
    const bad = await s.fetch('/v1/fuse/hop', { key: agent.secret, json: { fuse_id: fuse, action: { kind: 'pay' }, nonsense: 1 } });
    expect(bad.status).toBe(400);
    const badCode = (await bad.json()).code as string;
    const forbidden = await s.fetch(`/v1/keys/${owner.id}/revoke`, { key: agent.secret, json: {} });
    expect(forbidden.status).toBe(403);
    const forbiddenCode = (await forbidden.json()).code as string;
    expect((await s.fetch('/v1/me', { key: revoked.secret })).status).toBe(401);
    expect((await s.fetch('/v1/me', { key: 'fg_live_' + 'x'.repeat(43) })).status).toBe(401);
    expect((await s.fetch('/v1/receipts?token=hunter2', { key: agent.secret })).status).toBeLessThan(500);

    const { data, retention_days } = await list('?limit=200');
    expect(retention_days).toBe(30);
    expect((await list()).enabled).toBe(true);
    const mine = data.filter((r) => r.key_id !== owner.id);
    // Newest first.
    expect(mine.map((r) => r.id)).toEqual([...mine.map((r) => r.id)].sort().reverse());
    const hopRows = mine.filter((r) => r.path === '/v1/fuse/hop' && r.status === 200);
    expect(hopRows.map((r) => r.receipt_id).sort()).toEqual([...hops].sort());
    for (const r of hopRows) {
      expect(r).toMatchObject({ method: 'POST', key_id: agent.id, key_name: 'ci-agent', code: null });
      expect(r.verify_url).toBe(`${s.ctx.config.BASE_URL}/v1/receipts/${r.receipt_id}`);
      expect(r.latency_ms).toBeGreaterThanOrEqual(0);
    }
    // The caller's own request id is kept; one the service made for an answer is not (nobody holds it).
    expect(hopRows.find((r) => r.receipt_id === hops[0])!.request_id).toBe('ci-run-7.hop-1');
    expect(hopRows.filter((r) => r.receipt_id !== hops[0]).map((r) => r.request_id)).toEqual([null, null]);
    expect(mine).toContainEqual(expect.objectContaining({ path: '/v1/fuse/hop', status: 400, code: badCode, receipt_id: null }));
    expect(mine).toContainEqual(
      expect.objectContaining({ path: `/v1/keys/${owner.id}/revoke`, status: 403, code: forbiddenCode, key_name: 'ci-agent' }),
    );
    // A revoked key is still its account's: its refusal is there. An unknown key belongs to no account.
    expect(mine).toContainEqual(
      expect.objectContaining({ path: '/v1/me', status: 401, code: 'revoked_key', key_id: revoked.id, key_name: 'old-agent' }),
    );
    // The query string is not kept.
    expect(mine).toContainEqual(expect.objectContaining({ path: '/v1/receipts', key_id: agent.id }));
    // Nothing of a body, query or secret is stored.
    await requestLogOf(s.ctx).flush();
    const dump = JSON.stringify((await s.ctx.ledger.read.execute('SELECT * FROM request_log')).rows);
    for (const secret of [agent.secret, revoked.secret, owner.secret, 'hunter2', 'nonsense']) expect(dump).not.toContain(secret);
  });

  it('filters by key (id or name), status, code, method and path; pages with a cursor; a bad filter is a 400 that names it', async () => {
    const byName = await list('?key=ci-agent&limit=200');
    expect(byName.data.length).toBeGreaterThan(0);
    expect(new Set(byName.data.map((r) => r.key_id))).toEqual(new Set([agent.id]));
    expect((await list(`?key=${agent.id}&limit=200`)).data.map((r) => r.id)).toEqual(byName.data.map((r) => r.id));
    const failed = await list('?status=failed&limit=200');
    expect(failed.data.length).toBeGreaterThan(0);
    expect(failed.data.every((r) => r.status >= 400)).toBe(true);
    expect((await list('?status=4xx&limit=200')).data.map((r) => r.id)).toEqual(failed.data.map((r) => r.id));
    expect((await list('?status=401')).data.map((r) => r.code)).toEqual(['revoked_key']);
    expect((await list('?code=revoked_key')).data.map((r) => r.key_id)).toEqual([revoked.id]);
    expect(
      (await list('?method=POST&path=/v1/fuse&limit=200')).data.every((r) => r.method === 'POST' && r.path.startsWith('/v1/fuse')),
    ).toBe(true);

    // Paged through the agent's requests (the owner's listing adds its own as it goes).
    const all = byName.data.map((r) => r.id);
    const first = await list('?key=ci-agent&limit=2');
    expect(first.data.map((r) => r.id)).toEqual(all.slice(0, 2));
    const second = await list(`?key=ci-agent&limit=2&before=${first.next}`);
    expect(second.data.map((r) => r.id)).toEqual(all.slice(2, 4));

    for (const [query, field] of [
      ['?status=4x', 'status'],
      ['?limit=0', 'limit'],
      ['?from=yesterday', 'from'],
      ['?colour=red', ''],
    ] as const) {
      const r = await s.fetch(`/v1/requests${query}`, { key: owner.secret });
      expect(r.status, query).toBe(400);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      const p = await r.json();
      expect(p.code).toBe('invalid_query');
      if (field) expect(p.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const unknown = await s.fetch('/v1/requests?key=nobody', { key: owner.secret });
    expect(unknown.status).toBe(400);
    expect((await unknown.json()).code).toBe('unknown_key_filter');
  });

  it('shows an account only its own requests', async () => {
    expect((await s.fetch('/v1/me', { key: stranger.secret })).status).toBe(200);
    const theirs = await list('?limit=200', stranger.secret);
    expect(theirs.data.length).toBeGreaterThan(0);
    expect(new Set(theirs.data.map((r) => r.key_id))).toEqual(new Set([stranger.id]));
    const ours = (await list('?limit=200')).data;
    expect(ours.some((r) => r.key_id === stranger.id)).toBe(false);
    // Another account's key is not a filter of this one.
    expect((await s.fetch(`/v1/requests?key=${stranger.id}`, { key: owner.secret })).status).toBe(400);
  });

  it('pages exactly, newest first, through the overlapping rows of several processes, within a budget or not', async () => {
    const account = 'acct_pages';
    const t0 = Date.now() - 60_000;
    const made = (ms: number, i: number): AnsweredRequest => ({
      ms: t0 + ms,
      key_id: `key_${i % 3}`,
      method: 'POST',
      path: '/v1/fuse/hop',
      status: i % 4 === 0 ? 404 : 200,
      code: i % 4 === 0 ? 'unknown_fuse' : null,
      latency_us: 100 + i,
      receipt_id: null,
      request_id: `r${i}`,
    });
    // Three processes, each writing a row a second whose requests interleave with the others'.
    for (let flush = 0; flush < 4; flush++) {
      for (let proc = 0; proc < 3; proc++) {
        const rows = Array.from({ length: 5 }, (_, j) => made(flush * 1000 + j * 150 + proc * 40, flush * 100 + proc * 10 + j));
        await s.ctx.ledger.write((tx) => insertRequests(tx, new Map([[account, rows]])));
      }
    }
    // Every request once, newest first (by time: the interleaving of the processes' rows undone).
    const everything = (await listRequests(s.ctx.ledger.read, account, {}, 1000)).requests;
    expect(everything).toHaveLength(60);
    expect(new Set(everything.map((r) => r.request_id)).size).toBe(60);
    const times = everything.map((r) => Date.parse(requestTime(r.id)));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const newest = everything.map((r) => r.id);
    for (const budget of [100_000, 7]) {
      const seen: string[] = [];
      let before: string | undefined;
      for (let i = 0; i < 100; i++) {
        const page = await listRequests(s.ctx.ledger.read, account, {}, 4, before, budget);
        seen.push(...page.requests.map((r) => r.id));
        if (!page.next) break;
        before = page.next;
      }
      expect(seen, `budget ${budget}`).toEqual(newest);
    }
    const failed: string[] = [];
    let before: string | undefined;
    do {
      const page = await listRequests(s.ctx.ledger.read, account, { failed: true, keyIds: ['key_0', 'key_1'] }, 2, before, 9);
      failed.push(...page.requests.map((r) => r.id));
      before = page.next;
    } while (before);
    expect(failed).toEqual(everything.filter((r) => r.status >= 400 && r.key_id !== 'key_2').map((r) => r.id));
  });

  it('writes each request in a few bytes (a column the same for every request written once), and reads rows of earlier layouts', async () => {
    const account = 'acct_bytes';
    const t0 = Date.now() - 30_000;
    const plain = Array.from({ length: 100 }, (_, i): AnsweredRequest => ({
      ms: t0 + i,
      key_id: 'key_a',
      method: 'GET',
      path: '/v1/me',
      status: 200,
      code: null,
      latency_us: 812,
      receipt_id: null,
      request_id: null,
    }));
    await s.ctx.ledger.write((tx) => insertRequests(tx, new Map([[account, plain]])));
    const stored = await s.ctx.ledger.read.execute({ sql: 'SELECT entries FROM request_log WHERE account_id = ?', args: [account] });
    // Only the latency varies, and the time by at most a ms: about two bytes a request.
    expect(String(stored.rows[0]!.entries).length / 100).toBeLessThan(4);
    expect((await listRequests(s.ctx.ledger.read, account, {}, 200)).requests[0]).toMatchObject({
      path: '/v1/me',
      status: 200,
      code: null,
      latency_us: 812,
      receipt_id: null,
      request_id: null,
    });
    // A row as the first layout wrote it: every field, the request id always.
    const old = 'acct_first_layout';
    const entries = JSON.stringify([
      'abcdefgh',
      t0,
      ['key_b'],
      ['POST /v1/fuse/hop'],
      [[0, 0, 0, 402, 'hop_limit_reached', 950, 0, 'r-1']],
    ]);
    const id = `req_${t0.toString(16).padStart(12, '0')}abcdefgh00000`;
    await s.ctx.ledger.write((tx) =>
      tx.execute({
        sql: 'INSERT INTO request_log (account_id, last, first, request_count, entries) VALUES (?, ?, ?, 1, ?)',
        args: [old, id, id, entries],
      }),
    );
    expect((await listRequests(s.ctx.ledger.read, old, {}, 10)).requests).toEqual([
      {
        id,
        key_id: 'key_b',
        method: 'POST',
        path: '/v1/fuse/hop',
        status: 402,
        code: 'hop_limit_reached',
        latency_us: 950,
        receipt_id: null,
        request_id: 'r-1',
      },
    ]);
    // A row as the second layout wrote it: a request per array, its trailing nones left out.
    const second = 'acct_second_layout';
    const secondId = (i: number, dMs: number) =>
      `req_${(t0 + dMs).toString(16).padStart(12, '0')}ijklmnop${i.toString(36).padStart(5, '0')}`;
    await s.ctx.ledger.write((tx) =>
      tx.execute({
        sql: 'INSERT INTO request_log (account_id, last, first, request_count, entries) VALUES (?, ?, ?, 2, ?)',
        args: [
          second,
          secondId(1, 3),
          secondId(0, 0),
          JSON.stringify([
            'ijklmnop',
            t0,
            ['key_c'],
            ['GET /v1/me', 'POST /v1/fuse/hop'],
            [
              [0, 0, 0, 200, 700],
              [3, 0, 1, 200, 1200, 'rcpt_7_x'],
            ],
            2,
          ]),
        ],
      }),
    );
    expect((await listRequests(s.ctx.ledger.read, second, {}, 10)).requests).toEqual([
      {
        id: secondId(1, 3),
        key_id: 'key_c',
        method: 'POST',
        path: '/v1/fuse/hop',
        status: 200,
        code: null,
        latency_us: 1200,
        receipt_id: 'rcpt_7_x',
        request_id: null,
      },
      {
        id: secondId(0, 0),
        key_id: 'key_c',
        method: 'GET',
        path: '/v1/me',
        status: 200,
        code: null,
        latency_us: 700,
        receipt_id: null,
        request_id: null,
      },
    ]);
  });

  it('reads back every field of requests packed together, whatever varies among them', async () => {
    const account = 'acct_mixed';
    const t0 = Date.now() - 20_000;
    const fields = [
      { key_id: 'key_a', method: 'GET', path: '/v1/me', status: 200, code: null, latency_us: 0, receipt_id: null, request_id: null },
      {
        key_id: 'key_b',
        method: 'POST',
        path: '/v1/fuse/hop',
        status: 200,
        code: null,
        latency_us: 4_000_000,
        receipt_id: 'rcpt_12_abcdefghijklmnopqrstuv',
        request_id: 'trace-1',
      },
      {
        key_id: 'key_a',
        method: 'POST',
        path: '/v1/fuse/hop',
        status: 402,
        code: 'hop_limit_reached',
        latency_us: 90,
        receipt_id: null,
        request_id: null,
      },
      {
        key_id: 'key_b',
        method: 'GET',
        path: '/v1/nothing',
        status: 404,
        code: 'route_not_found',
        latency_us: 55,
        receipt_id: null,
        request_id: 'a:b.c-d_e',
      },
    ];
    const made = fields.map((f, i): AnsweredRequest => ({ ...f, ms: t0 + [0, 0, 7, 1000][i]! }));
    await s.ctx.ledger.write((tx) => insertRequests(tx, new Map([[account, made]])));
    const read = (await listRequests(s.ctx.ledger.read, account, {}, 10)).requests.reverse();
    expect(read.map(({ id: _, ...r }) => r)).toEqual(fields);
    expect(read.map((r) => r.id)).toEqual([...read.map((r) => r.id)].sort());
    expect(read.map((r) => Date.parse(requestTime(r.id)))).toEqual(made.map((r) => r.ms));
  });

  it('is on by default; turned off, logs nothing, and says so', async () => {
    expect(loadConfig({}).REQUEST_LOG_ENABLED).toBe(true);
    const off = await startTestServer({ REQUEST_LOG_ENABLED: 'false' });
    try {
      const k = await off.newKey('quiet');
      expect((await off.fetch('/v1/me', { key: k.secret })).status).toBe(200);
      expect((await off.fetch('/v1/fuse/hop', { key: k.secret, json: { nonsense: 1 } })).status).toBe(400);
      const r = await (await off.fetch('/v1/requests', { key: k.secret })).json();
      expect(r).toMatchObject({ enabled: false, data: [] });
      expect(Number((await off.ctx.ledger.read.execute('SELECT COUNT(*) AS n FROM request_log')).rows[0]!.n)).toBe(0);
    } finally {
      await off.stop();
    }
  });

  it('deletes rows past REQUEST_LOG_RETENTION_DAYS, and keeps the rest', async () => {
    await requestLogOf(s.ctx).flush();
    const count = async () => Number((await s.ctx.ledger.read.execute('SELECT COUNT(*) AS n FROM request_log')).rows[0]!.n);
    const before = await count();
    expect(before).toBeGreaterThan(0);
    expect(await sweepRequestLog(s.ctx, new Date(Date.now() + 29 * 86_400_000))).toBe(0);
    expect(await count()).toBe(before);
    expect(await sweepRequestLog(s.ctx, new Date(Date.now() + 31 * 86_400_000))).toBe(before);
    expect(await count()).toBe(0);
  });
});
