/**
 * A new person's journeys through the dashboard, in headless Chromium against
 * a real server (issues 30 and 31):
 *   - sign-up to the first verified receipt, by the overview's guide: its key
 *     and fuse, its commands run as printed, the page ticking itself, the DENY
 *     receipt proven by the browser verifier;
 *   - Get started followed literally with a key made in the dashboard;
 *   - keys: no second key on reload, revoke after a confirmation, then the hop
 *     is refused; a deep link survives sign-in;
 *   - receipts: filters in any case and by id prefix, cursor pages, CSV/JSON export;
 *   - the header's account on static and dashboard pages; 390 px; dark mode.
 * Screenshots go to test-output/dashboard/.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GET_STARTED } from '../src/site/get-started.ts';
import { ALL_PAGES } from '../src/site/nav.ts';
import { OUT, axeSerious, screenshot } from './support/axe.ts';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const run = promisify(execFile);
const SHOTS = join(OUT, 'dashboard');
const PASSWORD = 'correct horse battery staple';

let srv: TestServer;
let browser: Browser;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  srv = await startTestServer();
  ({ browser } = await launchChromium());
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
});

/** What a reader's shell has: the page's commands run with these and nothing of the test runner's. */
const shellEnv = () => ({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' });
const bash = async (script: string, env: Record<string, string> = shellEnv()) =>
  (await run('bash', ['-euo', 'pipefail', '-c', script], { env, cwd: process.cwd() })).stdout;

async function signUp(email: string, width = 1280): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  await page.goto(srv.url + '/signup');
  await page.fill('#email', email);
  await page.fill('#password', PASSWORD);
  await Promise.all([page.waitForURL(/\/dashboard\?welcome=1$/), page.click('main button[type=submit]')]);
  return { context, page };
}

const shot = async (page: Page, name: string) => {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await screenshot(page, { path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
};

describe('dashboard journeys in Chromium', { timeout: 180_000 }, () => {
  it('sign-up to the first verified receipt: the guide makes a key and a fuse, ticks itself from the ledger, and links the DENY receipt', async () => {
    const { context, page } = await signUp('first@example.invalid');
    try {
      // The first screen: the account in the header, a passkey offered, the guide with nothing done.
      expect(await page.locator('#account').innerText()).toContain('first@example.invalid');
      expect(await page.locator('main button:has-text("Sign out")').count()).toBe(0);
      expect(await page.locator('#pk-h').count()).toBe(1);
      expect(await page.locator('#guide [data-step="key"] .tick').innerText()).toBe('To do');
      expect(await axeSerious(page)).toEqual([]);

      await Promise.all([page.waitForURL(/\/dashboard\?created=key_/), page.click('text=Create an agent key and a fuse')]);
      const secret = await page.locator('#new-secret').innerText();
      // A new account's dashboard opens in test mode (docs/test-mode.md): its first keys are test keys.
      expect(secret).toMatch(/^fg_test_/);
      expect(await page.locator('#guide [data-step="key"] .tick').innerText()).toBe('Done');
      const setup = await page.locator('pre[data-step="setup"]').innerText();
      expect(setup).toContain(secret);
      await shot(page, 'overview-guide');

      // The page's own commands, as printed: the hop is permitted, and the page notices it.
      const hop = await page.locator('pre[data-step="hop"]').innerText();
      expect(await bash(`${setup}\n${hop}`)).toContain('"verdict":true');
      await page.waitForSelector('#guide [data-step="hop"].done', { timeout: 15_000 });
      expect(await page.locator('#guide-status').innerText()).toContain('first hop');

      const blow = await page.locator('pre[data-step="blow"]').innerText();
      expect(await bash(`${setup}\n${blow}`)).toContain('"verdict":false');
      await page.waitForSelector('#guide [data-step="deny"].done', { timeout: 15_000 });
      const link = page.locator('#verify-link');
      await link.waitFor({ state: 'visible' });
      // Reloading keeps the ticks (they come from the ledger) and never shows the secret again.
      await page.reload();
      expect(await page.content()).not.toContain(secret);
      expect(await page.locator('#guide [data-step="deny"] .tick').textContent()).toBe('Done');
      await page.click('summary:has-text("Get started")');
      await Promise.all([page.waitForURL(/\/verify\?id=rcpt_/), page.click('#verify-link')]);
      await page.waitForSelector('#verify-result[data-state="proven"]', { timeout: 30_000 });
      expect(await page.locator('#verify-summary').innerText()).toContain('Proven');
      const id = new URL(page.url()).searchParams.get('id')!;
      const evidence = await (await srv.fetch(`/v1/receipts/${id}`, { headers: { accept: 'application/json' } })).json();
      expect(evidence.payload).toMatchObject({ kind: 'hop', decision: 'DENY' });

      // The first hour runs in test mode (docs/test-mode.md): a test receipt, in the test log, and nothing billed.
      expect(evidence.payload.test).toBe(true);
      expect(evidence.log.name).toBe('receipts-test');
      await page.goto(srv.url + '/dashboard');
      expect(await page.locator('.test-banner').count()).toBe(1);
      expect(await page.innerText('#usage')).toContain('billed nothing');
      expect(await page.locator('meter').count()).toBe(1);
      expect(await axeSerious(page)).toEqual([]);
      await shot(page, 'overview-usage');
    } finally {
      await context.close();
    }
  });

  it("Get started works as printed with a key made in the dashboard; an agent key's 403 names the fix", async () => {
    const { context, page } = await signUp('starter@example.invalid');
    try {
      // Step 1 as /start words it: the overview's operator button.
      await Promise.all([page.waitForURL(/\/dashboard\?created=key_/), page.click('text=Create an operator key and a fuse')]);
      const env: Record<string, string> = {
        ...shellEnv(),
        BASE: srv.url,
        KEY: await page.locator('#new-secret').innerText(),
        DATABASE_URL: srv.config.DATABASE_URL,
        SIGNING_KEY_FILE: srv.config.SIGNING_KEY_FILE,
        LOG_LEVEL: 'silent',
      };
      for (const step of GET_STARTED.filter((s) => s.id !== 'key')) {
        let out: string;
        if (step.lang === 'bash') out = await bash(step.command, env);
        else {
          const file = join(process.cwd(), `.journey-${process.pid}-${step.file}`);
          writeFileSync(file, step.command);
          try {
            out = (await run(process.execPath, [file], { env, cwd: process.cwd() })).stdout;
          } finally {
            rmSync(file, { force: true });
          }
        }
        expect(out, step.id).toContain(step.expect);
        const answer = out.split('\n').find((l) => l.startsWith('{')) ?? '';
        for (const [name, path] of Object.entries(step.sets ?? {})) env[name] = String(JSON.parse(answer)[path]);
      }
      // An agent key from the keys page cannot create a fuse, and the answer says what to do instead.
      await page.goto(srv.url + '/dashboard/keys');
      await page.fill('#key-name', 'agent for start');
      await Promise.all([page.waitForURL(/created=/), page.click('text=Create key')]);
      const agent = await page.locator('#new-secret').innerText();
      const refused = await srv.fetch('/v1/fuses', { method: 'POST', key: agent, json: { label: 'x' } });
      expect(refused.status).toBe(403);
      const problem = await refused.json();
      expect(problem).toMatchObject({ code: 'operator_key_required', fix_url: '/dashboard/keys?role=operator' });
      expect(problem.detail).toContain('create an operator key on /dashboard/keys');
      // The link preselects the operator role.
      await page.goto(srv.url + problem.fix_url);
      expect(await page.inputValue('#key-role')).toBe('operator');
      // A caller without a key is told where to get one.
      const missing = await (await srv.fetch('/v1/fuses', { method: 'POST', json: {} })).json();
      expect(missing).toMatchObject({ code: 'missing_key', signup_url: '/signup' });
      expect(missing.detail).toContain('/signup');
      const unknown = await (await srv.fetch('/v1/me', { key: 'fg_live_nosuchkey' })).json();
      expect(unknown).toMatchObject({ code: 'unknown_key', signup_url: '/signup' });
    } finally {
      await context.close();
    }
  });

  it('keys: reload never makes a second key, revoke asks first and then the hop is refused; deep links survive sign-in', async () => {
    const { context, page } = await signUp('keys@example.invalid');
    try {
      await Promise.all([page.waitForURL(/\/dashboard\?created=/), page.click('text=Create an agent key and a fuse')]);
      const fuseId = (await page.locator('pre[data-step="setup"]').innerText()).match(/FUSE='([^']+)'/)![1]!;
      await page.goto(srv.url + '/dashboard/keys');
      await page.fill('#key-name', 'payments bot');
      await page.fill('#key-limit', '500');
      await page.fill('#key-days', '30');
      await Promise.all([page.waitForURL(/created=/), page.click('text=Create key')]);
      const secret = await page.locator('#new-secret').innerText();
      expect(await page.locator('button[data-copy="new-secret"]').isVisible()).toBe(true);
      for (let i = 0; i < 2; i++) await page.reload();
      expect(await page.locator('tbody tr:has-text("payments bot")').count()).toBe(1);
      expect(await page.content()).not.toContain(secret);
      expect(await page.locator('tbody tr:has-text("payments bot")').innerText()).toContain('0 / 500');
      await shot(page, 'keys');

      // At 390 px the status and the actions are on screen, not scrolled away.
      await page.setViewportSize({ width: 390, height: 900 });
      for (const sel of ['tbody tr:has-text("payments bot") td[data-label="Status"]', 'a[aria-label^="Revoke payments bot"]']) {
        const box = (await page.locator(sel).boundingBox())!;
        expect(box.x + box.width, sel).toBeLessThanOrEqual(390);
      }
      await page.setViewportSize({ width: 1280, height: 900 });

      // Edit the hop limit and clear the expiry.
      await page.click('a[aria-label^="Edit payments bot"]');
      await page.fill('#lim', '750');
      await Promise.all([page.waitForURL(/done=limit/), page.click('text=Save the limit')]);
      expect(await page.innerText('main')).toContain('0 / 750');
      await Promise.all([page.waitForURL(/done=expiry/), page.click('text=Save the expiry')]);
      expect(await page.innerText('main')).toMatch(/Expires\s+never/);
      expect(await axeSerious(page)).toEqual([]);

      // Rotate: asks first, shows the new secret once; the old one works through the grace period.
      await page.click('text=Rotate…');
      expect(await page.textContent('h1')).toBe('Rotate this key?');
      await Promise.all([page.waitForURL(/rotated=1/), page.click('text=Yes, rotate payments bot')]);
      const rotated = await page.locator('#new-secret').innerText();
      expect(rotated).not.toBe(secret);
      const hop = (key: string) => srv.fetch('/v1/fuse/hop', { method: 'POST', key, json: { fuse_id: fuseId } });
      expect((await hop(rotated)).status).toBe(200);

      await page.goto(srv.url + '/dashboard/keys');
      await page.click('a[aria-label^="Revoke payments bot"]');
      expect(await page.textContent('h1')).toBe('Revoke this key?');
      expect(await axeSerious(page)).toEqual([]);
      await Promise.all([page.waitForURL(/done=revoked/), page.click('text=Yes, revoke payments bot')]);
      expect(await page.locator('[role=status]').first().innerText()).toContain('Revoked the key');
      const refused = await hop(rotated);
      expect(refused.status).toBe(401);
      expect((await refused.json()).code).toBe('revoked_key');

      // Signed out, a deep link goes through sign-in and comes back to itself.
      await page.goto(srv.url + '/signout');
      await Promise.all([page.waitForURL(srv.url + '/signin?done=signed-out'), page.click('text=Sign out of this browser')]);
      await page.goto(srv.url + '/dashboard/keys?role=operator');
      expect(page.url()).toBe(srv.url + '/signin?next=' + encodeURIComponent('/dashboard/keys?role=operator'));
      await page.fill('#email', 'keys@example.invalid');
      await page.fill('#password', PASSWORD);
      await Promise.all([page.waitForURL(srv.url + '/dashboard/keys?role=operator'), page.click('main button[type=submit]')]);
      expect(await page.inputValue('#key-role')).toBe('operator');
      // An address off the site is never followed.
      for (const next of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
        await page.goto(srv.url + '/signin?next=' + encodeURIComponent(next));
        expect(page.url()).toBe(srv.url + '/dashboard');
      }
    } finally {
      await context.close();
    }
  });

  it('receipts: filters in any case and by id prefix, pages with a cursor, exports CSV and JSON', async () => {
    const { context, page } = await signUp('receipts@example.invalid');
    try {
      await Promise.all([page.waitForURL(/\/dashboard\?created=/), page.click('text=Create an agent key and a fuse')]);
      const setup = await page.locator('pre[data-step="setup"]').innerText();
      const key = setup.match(/KEY='([^']+)'/)![1]!;
      const fuseId = setup.match(/FUSE='([^']+)'/)![1]!;
      const hop = () => srv.fetch('/v1/fuse/hop', { method: 'POST', key, json: { fuse_id: fuseId } });
      for (let i = 0; i < 52; i++) expect((await hop()).status).toBe(200);
      expect((await srv.fetch(`/v1/fuses/${fuseId}/dead`, { method: 'POST', key })).status).toBe(200);
      for (let i = 0; i < 2; i++) expect((await (await hop()).json()).decision).toBe('DENY');

      await page.goto(srv.url + '/dashboard/receipts?decision=deny');
      expect(await page.locator('tbody tr').count()).toBe(2);
      await page.goto(srv.url + '/dashboard/receipts?decision=DENY');
      expect(await page.locator('tbody tr').count()).toBe(2);
      await page.goto(srv.url + `/dashboard/receipts?subject=${fuseId.slice(0, 12).toUpperCase()}&kind=HOP`);
      expect(await page.locator('tbody tr').count()).toBe(50);
      // The cursor: the next page starts after the last row of this one, and nothing repeats.
      const firstPage = await page.locator('tbody tr td[data-label="Receipt"] code').allInnerTexts();
      await page.click('a[rel=next]');
      const secondPage = await page.locator('tbody tr td[data-label="Receipt"] code').allInnerTexts();
      expect(secondPage.length).toBe(4);
      expect(secondPage.filter((id) => firstPage.includes(id))).toEqual([]);
      expect(await axeSerious(page)).toEqual([]);
      // A receipt id prefix finds it.
      const one = firstPage[3]!;
      await page.goto(srv.url + `/dashboard/receipts?id=${one.slice(0, one.length - 4)}`);
      expect(await page.locator('tbody tr td[data-label="Receipt"] code').allInnerTexts()).toContain(one);
      // Bad input says which field, and lists nothing.
      const bad = await page.goto(srv.url + '/dashboard/receipts?from=yesterday');
      expect(bad?.status()).toBe(400);
      expect(await page.locator('[role=alert]').innerText()).toContain('from: a date');

      await page.goto(srv.url + '/dashboard/receipts?decision=deny');
      await shot(page, 'receipts');
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('a:has-text("CSV")')]);
      expect(download.suggestedFilename()).toMatch(/^receipts-\d{4}-\d{2}-\d{2}\.csv$/);
      const csv = await page.evaluate(async () => (await fetch('/dashboard/receipts.csv?decision=deny')).text());
      const lines = csv.trim().split('\r\n');
      expect(lines[0]).toBe('id,created_at,kind,decision,reason,amount_usd,subject,fuse_label,tool,key_id,key_name,verify_url');
      expect(lines.length).toBe(3);
      expect(lines.slice(1).every((l) => l.includes(',hop,DENY,the fuse is DEAD: it fails closed,') && l.includes(`,${fuseId},`))).toBe(
        true,
      );
      // The filters are choices: "Refusals" from the decision select finds the two DENY hops.
      await page.goto(srv.url + '/dashboard/receipts');
      await page.selectOption('#f-decision', 'refusals');
      await Promise.all([page.waitForURL(/decision=refusals/), page.click('button:has-text("Filter")')]);
      expect(await page.locator('tbody tr td[data-label="Decision"]').allInnerTexts()).toEqual(['DENY', 'DENY']);
      expect(await page.locator('#receipts-total').innerText()).toBe('2 receipts match.');
      expect(await axeSerious(page)).toEqual([]);
      await page.emulateMedia({ colorScheme: 'dark' });
      await shot(page, 'receipts-refusals-dark');
      await page.emulateMedia({ colorScheme: 'light' });
      const json = await page.evaluate(async () => (await fetch('/dashboard/receipts.json?kind=hop')).json());
      expect(json.data.length).toBe(54);
      expect(json.data[0]).toMatchObject({ kind: 'hop', decision: 'DENY', subject: fuseId });
      expect(json.data[0].verify_url).toContain('/verify?id=rcpt_');
      // Signed out, the export is not served.
      const anonymous = await srv.fetch('/dashboard/receipts.json', { redirect: 'manual' });
      expect(anonymous.status).toBe(303);

      // The fuse's history: who changed it, when, with which receipt; charge asks first.
      await page.goto(srv.url + `/dashboard/fuses/${fuseId}`);
      const history = await page.locator('tbody tr').allInnerTexts();
      expect(history.length).toBe(2);
      expect(history[0]).toMatch(/dead\s+DEAD\s+first agent key/);
      expect(history[1]).toMatch(/create\s+LIVE\s+this dashboard/);
      await page.click('a:has-text("Charge")');
      expect(await page.textContent('h1')).toBe('Charge this fuse?');
      await Promise.all([page.waitForURL(srv.url + `/dashboard/fuses/${fuseId}?done=charge`), page.click('text=Yes, charge it to LIVE')]);
      expect(await page.locator('tbody tr').count()).toBe(3);
      await shot(page, 'fuse-history');
    } finally {
      await context.close();
    }
  });

  it('the header shows the account on every page; dark mode follows the system without axe violations', async () => {
    const anon = await browser.newContext();
    const p = await anon.newPage();
    await p.goto(srv.url + '/');
    expect(await p.locator('#account').innerText()).toBe('Sign in\nSign up');
    await anon.close();

    const { context, page } = await signUp('header@example.invalid');
    try {
      await page.goto(srv.url + '/pricing');
      expect(await page.locator('#account a').allInnerTexts()).toEqual(['Dashboard', 'Sign out']);
      await page.goto(srv.url + '/signin');
      expect(page.url()).toBe(srv.url + '/dashboard');
      await page.emulateMedia({ colorScheme: 'dark' });
      for (const path of ['/dashboard', '/dashboard/keys', '/dashboard/receipts', '/', '/start']) {
        await page.goto(srv.url + path);
        const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
        expect(bg, path).toBe('rgb(15, 17, 21)');
        expect(await axeSerious(page), path).toEqual([]);
      }
      await page.goto(srv.url + '/dashboard');
      await shot(page, 'overview-dark');
    } finally {
      await context.close();
    }
  });

  it('keyboard only: sign up, create a key, revoke it and blow a fuse, every focused control showing a focus ring', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    /** Tabs to the element matching `selector` (at most 80 presses), checking that it shows a focus outline. */
    const tabTo = async (selector: string) => {
      for (let i = 0; i < 80; i++) {
        await page.keyboard.press('Tab');
        if (await page.evaluate((sel) => document.activeElement?.matches(sel) ?? false, selector)) {
          const ring = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
          expect(ring, selector).not.toBe('none');
          return;
        }
      }
      throw new Error(`Tab never reached ${selector}`);
    };
    try {
      await page.goto(srv.url + '/signup');
      await tabTo('#email');
      await page.keyboard.type('keys-only@example.invalid');
      await tabTo('#password');
      await page.keyboard.type(PASSWORD);
      await Promise.all([page.waitForURL(/welcome=1/), page.keyboard.press('Enter')]);

      await tabTo('button[name=role][value=agent]');
      await Promise.all([page.waitForURL(/created=/), page.keyboard.press('Enter')]);
      const setup = await page.locator('pre[data-step="setup"]').innerText();
      const key = setup.match(/KEY='([^']+)'/)![1]!;
      const fuseId = setup.match(/FUSE='([^']+)'/)![1]!;

      await page.goto(srv.url + '/dashboard/fuses');
      await tabTo('a[aria-label^="Blow"]');
      await Promise.all([page.waitForURL(/\/dead$/), page.keyboard.press('Enter')]);
      await tabTo('button.danger');
      await Promise.all([page.waitForURL(srv.url + '/dashboard/fuses?done=dead'), page.keyboard.press('Enter')]);
      expect((await (await srv.fetch('/v1/fuse/hop', { method: 'POST', key, json: { fuse_id: fuseId } })).json()).decision).toBe('DENY');

      await page.goto(srv.url + '/dashboard/keys');
      await tabTo('a[aria-label^="Revoke first agent key"]');
      await Promise.all([page.waitForURL(/\/revoke$/), page.keyboard.press('Enter')]);
      await tabTo('button.danger');
      await Promise.all([page.waitForURL(/done=revoked/), page.keyboard.press('Enter')]);
      expect((await srv.fetch('/v1/me', { key })).status).toBe(401);
    } finally {
      await context.close();
    }
  });

  // One test a page, each with the describe's time: axe over every page in one test outgrew it on a busy machine.
  describe('every page of the site, and the sign-in pages, in dark mode', () => {
    let dark: BrowserContext;
    let page: Page;
    beforeAll(async () => {
      dark = await browser.newContext({ colorScheme: 'dark' });
      page = await dark.newPage();
    });
    afterAll(() => dark?.close());
    for (const path of [...ALL_PAGES, '/signup', '/signin', '/forgot', '/logs', '/verify']) {
      it(`${path} has no serious axe violation in dark mode`, async () => {
        await page.goto(srv.url + path);
        expect(await axeSerious(page)).toEqual([]);
      });
    }
  });

  it("without JavaScript: sign up, make the guide's key and fuse, blow the fuse, revoke the key, filter receipts", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    try {
      await page.goto(srv.url + '/signup');
      await page.fill('#email', 'nojs@example.invalid');
      await page.fill('#password', PASSWORD);
      await Promise.all([page.waitForURL(/welcome=1/), page.click('main button[type=submit]')]);
      await Promise.all([page.waitForURL(/created=/), page.click('text=Create an agent key and a fuse')]);
      // A new account's dashboard opens in test mode (docs/test-mode.md): its first keys are test keys.
      expect(await page.locator('#new-secret').innerText()).toMatch(/^fg_test_/);
      // The copy buttons need script: without it they stay hidden, the secret stays selectable text.
      expect(await page.locator('button[data-copy]').first().isVisible()).toBe(false);
      await page.goto(srv.url + '/dashboard/fuses');
      await page.click('a:has-text("Blow")');
      await Promise.all([page.waitForURL(srv.url + '/dashboard/fuses?done=dead'), page.click('text=Yes, blow it')]);
      expect(await page.locator('td strong').first().innerText()).toBe('DEAD');
      await page.goto(srv.url + '/dashboard/keys');
      await page.click('a[aria-label^="Revoke first agent key"]');
      await Promise.all([page.waitForURL(/done=revoked/), page.click('text=Yes, revoke')]);
      await page.goto(srv.url + '/dashboard/receipts?kind=FUSE_DEAD');
      expect(await page.locator('tbody tr').count()).toBe(1);
      // The guide ticks on reload.
      await page.goto(srv.url + '/dashboard');
      expect(await page.locator('#guide [data-step="key"] .tick').innerText()).toBe('Done');
    } finally {
      await context.close();
    }
  });
});
