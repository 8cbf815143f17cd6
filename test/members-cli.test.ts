/**
 * The account's people through the API and `fusegate members` (issue 49),
 * against a real server on an ephemeral port: list, invite (the link printed
 * once without mail, only its hash stored), role, remove; the last owner and
 * a person's own account are refused with the codes the API names; an agent
 * key and a test key change nothing; each change is in the audit log as the
 * key that made it.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertMember } from '../src/ledger/members.ts';
import { formClient } from './support/form-client.ts';
import { PROCESS_TEST_TIMEOUT_MS, runCli } from './support/cli.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s?.stop());

async function signUp(email: string): Promise<string> {
  const c = formClient(s);
  expect((await c.post('/signup', { email, password: 'a long enough password' })).status).toBe(303);
  return String(
    (await s.ctx.ledger.read.execute({ sql: 'SELECT account_id FROM account_logins WHERE email = ?', args: [email] })).rows[0]!.account_id,
  );
}

describe('members from the command line', () => {
  it(
    'lists, invites, changes a role and removes through the service; never the last owner',
    async () => {
      const owner = await signUp('lead@crew.example');
      const mate = await signUp('mate@crew.example');
      await s.ctx.ledger.write((tx) =>
        insertMember(tx, { accountId: owner, personId: mate, role: 'viewer', now: new Date().toISOString() }),
      );
      const ops = await s.newKey('ops cli', 1000, 'operator', owner);
      const env = { FUSEGATE_URL: s.url, FUSEGATE_KEY: ops.secret };

      const list = await runCli(['members', 'list'], env);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout).toContain(`${owner}  owner     lead@crew.example  (their own account)`);
      expect(list.stdout).toContain(`${mate}  viewer    mate@crew.example`);

      // Invited without mail: the link is printed once, and only its hash is kept.
      const invited = await runCli(['members', 'invite', 'New@Crew.example', '--role', 'operator', '--json'], env);
      expect(invited.code, invited.stderr).toBe(0);
      const inv = JSON.parse(invited.stdout) as { id: string; email: string; role: string; mailed: boolean; link: string };
      expect(inv).toMatchObject({ email: 'new@crew.example', role: 'operator', mailed: false });
      const token = new URL(inv.link).pathname.split('/').pop()!;
      const stored = JSON.stringify((await s.ctx.ledger.read.execute('SELECT * FROM account_invitations')).rows);
      expect(stored).not.toContain(token);
      expect(stored).toContain(createHash('sha256').update(token).digest('base64url'));
      expect((await runCli(['members', 'list'], env)).stdout).toContain(`${inv.id}  operator  new@crew.example  invited`);
      const twice = await runCli(['members', 'invite', 'mate@crew.example', '--role', 'viewer'], env);
      expect(twice.code).toBe(1);
      expect(twice.stdout).toContain('already_member');

      // By email or by id.
      const promoted = await runCli(['members', 'role', 'mate@crew.example', '--role', 'owner'], env);
      expect(promoted.code, promoted.stdout).toBe(0);
      expect(promoted.stdout).toContain('mate@crew.example is now owner (was viewer)');
      const demoted = await runCli(['members', 'role', owner, '--role', 'viewer'], env);
      expect(demoted.stdout).toContain('lead@crew.example is now viewer (was owner)');
      // Now mate is the only owner: neither demoted nor removed.
      const last = await runCli(['members', 'role', mate, '--role', 'operator'], env);
      expect(last.code).toBe(1);
      expect(last.stdout).toContain('last_owner');
      expect((await runCli(['members', 'remove', 'mate@crew.example'], env)).stdout).toContain('last_owner');
      // Nobody is removed from their own account.
      expect((await runCli(['members', 'remove', owner], env)).stdout).toContain('own_account');
      expect((await runCli(['members', 'role', owner, '--role', 'owner'], env)).code).toBe(0);
      const removed = await runCli(['members', 'remove', 'mate@crew.example'], env);
      expect(removed.code, removed.stdout).toBe(0);
      expect(removed.stdout).toContain('removed mate@crew.example (owner)');
      expect((await runCli(['members', 'list'], env)).stdout).not.toContain('mate@crew.example');
      expect((await runCli(['members', 'remove', 'nobody@crew.example'], env)).stdout).toContain('no person nobody@crew.example');
      expect((await runCli(['members', 'invite', 'x@crew.example'], env)).code).toBe(2);

      // Each change is the key's, in the audit log.
      const audit = (await (await s.fetch('/v1/audit?action=member.', { key: ops.secret })).json()) as {
        data: Array<{ action: string; target: string; actor: { kind: string; id: string; name?: string } }>;
      };
      expect(audit.data.map((x) => [x.action, x.target]).reverse()).toEqual([
        ['member.invited', 'new@crew.example'],
        ['member.role_changed', 'mate@crew.example'],
        ['member.role_changed', 'lead@crew.example'],
        ['member.role_changed', 'lead@crew.example'],
        ['member.removed', 'mate@crew.example'],
      ]);
      expect(new Set(audit.data.map((x) => JSON.stringify(x.actor)))).toEqual(
        new Set([JSON.stringify({ kind: 'key', id: ops.id, name: 'ops cli' })]),
      );
    },
    PROCESS_TEST_TIMEOUT_MS * 3,
  );

  it('answers an agent key 403 and lets a test key read but not change', async () => {
    const owner = await signUp('solo@crew.example');
    const agent = await s.newKey('bot', 1000, 'agent', owner);
    const r = await s.fetch('/v1/members/invitations', { key: agent.secret, json: { email: 'a@crew.example', role: 'viewer' } });
    expect(r.status).toBe(403);
    expect((await s.fetch('/v1/members', { key: agent.secret })).status).toBe(403);
    const test = await s.fetch('/v1/keys', {
      key: (await s.newKey('ops', 1000, 'operator', owner)).secret,
      json: { name: 't', role: 'operator', mode: 'test' },
    });
    const testKey = ((await test.json()) as { secret: string }).secret;
    expect((await s.fetch('/v1/members', { key: testKey })).status).toBe(200);
    const refused = await s.fetch(`/v1/members/${owner}/role`, { key: testKey, json: { role: 'viewer' } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe('test_key_live_setting');
    const bad = await s.fetch('/v1/members/invitations', {
      key: (await s.newKey('ops2', 1000, 'operator', owner)).secret,
      json: { email: 'not an email', role: 'viewer' },
    });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    expect(
      (await s.ctx.ledger.read.execute({ sql: 'SELECT COUNT(*) AS n FROM account_invitations WHERE account_id = ?', args: [owner] }))
        .rows[0]!.n,
    ).toBe(0);
  });
});
