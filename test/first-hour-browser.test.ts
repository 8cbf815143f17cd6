/**
 * A newcomer's first hour in headless Chromium against a real server (issue 49
 * item 7): /start's key link signs up and lands on the operator choice, and
 * its code blocks copy; the
 * one-time secret takes focus; the Overview ticks, refreshes its totals and
 * links the PERMIT receipt; refusals, Due and Charged so far are explained;
 * fuse actions and sign-out say what they did; the header folds into a menu
 * and the chart's text stays readable at 390 px.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GET_STARTED } from '../src/site/get-started.ts';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let srv: TestServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  srv = await startTestServer();
  ({ browser } = await launchChromium());
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
});

describe('the first hour, in Chromium', { timeout: 120_000 }, () => {
  let secret = '';
  let fuseId = '';

  it('the header offers Sign up; /start sends a visitor to sign up and on to the operator choice, first', async () => {
    await page.goto(srv.url + '/start');
    expect(await page.getAttribute('header a.signup', 'href')).toBe('/signup');
    await Promise.all([page.waitForURL(/\/signup\?next=/), page.click('text=Sign up and create an operator key')]);
    await page.fill('#email', 'first-hour@example.invalid');
    await page.fill('#password', 'correct horse battery staple');
    await Promise.all([page.waitForURL(srv.url + '/dashboard?key=operator'), page.click('button[type=submit]')]);
    const buttons = page.locator('form[action="/dashboard/start"] button');
    expect(await buttons.first().getAttribute('value')).toBe('operator');
    expect(await buttons.first().getAttribute('class')).toBeNull();
    expect(await buttons.nth(1).getAttribute('class')).toBe('secondary');
  });

  it("/start's code blocks each have a Copy button that copies the command", async () => {
    const c = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await c.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: srv.url });
    const p = await c.newPage();
    await p.goto(srv.url + '/start');
    const blocks = p.locator('pre[data-step]');
    expect(await p.locator('pre[data-step] + button.copy').count()).toBe(await blocks.count());
    await p.click('#step-hop button.copy');
    // The label changes once the clipboard write resolves: wait for it, never for a time.
    await p.waitForFunction(() => document.querySelector('#step-hop button.copy')?.textContent === 'Copied');
    expect(await p.evaluate(() => navigator.clipboard.readText())).toBe(GET_STARTED.find((x) => x.id === 'hop')!.command);
    await c.close();
  });

  it('moves focus to the one-time secret, and after a reload says how to get another', async () => {
    // A new account opens in test mode (docs/test-mode.md); this hour is about live totals: the switch turns it off.
    expect(await page.getAttribute('.mode-switch button', 'aria-checked')).toBe('true');
    await Promise.all([page.waitForURL(srv.url + '/dashboard'), page.click('.mode-switch button')]);
    expect(await page.getAttribute('.mode-switch button', 'aria-checked')).toBe('false');
    await Promise.all([page.waitForURL(/\/dashboard\?created=key_/), page.click('text=Create an operator key and a fuse')]);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('secret-panel');
    secret = (await page.textContent('#new-secret'))!;
    fuseId = /FUSE='(fuse_[^']+)'/.exec((await page.textContent('#cmd-setup'))!)![1]!;
    await page.goto(srv.url + '/dashboard');
    expect(await page.locator('#new-secret').count()).toBe(0);
    expect(await page.textContent('[data-step="key"]')).toContain('Secret lost? It is shown only once: rotate the key');
  });

  it('ticks the hop, links its PERMIT receipt and refreshes the totals; the refusal is named a refusal', async () => {
    expect(await page.textContent('#usage')).toContain('No charges this period yet');
    expect(await page.isHidden('#permit-link')).toBe(true);
    const hop = await (await srv.fetch('/v1/fuse/hop', { key: secret, json: { fuse_id: fuseId, action: { kind: 'pay' } } })).json();
    expect(hop.decision).toBe('PERMIT');
    await page.waitForSelector('#permit-link:not([hidden])', { timeout: 60_000 });
    expect(await page.getAttribute('#permit-link', 'href')).toBe(`/verify?id=${hop.receipt_id}`);
    await page.waitForFunction(() => !document.getElementById('usage')!.textContent!.includes('No charges this period yet'), null, {
      timeout: 60_000,
    });
    expect(await page.textContent('#usage')).toMatch(/1\s+charged acts/);

    await srv.fetch(`/v1/fuses/${fuseId}/dead`, { method: 'POST', key: secret });
    expect((await (await srv.fetch('/v1/fuse/hop', { key: secret, json: { fuse_id: fuseId } })).json()).decision).toBe('DENY');
    await page.waitForFunction(() => document.getElementById('usage')!.textContent!.includes('refusals:'), null, { timeout: 60_000 });
    expect(await page.textContent('#usage')).toContain('hold (refusals: BLOCK, HOLD, DENY, SILENCE)');
    expect(await page.textContent('#due-explained')).toMatch(
      /Due is the month's minimum.*Charged so far is what the key's acts have already paid/,
    );
  });

  it('at 390 px: a menu button opens the navigation, and the chart text is at least 10 px', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(srv.url + '/dashboard');
    expect(await page.isVisible('header nav[aria-label="Main"]')).toBe(false);
    expect(await page.isVisible('header nav[aria-label="Main menu"]')).toBe(false);
    await page.click('header .menu summary');
    expect(await page.isVisible('header nav[aria-label="Main menu"] >> text=Pricing')).toBe(true);
    const heights = await page.$$eval('svg.chart text.day', (ts) => ts.map((t) => t.getBoundingClientRect().height));
    expect(heights.length).toBeGreaterThan(0);
    for (const h of heights) expect(h).toBeGreaterThanOrEqual(10);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(srv.url + '/start');
    expect(await page.isVisible('header .menu summary')).toBe(false);
    expect(await page.isVisible('header nav[aria-label="Main"] >> text=Pricing')).toBe(true);
  });

  it('lists only keys a person holds, and says what fuse actions and signing out did', async () => {
    await page.goto(srv.url + '/dashboard/keys');
    expect(await page.textContent('main')).not.toContain('dashboard (signed-in session)');
    expect(await page.locator('table.keys tbody tr').count()).toBe(1);

    await page.goto(srv.url + '/dashboard/fuses');
    await page.fill('#fuse-label', 'second');
    await Promise.all([page.waitForURL(srv.url + '/dashboard/fuses?done=created'), page.click('text=Create fuse')]);
    expect(await page.textContent('.notice')).toContain('Created the fuse.');
    await page.goto(srv.url + `/dashboard/fuses/${fuseId}/charge`);
    await Promise.all([page.waitForURL(srv.url + '/dashboard/fuses?done=charge'), page.click('text=Yes, charge it to LIVE')]);
    expect(await page.textContent('.notice')).toContain('Charged the fuse: it is LIVE');
    await page.goto(srv.url + `/dashboard/fuses/${fuseId}/dead?from=history`);
    await Promise.all([page.waitForURL(srv.url + `/dashboard/fuses/${fuseId}?done=dead`), page.click('text=Yes, blow it')]);
    expect(await page.textContent('.notice')).toContain('Blew the fuse: it is DEAD');

    await Promise.all([page.waitForURL(srv.url + '/signin?done=signed-out'), page.click('header button:has-text("Sign out")')]);
    expect(await page.textContent('.notice')).toBe('You are signed out of this browser.');
  });
});
