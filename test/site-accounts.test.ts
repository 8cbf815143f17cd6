import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli.ts';
import { formClient } from './support/form-client.ts';
import { startTestServer, testEnv, type TestServer } from './support/server.ts';

describe('site accounts', { timeout: 120_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('stores the password as scrypt and the session as a hash; the cookie is HttpOnly and SameSite=Lax', async () => {
    const c = formClient(s);
    const r = await c.post('/signup', { email: 'A@Example.invalid', password: 'a long enough password' });
    expect(r.status).toBe(303);
    expect(r.headers.get('location')).toBe('/dashboard?welcome=1');
    const set = r.headers.getSetCookie().find((x) => x.startsWith('fg_session='))!;
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Lax/);
    const secret = c.jar.get('fg_session')!;
    const login = (await s.ctx.ledger.read.execute("SELECT * FROM account_logins WHERE email = 'a@example.invalid'")).rows[0]!;
    expect(String(login.password_hash)).toMatch(/^scrypt\$32768\$8\$3\$/);
    const sessions = (await s.ctx.ledger.read.execute('SELECT secret_hash FROM sessions')).rows.map((x) => String(x.secret_hash));
    expect(sessions).toHaveLength(1);
    expect(sessions).not.toContain(secret);
    expect((await c.get('/dashboard')).status).toBe(200);
    // A post without our Origin is refused, even with the session and token.
    expect((await c.post('/dashboard/fuses', { label: 'x' }, 'https://evil.example')).status).toBe(403);
    // Signing up twice with one email does not make a second account.
    expect((await formClient(s).post('/signup', { email: 'a@example.invalid', password: 'another long password' })).status).toBe(409);
  });

  it('the operator CLI prints a one-time reset link; using it sets the password and ends every session', async () => {
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'b@example.invalid', password: 'the first password' })).status).toBe(303);
    const cli = await runCli(['accounts', 'reset-link', '--email', 'b@example.invalid', '--json'], testEnv(s.dir));
    expect(cli.code, cli.stderr).toBe(0);
    const path = new URL(JSON.parse(cli.stdout).url).pathname;
    const fresh = formClient(s);
    expect((await fresh.get(path)).status).toBe(200);
    const reset = await fresh.post(path, { password: 'the second password' });
    expect(reset.status).toBe(303);
    // The sign-in page it leads to says what happened.
    expect(reset.headers.get('location')).toBe('/signin?done=reset');
    expect(await (await fresh.get('/signin?done=reset')).text()).toContain(
      '<p class="notice" role="status">Your password is changed, and every session was signed out: sign in with the new password.</p>',
    );
    expect(await (await fresh.get('/signin?done=%3Cb%3E')).text()).not.toContain('class="notice"');
    expect((await c.get('/dashboard')).headers.get('location')).toBe('/signin');
    expect((await fresh.get(path)).status).toBe(410);
    expect((await formClient(s).post('/signin', { email: 'b@example.invalid', password: 'the first password' })).status).toBe(401);
    expect((await formClient(s).post('/signin', { email: 'b@example.invalid', password: 'the second password' })).status).toBe(303);
  });
});

describe('what a credential change or a deletion closes', { timeout: 120_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    // Alert URLs on loopback; a delivery to a closed port fails and waits an hour for its retry.
    s = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_BACKOFF_MS: '3600000' });
  });
  afterAll(() => s.stop());

  const resetLink = async (email: string) => {
    const cli = await runCli(['accounts', 'reset-link', '--email', email, '--json'], testEnv(s.dir));
    expect(cli.code, cli.stderr).toBe(0);
    return new URL(JSON.parse(cli.stdout).url).pathname;
  };

  it('using one reset link, or changing the password or the email, voids every other link of the account', async () => {
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'links@example.invalid', password: 'the first password' })).status).toBe(303);
    const [first, second] = [await resetLink('links@example.invalid'), await resetLink('links@example.invalid')];
    expect((await formClient(s).post(first, { password: 'the second password' })).status).toBe(303);
    // The older link was mailed too: it must not reset the password the first one just set.
    expect((await formClient(s).get(second)).status).toBe(410);

    const signedIn = formClient(s);
    expect((await signedIn.post('/signin', { email: 'links@example.invalid', password: 'the second password' })).status).toBe(303);
    const beforePassword = await resetLink('links@example.invalid');
    expect(
      (await signedIn.post('/dashboard/account/password', { current: 'the second password', password: 'the third password' })).status,
    ).toBe(303);
    expect((await formClient(s).get(beforePassword)).status).toBe(410);

    const beforeEmail = await resetLink('links@example.invalid');
    expect(
      (await signedIn.post('/dashboard/account/email', { email: 'moved@example.invalid', password: 'the third password' })).status,
    ).toBe(303);
    expect((await formClient(s).get(beforeEmail)).status).toBe(410);
    expect((await formClient(s).post('/signin', { email: 'moved@example.invalid', password: 'the third password' })).status).toBe(303);
  });

  it('deleting an account disables its alert subscriptions and fails their pending deliveries', async () => {
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'alerted@example.invalid', password: 'the first password' })).status).toBe(303);
    expect((await c.post('/dashboard/fuses', { label: 'watched' })).status).toBe(303);
    // A new account's dashboard opens in test mode (docs/test-mode.md): the fuse and the subscription are its test side's.
    const accountId = `test:${String((await s.ctx.ledger.read.execute("SELECT account_id FROM account_logins WHERE email = 'alerted@example.invalid'")).rows[0]!.account_id)}`;
    const fuseId = String(
      (await s.ctx.ledger.read.execute({ sql: 'SELECT id FROM fuses WHERE key_id = ?', args: [accountId] })).rows[0]!.id,
    );
    const added = await c.post('/dashboard/alerts', { url: 'http://127.0.0.1:9/hooks', events: 'fuse.state_changed' });
    expect(added.status).toBe(303);
    // The blow queues a delivery to the subscription (it cannot be delivered: nothing listens there).
    expect((await c.post(`/dashboard/fuses/${fuseId}/dead`, { confirm: 'yes' })).status).toBe(303);
    const subscriptions = () =>
      s.ctx.ledger.read.execute({
        sql: 'SELECT id, disabled_at, disabled_reason FROM webhook_subscriptions WHERE key_id = ?',
        args: [accountId],
      });
    const deliveries = async () =>
      (
        await s.ctx.ledger.read.execute({
          sql: 'SELECT d.state, d.last_error FROM webhook_deliveries d JOIN webhook_subscriptions w ON w.id = d.subscription_id WHERE w.key_id = ?',
          args: [accountId],
        })
      ).rows;
    expect((await subscriptions()).rows).toMatchObject([{ disabled_at: null }]);
    expect((await deliveries()).map((d) => d.state)).toEqual(['pending']);

    expect((await c.post('/dashboard/account/delete', { confirm: 'yes', password: 'the first password' })).status).toBe(200);
    expect((await subscriptions()).rows).toMatchObject([{ disabled_at: expect.any(String), disabled_reason: 'the account was deleted' }]);
    expect(await deliveries()).toMatchObject([{ state: 'failed', last_error: 'subscription disabled: the account was deleted' }]);
  });
});

describe('sign-in throttle', { timeout: 120_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    // One window for the whole test (a 900 s window could roll over mid-test and reset the counts).
    s = await startTestServer({ SIGNIN_MAX_ATTEMPTS: '2', SIGNIN_MAX_ATTEMPTS_PER_ADDRESS: '5', SIGNIN_WINDOW_SECONDS: '1000000000' });
  });
  afterAll(() => s.stop());

  it('counts attempts per email and per address in the database, and answers 429 past either limit', async () => {
    const attempt = (email: string) =>
      formClient(s)
        .post('/signin', { email, password: 'not the password' })
        .then((r) => r.status);
    // Per email: two wrong passwords, then refused; another email has its own count.
    expect([await attempt('c@example.invalid'), await attempt('c@example.invalid'), await attempt('c@example.invalid')]).toEqual([
      401, 401, 429,
    ]);
    expect(await attempt('d@example.invalid')).toBe(401);
    const windows = await s.ctx.ledger.read.execute("SELECT bucket, count FROM rate_windows WHERE bucket LIKE 'signin:%' ORDER BY bucket");
    expect(windows.rows.map((r) => Number(r.count)).sort()).toEqual([1, 3, 4]);
    // Per address: the fifth attempt from 127.0.0.1 was the last one allowed.
    expect(await attempt('e@example.invalid')).toBe(401);
    expect(await attempt('f@example.invalid')).toBe(429);
  });
});

describe('sign-up limit', { timeout: 120_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ SIGNUP_MAX_ATTEMPTS_PER_ADDRESS: '3' });
  });
  afterAll(() => s.stop());

  it('counts every sign-up attempt per address, taken or refused; past the limit it answers 429 and creates nothing', async () => {
    const statuses = [];
    for (const [email, password] of [
      ['c@example.invalid', 'a long enough password'],
      ['c@example.invalid', 'a long enough password'],
      ['not-an-email', 'a long enough password'],
    ]) {
      statuses.push((await formClient(s).post('/signup', { email: email!, password: password! })).status);
    }
    expect(statuses).toEqual([303, 409, 400]);
    const limited = await formClient(s).post('/signup', { email: 'fresh@example.invalid', password: 'a long enough password' });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await limited.text()).toContain('Too many sign-up attempts');
    const logins = (await s.ctx.ledger.read.execute('SELECT email FROM account_logins ORDER BY email')).rows.map((r) => String(r.email));
    expect(logins).toEqual(['c@example.invalid']);
  });
});
