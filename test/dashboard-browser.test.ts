/**
 * The signed-in dashboard in headless Chromium against a real server: sign up,
 * make an agent key, hop with it, blow its fuse from the dashboard (the agent's
 * next hop fails closed and its charge attempt is 403), revoke the key (401),
 * axe on every dashboard page, a forged cross-site form post refused, and
 * repeated wrong passwords rate limited.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const AXE = readFileSync(join(process.cwd(), 'node_modules/axe-core/axe.min.js'), 'utf8');
const EMAIL = 'ops@example.invalid';
const PASSWORD = 'correct horse battery staple';

let srv: TestServer;
let browser: Browser;
let evil: Server;
let page: Page;

async function axeSerious(p: Page): Promise<string[]> {
  await p.addScriptTag({ content: AXE });
  const violations = await p.evaluate(async () => {
    const r = await (globalThis as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help }));
  });
  return (violations as { id: string; impact: string; nodes: number; help: string }[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}, ${v.nodes} nodes): ${v.help}`);
}

beforeAll(async () => {
  // A day-long window: attempts are counted in fixed windows, and a 15-minute boundary falling inside the test would reset the count.
  srv = await startTestServer({ SIGNIN_MAX_ATTEMPTS: '4', SIGNIN_WINDOW_SECONDS: '86400' });
  ({ browser } = await launchChromium());
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  page = await context.newPage();
  evil = createServer();
  await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await new Promise((r) => evil?.close(r));
  await srv?.stop();
});

const hop = (secret: string, fuseId: string) => srv.fetch('/v1/fuse/hop', { method: 'POST', key: secret, json: { fuse_id: fuseId } });

// Scrypt sign-ins and a real browser on a shared machine: generous per-test time.
describe('dashboard in Chromium', { timeout: 120_000 }, () => {
  let fuseId = '';
  let agentSecret = '';

  it('signs up, creates a fuse and an agent key; the agent hops', async () => {
    await page.goto(srv.url + '/signup');
    await page.fill('#email', EMAIL);
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(srv.url + '/dashboard?welcome=1'), page.click('button[type=submit]')]);
    expect(await page.textContent('h1')).toBe('Overview');
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === 'fg_session')!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });

    await page.goto(srv.url + '/dashboard/fuses');
    await page.fill('#fuse-label', 'payments agent');
    await Promise.all([page.waitForURL(srv.url + '/dashboard/fuses?done=created'), page.click('text=Create fuse')]);
    fuseId = (await page.locator('td code').first().textContent())!;
    expect(fuseId).toMatch(/^fuse_/);

    await page.goto(srv.url + '/dashboard/keys');
    await page.fill('#key-name', 'bot');
    expect(await page.inputValue('#key-role')).toBe('agent');
    await Promise.all([page.waitForURL(/\/dashboard\/keys\?created=key_/), page.click('text=Create key')]);
    agentSecret = (await page.textContent('#new-secret'))!;
    // A new account's dashboard opens in test mode (docs/test-mode.md): its first keys are test keys.
    expect(agentSecret).toMatch(/^fg_test_/);
    // POST-redirect-GET: reloading neither shows the secret again nor makes a second key.
    await page.reload();
    expect(await page.content()).not.toContain(agentSecret);
    expect(await page.locator('tbody tr:has-text("bot")').count()).toBe(1);

    const r = await hop(agentSecret, fuseId);
    expect((await r.json()).decision).toBe('PERMIT');
  });

  it('blows the fuse from the dashboard: the agent fails closed, cannot charge it (403), and the dashboard charges it after a confirmation', async () => {
    await page.goto(srv.url + '/dashboard/fuses');
    await page.click('a:has-text("Blow")');
    expect(await page.textContent('h1')).toBe('Blow this fuse?');
    await Promise.all([page.waitForURL(srv.url + '/dashboard/fuses?done=dead'), page.click('text=Yes, blow it')]);
    expect(await page.locator('td strong').first().textContent()).toBe('DEAD');

    expect(await (await hop(agentSecret, fuseId)).json()).toMatchObject({ decision: 'DENY', ok: false, verdict: false });
    const charge = await srv.fetch(`/v1/fuses/${fuseId}/charge`, { method: 'POST', key: agentSecret });
    expect(charge.status).toBe(403);
    expect((await charge.json()).code).toBe('operator_key_required');

    await page.click('a:has-text("Charge")');
    expect(await page.textContent('h1')).toBe('Charge this fuse?');
    expect(await axeSerious(page)).toEqual([]);
    await Promise.all([page.waitForURL(srv.url + '/dashboard/fuses?done=charge'), page.click('text=Yes, charge it to LIVE')]);
    expect(await page.locator('td strong').first().textContent()).toBe('LIVE');
    expect((await (await hop(agentSecret, fuseId)).json()).decision).toBe('PERMIT');
    // Blow it again for the forged-post check below.
    await page.click('a:has-text("Blow")');
    await Promise.all([page.waitForURL(srv.url + '/dashboard/fuses?done=dead'), page.click('text=Yes, blow it')]);
  });

  it('refuses a forged form post from another site, and from another origin of the same site', async () => {
    evil.removeAllListeners('request');
    evil.on('request', (_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<!doctype html><html lang="en"><title>win a prize</title><form id="f" method="post" action="${srv.url}/dashboard/fuses/${fuseId}/charge"><input name="confirm" value="yes"><input name="csrf" value="guess"></form><script>document.getElementById('f').submit()</script></html>`,
      );
    });
    const port = (evil.address() as AddressInfo).port;
    // localhost is another site: SameSite=Lax keeps the session cookie home, and the Origin is foreign.
    // 127.0.0.1 on another port is the same site (the cookie goes along): the Origin and token checks refuse it.
    for (const evilUrl of [`http://localhost:${port}/`, `http://127.0.0.1:${port}/`]) {
      const forged = await page.context().newPage();
      const [response] = await Promise.all([forged.waitForResponse((r) => r.url().includes('/charge')), forged.goto(evilUrl)]);
      expect(response.status(), evilUrl).toBe(403);
      expect((await response.json()).code).toBe('csrf_refused');
      await forged.close();
    }
    await page.goto(srv.url + '/dashboard/fuses');
    expect(await page.locator('td strong').first().textContent()).toBe('DEAD');
  });

  it('has no serious axe violation on any dashboard page', async () => {
    for (const path of [
      '/dashboard',
      '/dashboard/keys',
      '/dashboard/fuses',
      `/dashboard/fuses/${fuseId}`,
      `/dashboard/fuses/${fuseId}/dead`,
      '/signout',
      '/dashboard/licences',
      '/dashboard/licences/charge?license_id=lic_x',
      '/dashboard/grants',
      '/dashboard/webhooks',
      '/dashboard/passkeys',
      '/dashboard/receipts',
      `/dashboard/receipts?subject=${fuseId}`,
    ]) {
      const res = await page.goto(srv.url + path);
      expect(res?.status(), path).toBe(200);
      expect(await page.locator('h1').count(), path).toBe(1);
      expect(await axeSerious(page), path).toEqual([]);
    }
    expect(await page.locator('a:has-text("verify")').count()).toBeGreaterThan(0);
    await page.goto(srv.url + '/dashboard');
    // An account with no live key of its own is in test mode (docs/test-mode.md): billed nothing, no statement; off, the live one.
    expect(await page.locator('.test-banner').count()).toBe(1);
    expect(await page.locator('svg[role=img]').count()).toBe(0);
    await Promise.all([page.waitForURL(srv.url + '/dashboard'), page.click('.mode-switch button')]);
    expect(await page.locator('.test-banner').count()).toBe(0);
    expect(await page.innerText('#usage')).toContain('Operator statement');
    expect(await axeSerious(page)).toEqual([]);
    await Promise.all([page.waitForURL(srv.url + '/dashboard'), page.click('.mode-switch button')]);
    expect(await page.locator('.test-banner').count()).toBe(1);
  });

  it('charges a licence parent after a confirmation, and creates and revokes an MGA grant', async () => {
    await page.goto(srv.url + '/dashboard/licences');
    await page.fill('#lic-id', 'lic_dash');
    await Promise.all([page.waitForURL(/license_id=lic_dash/), page.click('text=Continue…')]);
    await Promise.all([page.waitForURL(srv.url + '/dashboard/licences'), page.click('text=Yes, charge it to LIVE')]);
    expect(await page.locator('td strong').first().textContent()).toBe('LIVE');
    await Promise.all([page.waitForURL(srv.url + '/dashboard/licences'), page.click('button[aria-label="Blow lic_dash"]')]);
    expect(await page.locator('td strong').first().textContent()).toBe('DEAD');

    await page.goto(srv.url + '/dashboard/grants');
    await page.fill('#g-name', 'Acme MGA');
    await page.fill('#g-lines', 'cyber, e_and_o');
    await page.fill('#g-states', 'ca,NY');
    await page.fill('#g-max', '250000.00');
    await Promise.all([page.waitForURL(srv.url + '/dashboard/grants'), page.click('text=Create grant')]);
    expect(await page.textContent('tbody')).toContain('250000.00 USD');
    await Promise.all([page.waitForURL(srv.url + '/dashboard/grants'), page.click('button:has-text("Revoke")')]);
    expect(await page.textContent('tbody')).toContain('revoked');
  });

  it('revokes the agent key from the dashboard: it answers 401', async () => {
    await page.goto(srv.url + '/dashboard/keys');
    await page.click('a[aria-label^="Revoke bot ("]');
    expect(await page.textContent('h1')).toBe('Revoke this key?');
    await Promise.all([page.waitForURL(srv.url + '/dashboard/keys?done=revoked'), page.click('text=Yes, revoke bot')]);
    expect(await page.textContent('[role=status]')).toContain('Revoked the key');
    const me = await srv.fetch('/v1/me', { key: agentSecret });
    expect(me.status).toBe(401);
    expect((await me.json()).code).toBe('revoked_key');
  });

  it("adds a passkey and signs in with it through Chromium's virtual authenticator", async () => {
    // WebAuthn needs a domain, not an IP: this test talks to the server as localhost (BASE_URL's host).
    const origin = `http://localhost:${new URL(srv.url).port}`;
    const context = await browser.newContext();
    const p = await context.newPage();
    try {
      const cdp = await context.newCDPSession(p);
      await cdp.send('WebAuthn.enable');
      await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
      });
      await p.goto(origin + '/signup');
      await p.fill('#email', 'passkey@example.invalid');
      await p.fill('#password', 'a password I will forget');
      await Promise.all([p.waitForURL(origin + '/dashboard?welcome=1'), p.click('button[type=submit]')]);
      await p.goto(origin + '/dashboard/passkeys');
      await Promise.all([p.waitForLoadState('load'), p.click('#passkey')]);
      await p.waitForSelector('tbody tr');
      expect(await p.locator('tbody tr').count()).toBe(1);
      expect(await axeSerious(p)).toEqual([]);

      await Promise.all([p.waitForURL(origin + '/signin?done=signed-out'), p.click('button:has-text("Sign out")')]);
      expect(await p.locator('#passkey').isVisible()).toBe(true);
      await Promise.all([p.waitForURL(origin + '/dashboard'), p.click('#passkey')]);
      expect(await p.textContent('h1')).toBe('Overview');
      expect(await p.textContent('body')).toContain('passkey@example.invalid');
    } finally {
      await context.close();
    }
  });

  it('signs out everywhere, and rate limits repeated wrong passwords', async () => {
    await page.goto(srv.url + '/signout');
    await Promise.all([page.waitForURL(srv.url + '/signin?done=signed-out-everywhere'), page.click('text=Sign out everywhere')]);
    expect((await page.goto(srv.url + '/dashboard'))?.url()).toBe(srv.url + '/signin');
    expect(await axeSerious(page)).toEqual([]);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      await page.fill('#email', EMAIL);
      await page.fill('#password', 'wrong password ' + i);
      const [res] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/signin') && r.request().method() === 'POST'),
        page.click('button[type=submit]'),
      ]);
      statuses.push(res.status());
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
    // Even the right password waits out the window.
    await page.fill('#email', EMAIL);
    await page.fill('#password', PASSWORD);
    const [res] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/signin') && r.request().method() === 'POST'),
      page.click('button[type=submit]'),
    ]);
    expect(res.status()).toBe(429);
  });
});
