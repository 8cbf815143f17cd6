/**
 * The read caches of issue 13 (docs/configuration.md, "Read caches"): a key or
 * /v1/me answer may be reused for at most AUTH_CACHE_MS (1 s), so a change by
 * another process lands within that bound, and a change by this process at once.
 * Real server on an ephemeral port, real libSQL file; the "other process" is the
 * CLI in a child process or a second connection to the same file. The caches'
 * clock is held (holdCacheClock): the bound is passed by moving it, never
 * waited for, so a slow machine neither hides the cache nor outruns it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { hashSecret, setHopLimit } from '../src/ledger/api-keys.ts';
import { readHopQuotas, writeHopCounts } from '../src/ledger/hop-counters.ts';
import { openLedger, type Ledger } from '../src/ledger/db.ts';
import { MAX_ENTRIES, cachedKey } from '../src/ledger/key-cache.ts';
import { runCli } from './support/cli.ts';
import { holdCacheClock, startTestServer, testEnv, writesSettled, type TestServer } from './support/server.ts';

/** Counts one hop for a key through `ledger`, the way a committed act does (read and written under the write lock). */
function countHop(ledger: Ledger, keyId: string): Promise<boolean> {
  return ledger.write(async (tx) => {
    const now = new Date();
    const q = (await readHopQuotas(tx, [keyId])).keys.get(keyId);
    if (!q || q.used >= q.hopLimit) return false;
    q.added = 1;
    await writeHopCounts(tx, [q], now);
    return true;
  });
}

describe('read caches', () => {
  let s: TestServer;
  let other: Ledger;
  let clock: ReturnType<typeof holdCacheClock>;

  beforeAll(async () => {
    s = await startTestServer();
    clock = holdCacheClock(s);
    // A second connection to the same file, as another process would have.
    other = await openLedger(s.config);
  });
  afterAll(async () => {
    await other.close();
    await s.stop();
  });

  const me = (secret: string) => s.fetch('/v1/me', { key: secret });
  /**
   * Fills the caches for a key: the first use also records last_used_at (a write
   * of this process, which makes the next /v1/me read afresh), so let that write
   * commit, then ask again: from here on the answer comes from the cache.
   */
  const warm = async (secret: string) => {
    await me(secret);
    await writesSettled(s.ctx.ledger);
    return me(secret);
  };

  it('a key revoked by the CLI in another process is refused once the bound has passed, not before', async () => {
    const k = await s.newKey('cli-revoked');
    expect((await warm(k.secret)).status).toBe(200);
    const r = await runCli(['keys', 'revoke', k.id], testEnv(s.dir));
    expect(r.code, r.stderr).toBe(0);
    // Within the bound the cached answer stands (that is what the bound allows)...
    expect((await me(k.secret)).status).toBe(200);
    // ...and past it the key is read again.
    clock.passBound();
    const after = await me(k.secret);
    expect(after.status).toBe(401);
    expect((await after.json()).code).toBe('revoked_key');
  }, 60_000);

  it('a key revoked in this process is refused at once', async () => {
    const ops = await s.newKey('ops');
    const k = await s.newKey('revoked-here', undefined, 'agent', ops.accountId);
    expect((await warm(k.secret)).status).toBe(200);
    expect((await s.fetch(`/v1/keys/${k.id}/revoke`, { method: 'POST', key: ops.secret })).status).toBe(200);
    expect((await me(k.secret)).status).toBe(401);
  });

  it('/v1/me shows hops and a hop limit changed by another connection once the bound has passed', async () => {
    const k = await s.newKey('counted', 10);
    expect((await (await warm(k.secret)).json()).usage.hops_used).toBe(0);
    expect(await countHop(other, k.id)).toBe(true);
    expect(await setHopLimit(other, k.id, 7)).toBe(true);
    expect(await (await me(k.secret)).json()).toMatchObject({ hop_limit: 10, usage: { hops_used: 0 } });
    clock.passBound();
    expect(await (await me(k.secret)).json()).toMatchObject({ hop_limit: 7, usage: { hops_used: 1, hops_remaining: 6 } });
  });

  it('/v1/me shows a hop made through this process at once', async () => {
    const k = await s.newKey('counted-here', 10);
    expect((await (await warm(k.secret)).json()).usage.hops_used).toBe(0);
    expect(await countHop(s.ctx.ledger, k.id)).toBe(true);
    expect((await (await me(k.secret)).json()).usage.hops_used).toBe(1);
  });

  it('an unknown key is 401 and a key created afterwards works at once', async () => {
    expect((await me('fg_live_unknown')).status).toBe(401);
    expect((await me('fg_live_unknown')).status).toBe(401);
    const k = await s.newKey('fresh');
    expect((await me(k.secret)).status).toBe(200);
  });
});

describe('key cache bound', () => {
  it('reuses an answer until the bound, counted on the clock it is given, and reads again at the bound', async () => {
    const db = {};
    let loads = 0;
    const load = async () => (loads++, undefined);
    const token = hashSecret('fg_live_bounded');
    const t = 1_800_000_000_000;
    await cachedKey(db, token, 1000, load, t);
    await cachedKey(db, token, 1000, load, t + 999);
    expect(loads).toBe(1);
    await cachedKey(db, token, 1000, load, t + 1000);
    expect(loads).toBe(2);
    await cachedKey(db, token, 0, load, t + 1000);
    expect(loads).toBe(3); // a bound of 0: no cache
  });

  it('holds at most MAX_ENTRIES answers: unknown tokens sent at random evict the oldest, not grow memory', async () => {
    const db = {};
    let loads = 0;
    const load = async () => (loads++, undefined);
    // One instant for every call: the eviction, not the bound, decides what is held.
    const now = Date.now();
    const first = hashSecret('fg_live_first');
    await cachedKey(db, first, 1000, load, now);
    await cachedKey(db, first, 1000, load, now);
    expect(loads).toBe(1); // the second answer came from the cache
    for (let i = 0; i < MAX_ENTRIES; i++) await cachedKey(db, hashSecret(`fg_live_random_${i}`), 1000, load, now);
    const before = loads;
    await cachedKey(db, hashSecret(`fg_live_random_${MAX_ENTRIES - 1}`), 1000, load, now);
    expect(loads).toBe(before); // the newest is still held
    await cachedKey(db, first, 1000, load, now);
    expect(loads).toBe(before + 1); // the oldest was evicted
  });

  it('AUTH_CACHE_MS defaults to 1000 and may not exceed it', () => {
    expect(loadConfig({}).AUTH_CACHE_MS).toBe(1000);
    expect(loadConfig({ AUTH_CACHE_MS: '0' }).AUTH_CACHE_MS).toBe(0);
    expect(() => loadConfig({ AUTH_CACHE_MS: '1001' })).toThrow(ConfigError);
  });
});

describe('the built site from memory', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    // /v1/me is answered before h3 while its key and answer are cached: held, they stay so between the requests compared.
    holdCacheClock(s);
  });
  afterAll(() => s.stop());

  const headersOf = (r: Response) => Object.fromEntries([...r.headers].filter(([k]) => k !== 'date' && k !== 'x-request-id'));

  it('answers a plain GET and HEAD with the bytes and headers the h3 path gives (a query sends it through h3)', async () => {
    for (const path of ['/api/v1/stack/catalog', '/', '/pricing/', '/pricing']) {
      const direct = await s.fetch(path, { headers: { 'x-request-id': 'rq-1' } });
      const viaH3 = await s.fetch(`${path}?via=h3`);
      expect(direct.status, path).toBe(200);
      expect(direct.headers.get('x-request-id')).toBe('rq-1');
      expect(headersOf(direct), path).toEqual(headersOf(viaH3));
      expect(await direct.text()).toBe(await viaH3.text());
    }
    const head = await s.fetch('/api/v1/stack/catalog', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBeGreaterThan(0);
    expect(head.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await head.text()).toBe('');
  });

  it('/v1/me gives the same answer before h3 (key and answer cached) as through it; a bad or missing key still gets 401', async () => {
    const k = await s.newKey('direct');
    await s.fetch('/v1/me', { key: k.secret });
    await writesSettled(s.ctx.ledger); // the first use records last_used_at: a write, after which /v1/me is read afresh
    const viaH3 = await s.fetch('/v1/me?via=h3', { key: k.secret });
    const direct = await s.fetch('/v1/me', { key: k.secret, headers: { 'x-request-id': 'rq-3' } });
    expect(direct.status).toBe(200);
    expect(direct.headers.get('x-request-id')).toBe('rq-3');
    expect(headersOf(direct)).toEqual(headersOf(viaH3));
    expect(await direct.text()).toBe(await viaH3.text());
    expect((await s.fetch('/v1/me')).status).toBe(401);
    expect((await s.fetch('/v1/me', { headers: { authorization: 'Basic abc' } })).status).toBe(401);
    const twice = new Headers([
      ['authorization', `Bearer ${k.secret}`],
      ['authorization', `Bearer ${k.secret}`],
    ]);
    expect((await s.fetch('/v1/me', { headers: twice })).status).toBe(401);
    expect((await s.fetch('/v1/me', { key: k.secret.slice(0, -1) + (k.secret.endsWith('A') ? 'B' : 'A') })).status).toBe(401);
  });

  it('/health gives the same answer before h3 (while its database state is fresh) as through it', async () => {
    const viaH3 = await s.fetch('/health?via=h3');
    const direct = await s.fetch('/health', { headers: { 'x-request-id': 'rq-2' } });
    expect(direct.status).toBe(200);
    expect(direct.headers.get('x-request-id')).toBe('rq-2');
    expect(headersOf(direct)).toEqual(headersOf(viaH3));
    expect(await direct.json()).toEqual(await viaH3.json());
    expect((await s.fetch('/health', { method: 'POST' })).status).toBe(405);
  });

  it('leaves conditional requests to h3 (304 on a matching ETag)', async () => {
    const first = await s.fetch('/api/v1/stack/catalog');
    const etag = first.headers.get('etag')!;
    const again = await s.fetch('/api/v1/stack/catalog', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
  });
});
