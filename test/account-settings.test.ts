/**
 * Account self-service in headless Chromium against a real server (issue 31):
 * "Forgot password?" with the link delivered over SMTP to a real socket (a
 * minimal SMTP server, support/smtp.ts) and, with no MAIL_URL, written to the log;
 * email and password changes; sessions listed and signed out one by one;
 * passkeys named, renamed and removed; and deleting an account, which revokes
 * every key while its receipts stay public and verifiable.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailTransport, smtpMessage } from '../src/accounts/mail.ts';
import { smtpServer } from './support/smtp.ts';
import { OUT, axeSerious, screenshot } from './support/axe.ts';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const PASSWORD = 'correct horse battery staple';

let srv: TestServer;
let smtp: Awaited<ReturnType<typeof smtpServer>>;
let browser: Browser;

beforeAll(async () => {
  mkdirSync(join(OUT, 'dashboard'), { recursive: true });
  smtp = await smtpServer();
  srv = await startTestServer({
    MAIL_URL: `smtp://gate%40example.invalid:s3cret@127.0.0.1:${smtp.port}`,
    MAIL_FROM: 'Fuse Gate <no-reply@gate.example>',
  });
  ({ browser } = await launchChromium());
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
  await new Promise((r) => smtp?.server.close(r));
});

async function signUp(p: Page, email: string, password = PASSWORD) {
  await p.goto(srv.url + '/signup');
  await p.fill('#email', email);
  await p.fill('#password', password);
  await Promise.all([p.waitForURL(/\/dashboard\?welcome=1$/), p.click('main button[type=submit]')]);
}
async function signIn(p: Page, email: string, password: string) {
  await p.goto(srv.url + '/signin');
  await p.fill('#email', email);
  await p.fill('#password', password);
  const [res] = await Promise.all([
    p.waitForResponse((r) => r.url().endsWith('/signin') && r.request().method() === 'POST'),
    p.click('main button[type=submit]'),
  ]);
  return res.status();
}

describe('account settings', { timeout: 180_000 }, () => {
  it('mail without MAIL_URL goes to the server log; a message is well formed SMTP', async () => {
    const lines: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
    const send = mailTransport({ BASE_URL: 'http://localhost:4321' }, (_level, msg, fields) => lines.push({ msg, fields }));
    await send({ to: 'a@example.invalid', subject: 'Hi', text: 'the link: http://localhost:4321/reset/x' });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.msg).toContain('no MAIL_URL');
    expect(lines[0]!.fields).toMatchObject({ to: 'a@example.invalid', text: expect.stringContaining('/reset/x') });
    const data = smtpMessage('Gate <g@x.example>', { to: 'a@example.invalid', subject: 'Grüße', text: 'one\n.two' });
    expect(data).toContain('Subject: =?UTF-8?B?');
    expect(data).toContain('\r\n..two');
  });

  it('"Forgot password?" mails a one-time link over SMTP; it sets a new password and ends every session', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await signUp(page, 'forgetful@example.invalid');
      const other = await (await browser.newContext()).newPage();
      expect(await signIn(other, 'forgetful@example.invalid', PASSWORD)).toBe(303);

      const anon = await (await browser.newContext()).newPage();
      await anon.goto(srv.url + '/signin');
      await Promise.all([anon.waitForURL(srv.url + '/forgot'), anon.click('text=Forgot password?')]);
      expect(await axeSerious(anon)).toEqual([]);
      await anon.fill('#email', 'forgetful@example.invalid');
      await anon.click('main button[type=submit]');
      expect(await anon.locator('[role=status]').innerText()).toContain('If an account signs in with forgetful@example.invalid');
      // An unknown email gets the same answer, and no mail.
      await anon.goto(srv.url + '/forgot');
      await anon.fill('#email', 'nobody@example.invalid');
      await anon.click('main button[type=submit]');
      expect(await anon.locator('[role=status]').innerText()).toContain('If an account signs in with nobody@example.invalid');

      // The mail is sent after the answer (the answer takes the same time either way): awaited as it arrives.
      await smtp.arrived(1);
      expect(smtp.mail).toHaveLength(1);
      const m = smtp.mail[0]!;
      expect(m).toMatchObject({
        auth: '\0gate@example.invalid\0s3cret',
        from: '<no-reply@gate.example>',
        to: '<forgetful@example.invalid>',
      });
      const link = /http:\/\/\S+\/reset\/[A-Za-z0-9_-]+/.exec(m.data)![0];

      const opened = await anon.goto(link.replace(/^http:\/\/[^/]+/, srv.url));
      // The token is in the URL: the page tells the browser to send no Referer from it to another origin.
      expect(opened?.headers()['referrer-policy']).toBe('same-origin');
      await anon.fill('#password', 'a brand new password');
      await Promise.all([anon.waitForURL(srv.url + '/signin?done=reset'), anon.click('main button[type=submit]')]);
      // Used once: the link is gone; every session ended; the new password works, the old does not.
      expect((await anon.goto(link.replace(/^http:\/\/[^/]+/, srv.url)))?.status()).toBe(410);
      expect((await page.goto(srv.url + '/dashboard'))?.url()).toContain('/signin');
      expect(await signIn(anon, 'forgetful@example.invalid', PASSWORD)).toBe(401);
      expect(await signIn(anon, 'forgetful@example.invalid', 'a brand new password')).toBe(303);
    } finally {
      await context.close();
    }
  });

  it('changes email and password, lists sessions and signs one out', async () => {
    const a = await (
      await browser.newContext({
        userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15',
      })
    ).newPage();
    const b = await (await browser.newContext()).newPage();
    await signUp(a, 'changer@example.invalid');
    expect(await signIn(b, 'changer@example.invalid', PASSWORD)).toBe(303);

    await a.goto(srv.url + '/dashboard/account');
    expect(await a.locator('tbody tr').count()).toBe(2);
    expect(await a.locator('tbody').innerText()).toContain('Safari on macOS');
    expect(await axeSerious(a)).toEqual([]);
    await screenshot(a, { path: join(OUT, 'dashboard', 'account-1280.png'), fullPage: true });
    await a.setViewportSize({ width: 390, height: 900 });
    await screenshot(a, { path: join(OUT, 'dashboard', 'account-390.png'), fullPage: true });
    await a.setViewportSize({ width: 1280, height: 900 });

    // The other browser's session ends from here.
    await Promise.all([a.waitForURL(/done=session/), a.click('tbody button:has-text("Sign out")')]);
    expect(await a.locator('tbody tr').count()).toBe(1);
    expect((await b.goto(srv.url + '/dashboard/keys'))?.url()).toContain('/signin?next=');

    // A wrong current password changes nothing.
    await a.fill('#new-email', 'changed@example.invalid');
    await a.fill('#email-password', 'not my password at all');
    const [wrong] = await Promise.all([
      a.waitForResponse((r) => r.url().endsWith('/dashboard/account/email')),
      a.click('text=Change the email'),
    ]);
    expect(wrong.status()).toBe(403);
    expect(await a.locator('[role=alert]').innerText()).toContain('not the current password');
    await a.fill('#new-email', 'changed@example.invalid');
    await a.fill('#email-password', PASSWORD);
    await Promise.all([a.waitForURL(/done=email/), a.click('text=Change the email')]);
    expect(await a.locator('#account').innerText()).toContain('changed@example.invalid');

    expect(await signIn(b, 'changer@example.invalid', PASSWORD)).toBe(401);
    expect(await signIn(b, 'changed@example.invalid', PASSWORD)).toBe(303);
    await a.fill('#current-password', PASSWORD);
    await a.fill('#new-password', 'another long password');
    await Promise.all([a.waitForURL(/done=password/), a.click('text=Change the password')]);
    // This browser stays signed in; the other was signed out by the change.
    expect((await a.goto(srv.url + '/dashboard/account'))?.url()).toBe(srv.url + '/dashboard/account');
    expect((await b.goto(srv.url + '/dashboard'))?.url()).toContain('/signin');
    expect(await signIn(b, 'changed@example.invalid', 'another long password')).toBe(303);
  });

  it('names, renames and removes a passkey; a removed passkey no longer signs in', async () => {
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
      await p.fill('#email', 'keyholder@example.invalid');
      await p.fill('#password', PASSWORD);
      await Promise.all([p.waitForURL(origin + '/dashboard?welcome=1'), p.click('main button[type=submit]')]);
      // Offered at sign-up, named there.
      await p.fill('#passkey-name', 'Work laptop');
      await Promise.all([p.waitForURL(origin + '/dashboard/passkeys'), p.click('#passkey')]);
      expect(await p.inputValue('#pk-0')).toBe('Work laptop');
      await p.fill('#pk-0', 'Old laptop');
      await Promise.all([p.waitForURL(/done=renamed/), p.click('text=Rename')]);
      expect(await p.inputValue('#pk-0')).toBe('Old laptop');
      expect(await axeSerious(p)).toEqual([]);
      await p.click('a[aria-label="Remove Old laptop"]');
      expect(await p.textContent('h1')).toBe('Remove this passkey?');
      await Promise.all([p.waitForURL(/done=removed/), p.click('text=Yes, remove it')]);
      expect(await p.locator('tbody tr').count()).toBe(0);

      await p.goto(origin + '/signout');
      await Promise.all([p.waitForURL(origin + '/signin?done=signed-out'), p.click('text=Sign out of this browser')]);
      await p.click('#passkey');
      await p.waitForFunction(() => document.getElementById('passkey-status')?.textContent?.includes('did not work'));
      expect(await p.textContent('#passkey-status')).toContain('not registered');
    } finally {
      await context.close();
    }
  });

  it('deleting an account revokes every key and ends sign-in; its receipts stay public and verifiable', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await signUp(page, 'leaver@example.invalid');
      await Promise.all([page.waitForURL(/created=/), page.click('text=Create an agent key and a fuse')]);
      const setup = await page.locator('pre[data-step="setup"]').innerText();
      const key = setup.match(/KEY='([^']+)'/)![1]!;
      const fuseId = setup.match(/FUSE='([^']+)'/)![1]!;
      const hop = await (await srv.fetch('/v1/fuse/hop', { method: 'POST', key, json: { fuse_id: fuseId } })).json();
      expect(hop.decision).toBe('PERMIT');

      await page.goto(srv.url + '/dashboard/account');
      await page.click('text=Delete this account…');
      expect(await page.textContent('h1')).toBe('Delete this account?');
      expect(await axeSerious(page)).toEqual([]);
      await page.fill('#delete-password', PASSWORD);
      await page.click('text=Yes, delete the account');
      expect(await page.textContent('h1')).toBe('Account deleted');

      const refused = await srv.fetch('/v1/fuse/hop', { method: 'POST', key, json: { fuse_id: fuseId } });
      expect(refused.status).toBe(401);
      expect((await refused.json()).code).toBe('revoked_key');
      expect((await page.goto(srv.url + '/dashboard'))?.url()).toContain('/signin');
      expect(await signIn(page, 'leaver@example.invalid', PASSWORD)).toBe(401);
      // The receipt is still served with its proof.
      const evidence = await srv.fetch(`/v1/receipts/${hop.receipt_id}`, { headers: { accept: 'application/json' } });
      expect(evidence.status).toBe(200);
      expect((await evidence.json()).payload).toMatchObject({ kind: 'hop', decision: 'PERMIT', subject: fuseId });
      await page.goto(`${srv.url}/verify?id=${hop.receipt_id}`);
      await page.waitForSelector('#verify-result[data-state="proven"]', { timeout: 30_000 });
      // The email is free again, as a new account.
      await signUp(page, 'leaver@example.invalid');
    } finally {
      await context.close();
    }
  });

  it('the role select shows a focus ring when reached by keyboard', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await signUp(page, 'keyboard@example.invalid');
      await page.goto(srv.url + '/dashboard/keys');
      await page.focus('#key-name');
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('key-role');
      const outline = await page.evaluate(() => getComputedStyle(document.getElementById('key-role')!).outlineStyle);
      expect(outline).toBe('solid');
    } finally {
      await context.close();
    }
  });
});
