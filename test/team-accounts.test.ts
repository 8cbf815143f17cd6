/**
 * Team accounts and the audit log (issue 49, docs/accounts.md#team-accounts)
 * over HTTP against a real server: an invitation stored only as a hash, shown
 * once, accepted once by the email it names; roles enforced server-side (a
 * forged POST of a viewer is a 403 and changes nothing); an account never left
 * without an owner; every dashboard change in the audit log, read in the
 * dashboard and through GET /v1/audit, never with a secret.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertPasswordReset } from '../src/ledger/accounts.ts';
import { formClient } from './support/form-client.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const PASSWORD = 'a long enough password';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s?.stop());

async function signUp(email: string) {
  const c = formClient(s);
  expect((await c.post('/signup', { email, password: PASSWORD })).status).toBe(303);
  const id = String(
    (await s.ctx.ledger.read.execute({ sql: 'SELECT account_id FROM account_logins WHERE email = ?', args: [email] })).rows[0]!.account_id,
  );
  return { c, id };
}

/** Invites `email` as `role` from the signed-in owner `c`; the link the page shows once. */
async function invite(c: ReturnType<typeof formClient>, email: string, role: string): Promise<string> {
  const r = await c.post('/dashboard/members/invite', { email, role });
  expect(r.status).toBe(303);
  const html = await (await c.get(r.headers.get('location')!)).text();
  const link = /<code id="invite-link"[^>]*>([^<]+)<\/code>/.exec(html)?.[1];
  expect(link).toBeDefined();
  return new URL(link!).pathname;
}

const fuseState = async (id: string) =>
  String((await s.ctx.ledger.read.execute({ sql: 'SELECT state FROM fuses WHERE id = ?', args: [id] })).rows[0]?.state);

async function audit(key: string, query = '') {
  const r = await s.fetch(`/v1/audit${query}`, { key });
  return {
    status: r.status,
    body: (await r.json()) as {
      data: Array<{
        action: string;
        target: string | null;
        actor: { kind: string; id: string; email?: string; name?: string };
        detail: Record<string, unknown> | null;
        id: string;
      }>;
      next: string | null;
    },
  };
}

describe('team accounts', { timeout: 180_000 }, () => {
  it('an invitation is a single-use link stored as a hash, accepted by the email it names; a viewer reads and a forged POST changes nothing', async () => {
    const owner = await signUp('owner@team.example');
    const ops = await s.newKey('ops key', 1000, 'operator', owner.id);
    const fuse = (await (await s.fetch('/v1/fuses', { method: 'POST', key: ops.secret, json: { label: 'prod writes' } })).json()) as {
      fuse_id: string;
    };

    const path = await invite(owner.c, 'Viewer@Team.example', 'viewer');
    const token = path.split('/').pop()!;
    // Shown once: the next read of the page no longer has it.
    expect(await (await owner.c.get('/dashboard/members?invited=x')).text()).not.toContain(token);
    const stored = (await s.ctx.ledger.read.execute('SELECT * FROM account_invitations')).rows;
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored)).not.toContain(token);
    expect(stored[0]).toMatchObject({ email: 'viewer@team.example', role: 'viewer', accepted_at: null });

    // Signed out, the link offers sign-in and sign-up, coming back to it.
    const guest = formClient(s);
    const open = await guest.get(path);
    expect(open.status).toBe(200);
    expect(open.headers.get('referrer-policy')).toBe('same-origin');
    const text = await open.text();
    expect(text).toContain(`/signup?next=${encodeURIComponent(path)}`);
    expect(text).toContain('as <strong>viewer</strong>');

    // Another person signed in cannot use it, and it stays open.
    const stranger = await signUp('stranger@else.example');
    expect((await stranger.c.post(path, {})).status).toBe(403);
    expect((await stranger.c.get(path)).status).toBe(200);

    // The invitee signs up with that email, lands back on the link, and joins.
    expect((await guest.post('/signup', { email: 'viewer@team.example', password: PASSWORD, next: path })).headers.get('location')).toBe(
      path,
    );
    const joined = await guest.post(path, {});
    expect(joined.status).toBe(303);
    expect(joined.headers.get('location')).toBe('/dashboard/members?done=joined');
    expect((await guest.get(path)).status).toBe(410);
    expect((await formClient(s).get(path)).status).toBe(410);

    // The viewer now acts in the owner's account: its fuse is on their pages.
    const fuses = await (await guest.get('/dashboard/fuses')).text();
    expect(fuses).toContain('prod writes');
    expect(fuses).toContain('You are a viewer of this account');
    const members = await (await guest.get('/dashboard/members')).text();
    expect(members).toContain('owner@team.example');
    expect(members).not.toContain('name="email"');

    // Forged posts of a viewer: each 403 team_role_required, nothing changed.
    const keysBefore = (
      await s.ctx.ledger.read.execute({ sql: 'SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?', args: [owner.id] })
    ).rows[0]!.n;
    for (const [where, fields] of [
      ['/dashboard/keys', { name: 'sneaky', role: 'operator' }],
      [`/dashboard/fuses/${fuse.fuse_id}/dead`, { confirm: 'yes' }],
      [`/dashboard/keys/${ops.id}/revoke`, { confirm: 'yes' }],
      [`/dashboard/keys/${ops.id}/spend-cap`, { spend_cap_usd: '1.00' }],
      ['/dashboard/account/spend-cap', { spend_cap_usd: '1.00' }],
      ['/dashboard/members/invite', { email: 'friend@x.example', role: 'owner' }],
      ['/dashboard/reviews/rev_anything', { verdict: 'approve' }],
    ] as const) {
      const r = await guest.post(where, fields);
      expect(r.status, where).toBe(403);
      expect(r.headers.get('content-type'), where).toContain('application/problem+json');
      expect(((await r.json()) as { code: string }).code, where).toBe('team_role_required');
    }
    expect(
      (await s.ctx.ledger.read.execute({ sql: 'SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?', args: [owner.id] })).rows[0]!.n,
    ).toBe(keysBefore);
    expect(await fuseState(fuse.fuse_id)).toBe('LIVE');
    const key = (await (await s.fetch(`/v1/keys/${ops.id}`, { key: ops.secret })).json()) as {
      status: string;
      spend_cap_usd: string | null;
    };
    expect(key).toMatchObject({ status: 'active', spend_cap_usd: null });
    expect(
      ((await (await s.fetch('/v1/account/spend-cap', { key: ops.secret })).json()) as { spend_cap_usd: string | null }).spend_cap_usd,
    ).toBeNull();
    expect((await s.ctx.ledger.read.execute('SELECT COUNT(*) AS n FROM account_invitations')).rows[0]!.n).toBe(1);
  });

  it('an operator manages keys and fuses but not people or billing; roles change, people leave, an owner always stays', async () => {
    const owner = await signUp('boss@ops.example');
    const ops = await s.newKey('ops key', 1000, 'operator', owner.id);
    const path = await invite(owner.c, 'op@ops.example', 'operator');
    const op = await signUp('op@ops.example');
    expect((await op.c.post(path, {})).status).toBe(303);

    // An operator makes and revokes keys, blows fuses, changes a key's cap...
    const made = await op.c.post('/dashboard/keys', { name: 'made by op', role: 'agent' });
    expect(made.status).toBe(303);
    const madeId = decodeURIComponent(/created=([^&]+)/.exec(made.headers.get('location')!)![1]!);
    expect((await op.c.post(`/dashboard/keys/${madeId}/spend-cap`, { spend_cap_usd: '5.00' })).status).toBe(303);
    const fuse = (await (await s.fetch('/v1/fuses', { method: 'POST', key: ops.secret, json: { label: 'f' } })).json()) as {
      fuse_id: string;
    };
    expect((await op.c.post(`/dashboard/fuses/${fuse.fuse_id}/dead`, { confirm: 'yes' })).status).toBe(303);
    // ...but neither the account's billing settings nor its people.
    expect((await op.c.post('/dashboard/account/spend-cap', { spend_cap_usd: '1.00' })).status).toBe(403);
    expect((await op.c.post('/dashboard/members/invite', { email: 'x@ops.example', role: 'viewer' })).status).toBe(403);
    expect((await op.c.post('/dashboard/members/role', { person: op.id, role: 'owner' })).status).toBe(403);
    expect(await (await op.c.get('/dashboard/members')).text()).toContain('Only an owner invites people');

    // The only owner can neither step down nor be removed; their own account keeps them.
    expect((await owner.c.post('/dashboard/members/role', { person: owner.id, role: 'viewer' })).status).toBe(409);
    expect((await owner.c.post('/dashboard/members/remove', { person: owner.id, confirm: 'yes' })).status).toBe(409);
    // With a second owner, the first may step down (but is still not removed from their own account).
    expect((await owner.c.post('/dashboard/members/role', { person: op.id, role: 'owner' })).status).toBe(303);
    expect((await owner.c.post('/dashboard/members/role', { person: owner.id, role: 'operator' })).status).toBe(303);
    expect((await op.c.post('/dashboard/members/remove', { person: owner.id, confirm: 'yes' })).status).toBe(409);
    expect((await op.c.post('/dashboard/members/role', { person: op.id, role: 'viewer' })).status).toBe(409);
    const roles = (
      await s.ctx.ledger.read.execute({
        sql: 'SELECT person_id, role FROM account_members WHERE account_id = ? ORDER BY role',
        args: [owner.id],
      })
    ).rows.map((r) => [String(r.person_id), String(r.role)]);
    expect(roles).toEqual([
      [owner.id, 'operator'],
      [op.id, 'owner'],
    ]);
    // Give it back, and remove the helper: their next page is their own account, and a post to the old one does nothing there.
    expect((await op.c.post('/dashboard/members/role', { person: owner.id, role: 'owner' })).status).toBe(303);
    expect((await owner.c.post('/dashboard/members/remove', { person: op.id, confirm: 'yes' })).status).toBe(303);
    expect(await (await op.c.get('/dashboard/fuses')).text()).not.toContain(fuse.fuse_id);
    expect((await op.c.post(`/dashboard/fuses/${fuse.fuse_id}/charge`, { confirm: 'yes' })).status).toBe(404);
    expect(await fuseState(fuse.fuse_id)).toBe('DEAD');

    // Every change is in the audit log: who, what, on what; the API reads it with an operator key.
    const log = await audit(ops.secret, '?limit=200');
    expect(log.status).toBe(200);
    const seen = log.body.data.map((x) => [x.actor.email, x.action, x.target]);
    expect(seen).toEqual(
      expect.arrayContaining([
        ['boss@ops.example', 'member.invited', 'op@ops.example'],
        ['op@ops.example', 'member.joined', 'op@ops.example'],
        ['op@ops.example', 'key.created', madeId],
        ['op@ops.example', 'key.spend_cap_changed', madeId],
        ['op@ops.example', 'fuse.blown', fuse.fuse_id],
        ['boss@ops.example', 'member.role_changed', 'op@ops.example'],
        ['op@ops.example', 'member.role_changed', 'boss@ops.example'],
        ['boss@ops.example', 'member.removed', 'op@ops.example'],
      ]),
    );
    // Refused changes wrote nothing.
    expect(log.body.data.filter((x) => x.action === 'account.spend_cap_changed')).toEqual([]);
    expect(log.body.data.find((x) => x.action === 'key.spend_cap_changed')!.detail).toEqual({ spend_cap_usd: '5.00' });
    // No secret: neither the new key's nor the invitation's.
    const raw = JSON.stringify((await s.ctx.ledger.read.execute('SELECT * FROM audit_log')).rows);
    expect(raw).not.toMatch(/fg_(live|test)?_?[A-Za-z0-9_-]{20,}/);
    expect(raw).not.toContain(path.split('/').pop()!);

    // Filtered and paged, newest first.
    const keysOnly = await audit(ops.secret, '?action=key.');
    expect(new Set(keysOnly.body.data.map((x) => x.action))).toEqual(new Set(['key.created', 'key.spend_cap_changed']));
    expect((await audit(ops.secret, '?actor=boss@ops.example')).body.data.every((x) => x.actor.email === 'boss@ops.example')).toBe(true);
    const first = await audit(ops.secret, '?limit=2');
    expect(first.body.data).toHaveLength(2);
    const second = await audit(ops.secret, `?limit=2&before=${first.body.next}`);
    expect(second.body.data[0]!.id < first.body.data[1]!.id).toBe(true);
    expect((await audit(ops.secret, '?action=Key%20Created')).status).toBe(400);
    // Agent keys do not read it; another account reads only its own.
    const bot = await s.newKey('bot', 1000, 'agent', owner.id);
    expect((await audit(bot.secret)).status).toBe(403);
    const other = await s.newKey('other');
    expect((await audit(other.secret)).body.data).toEqual([]);

    // The dashboard page shows the same entries, to every role, filtered by person.
    const html = await (await owner.c.get('/dashboard/audit?actor=op%40ops.example&action=fuse.')).text();
    const table = /<table class="cards-sm audit">[\s\S]*?<\/table>/.exec(html)![0];
    expect(table).toContain('<code>fuse.blown</code>');
    expect(table).not.toContain('member.');
    expect((await owner.c.get('/dashboard/audit?from=yesterday')).status).toBe(400);
  });

  it('changes made through the API with a key are entries too, by the key (name and id); refusals and replays add none', async () => {
    const owner = await signUp('keys@api.example');
    const ops = await s.newKey('deploy pipeline', 1000, 'operator', owner.id);
    const bot = await s.newKey('payments agent', 1000, 'agent', owner.id);
    const post = async (path: string, key: string, json: unknown, headers: Record<string, string> = {}) => {
      const r = await s.fetch(path, { key, json, headers });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    const made = await post('/v1/keys', ops.secret, { name: 'made by ci', role: 'agent' });
    expect(made.status).toBe(201);
    const id = String(made.body.id);
    expect((await post(`/v1/keys/${id}/limit`, ops.secret, { hop_limit: 50, hop_period: 'day' })).status).toBe(200);
    expect((await post(`/v1/keys/${id}/surface`, ops.secret, { kinds: ['pay'] })).status).toBe(200);
    expect((await post(`/v1/keys/${id}/spend-cap`, ops.secret, { spend_cap_usd: '2.50' })).status).toBe(200);
    expect((await post(`/v1/keys/${id}/expiry`, ops.secret, { expires_at: '2099-01-01T00:00:00Z' })).status).toBe(200);
    expect((await post(`/v1/keys/${id}/rotate`, ops.secret, {})).status).toBe(200);
    expect((await post('/v1/account/spend-cap', ops.secret, { spend_cap_usd: '100.00' })).status).toBe(200);
    const fuse = await post('/v1/fuses', ops.secret, { label: 'prod writes' }, { 'idempotency-key': 'make-once' });
    const fuseId = String(fuse.body.fuse_id);
    // The same request again is a replay: no second entry.
    expect((await post('/v1/fuses', ops.secret, { label: 'prod writes' }, { 'idempotency-key': 'make-once' })).body.fuse_id).toBe(fuseId);
    // An agent key may blow a fuse: the entry is the agent's.
    expect((await post(`/v1/fuses/${fuseId}/dead`, bot.secret, {})).status).toBe(200);
    // Refused: an agent may not revoke, nor charge a fuse; no entry.
    expect((await post(`/v1/keys/${id}/revoke`, bot.secret, {})).status).toBe(403);
    expect((await post(`/v1/fuses/${fuseId}/charge`, bot.secret, {})).status).toBe(403);
    expect((await post(`/v1/keys/${id}/revoke`, ops.secret, {})).status).toBe(200);

    const log = await audit(ops.secret, '?limit=200');
    const byOps = { kind: 'key', id: ops.id, name: 'deploy pipeline' };
    expect(log.body.data.map((x) => [x.actor, x.action, x.target]).reverse()).toEqual([
      [byOps, 'key.created', id],
      [byOps, 'key.hop_limit_changed', id],
      [byOps, 'key.surface_changed', id],
      [byOps, 'key.spend_cap_changed', id],
      [byOps, 'key.expiry_changed', id],
      [byOps, 'key.rotated', id],
      [byOps, 'account.spend_cap_changed', null],
      [byOps, 'fuse.created', fuseId],
      [{ kind: 'key', id: bot.id, name: 'payments agent' }, 'fuse.blown', fuseId],
      [byOps, 'key.revoked', id],
    ]);
    // The actor filter picks a key's entries by its name, exactly as named.
    const byAgent = await audit(ops.secret, `?actor=${encodeURIComponent('payments agent')}`);
    expect(byAgent.body.data.map((x) => [x.actor.id, x.action])).toEqual([[bot.id, 'fuse.blown']]);
    expect((await audit(ops.secret, `?actor=${encodeURIComponent('Payments Agent')}`)).body.data).toEqual([]);
    const detail = Object.fromEntries(log.body.data.map((x) => [x.action, x.detail]));
    expect(detail['key.created']).toEqual({ name: 'made by ci', role: 'agent' });
    expect(detail['key.hop_limit_changed']).toEqual({ hop_limit: 50, hop_period: 'day' });
    expect(detail['key.spend_cap_changed']).toEqual({ spend_cap_usd: '2.50' });
    expect(detail['account.spend_cap_changed']).toEqual({ spend_cap_usd: '100.00' });
    const raw = JSON.stringify(
      (await s.ctx.ledger.read.execute({ sql: 'SELECT * FROM audit_log WHERE account_id = ?', args: [owner.id] })).rows,
    );
    expect(raw).not.toMatch(/fg_(live|test)?_?[A-Za-z0-9_-]{20,}/);

    // The dashboard shows them beside the people's, naming the key.
    const html = await (await owner.c.get('/dashboard/audit?action=fuse.')).text();
    expect(html).toContain(`key payments agent <code>${bot.id}</code>`);
    expect(html).toContain('fuse.blown');
  });

  it('an expired or revoked invitation opens nothing; a password reset is in the person’s log', async () => {
    const owner = await signUp('lead@exp.example');
    const expired = await invite(owner.c, 'late@exp.example', 'operator');
    await s.ctx.ledger.write((tx) =>
      tx.execute({
        sql: "UPDATE account_invitations SET expires_at = '2000-01-01T00:00:00.000Z' WHERE email = ?",
        args: ['late@exp.example'],
      }),
    );
    const late = await signUp('late@exp.example');
    expect((await late.c.get(expired)).status).toBe(410);
    expect((await late.c.post(expired, {})).status).toBe(410);

    const revokedPath = await invite(owner.c, 'late@exp.example', 'viewer');
    const id = String(
      (
        await s.ctx.ledger.read.execute({
          sql: 'SELECT id FROM account_invitations WHERE email = ? AND expires_at > ?',
          args: ['late@exp.example', new Date().toISOString()],
        })
      ).rows[0]!.id,
    );
    expect((await owner.c.post('/dashboard/members/invitations/revoke', { invitation: id })).status).toBe(303);
    expect((await late.c.post(revokedPath, {})).status).toBe(410);
    expect(
      (await s.ctx.ledger.read.execute({ sql: 'SELECT COUNT(*) AS n FROM account_members WHERE account_id = ?', args: [owner.id] }))
        .rows[0]!.n,
    ).toBe(1);

    const ops = await s.newKey('ops', 1000, 'operator', owner.id);
    const actions = (await audit(ops.secret)).body.data.map((x) => x.action);
    expect(actions).toEqual(['member.invitation_revoked', 'member.invited', 'member.invited']);

    // A reset link used (as `accounts reset-link` makes one) is in the log of the person's own account.
    const token = 'a-reset-token-for-the-test-0123456789abcdefghi';
    await s.ctx.ledger.write((tx) =>
      insertPasswordReset(tx, {
        tokenHash: createHash('sha256').update(token).digest('base64url'),
        accountId: owner.id,
        expiresAt: '2999-01-01T00:00:00.000Z',
      }),
    );
    expect((await formClient(s).post(`/reset/${token}`, { password: 'another long password' })).status).toBe(303);
    const reset = (await audit(ops.secret, '?action=person.')).body.data;
    expect(reset.map((x) => [x.action, x.actor.email])).toEqual([['person.password_reset', 'lead@exp.example']]);
    expect(JSON.stringify(reset)).not.toContain(token);
  });

  it('an account sends a bounded number of invitations per window', async () => {
    const { c, id } = await signUp('busy@invites.example');
    for (let i = 1; i <= 20; i++)
      expect((await c.post('/dashboard/members/invite', { email: `guest${i}@invites.example`, role: 'viewer' })).status).toBe(303);
    const refused = await c.post('/dashboard/members/invite', { email: 'guest21@invites.example', role: 'viewer' });
    expect(refused.status).toBe(429);
    expect(await refused.text()).toContain('Too many invitations');
    expect(
      (await s.ctx.ledger.read.execute({ sql: 'SELECT COUNT(*) AS n FROM account_invitations WHERE account_id = ?', args: [id] })).rows[0]!
        .n,
    ).toBe(20);
  });

  it('tabs of licences, grants and webhooks show once the account uses them, and stay reachable under More', async () => {
    const { c, id } = await signUp('new@tabs.example');
    const nav = (html: string) => /<nav class="dash"[^>]*>([\s\S]*?)<\/nav>/.exec(html)![1]!;
    const before = nav(await (await c.get('/dashboard')).text());
    const top = before.slice(0, before.indexOf('<details>'));
    const more = before.slice(before.indexOf('<details>'));
    expect(top).not.toContain('/dashboard/grants');
    expect(more).toContain('href="/dashboard/grants"');
    expect(more).toContain('href="/dashboard/licences"');
    expect(more).toContain('href="/dashboard/webhooks"');
    // On the page itself, its tab is shown (as the current page).
    expect(nav(await (await c.get('/dashboard/grants')).text())).toContain('<a href="/dashboard/grants" aria-current="page">');

    const ops = await s.newKey('ops', 1000, 'operator', id);
    expect(
      (
        await s.fetch('/v1/pas/grants', {
          method: 'POST',
          key: ops.secret,
          json: { lines: ['cyber'], states: ['CA'], max_premium: '1000.00' },
        })
      ).status,
    ).toBe(201);
    const after = nav(await (await c.get('/dashboard')).text());
    expect(after.slice(0, after.indexOf('<details>'))).toContain('href="/dashboard/grants"');
    expect(after.slice(after.indexOf('<details>'))).not.toContain('/dashboard/grants');
  });
});
