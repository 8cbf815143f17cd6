/**
 * The dashboard's "Test mode" switch (docs/test-mode.md) in headless Chromium
 * against a real server, at 1280 and 390 px: a new account opens in test mode
 * under its banner, makes test keys there, sees its test receipts only there,
 * and the switch shows the live side without them; axe on both sides.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUT, axeSerious, screenshot } from './support/axe.ts';
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

const switchState = () => page.getAttribute('.mode-switch button', 'aria-checked');
const flip = () => Promise.all([page.waitForURL(/\/dashboard/), page.click('.mode-switch button')]);

describe('test mode on the dashboard', { timeout: 120_000 }, () => {
  let testSecret = '';
  let receiptId = '';

  it('opens a new account in test mode, and makes test keys there', async () => {
    await page.goto(srv.url + '/signup');
    await page.fill('#email', 'tester@example.invalid');
    await page.fill('#password', 'correct horse battery staple');
    await Promise.all([page.waitForURL(/\/dashboard/), page.click('main button[type=submit]')]);
    expect(await switchState()).toBe('true');
    expect(await page.innerText('.test-banner')).toContain('Test mode');
    await page.goto(srv.url + '/dashboard/keys');
    expect(await page.innerText('main')).toContain('this makes a test key');
    await page.fill('#key-name', 'trial');
    await page.selectOption('#key-role', 'operator');
    await Promise.all([page.waitForURL(/\/dashboard\/keys\?created=key_/), page.click('text=Create key')]);
    testSecret = (await page.textContent('#new-secret'))!;
    expect(testSecret).toMatch(/^fg_test_/);
    expect(await page.locator('tbody tr:has-text("trial")').count()).toBe(1);
    // The dashboard's own keys (live and test) are not listed.
    expect(await page.locator('tbody tr:has-text("dashboard")').count()).toBe(0);
  });

  it('shows the test receipts under the switch, marked, and none of them on the live side', async () => {
    const fuse = await (await srv.fetch('/v1/fuses', { key: testSecret, json: { state: 'LIVE', label: 'trial fuse' } })).json();
    const hop = await (
      await srv.fetch('/v1/fuse/hop', { key: testSecret, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay' } } })
    ).json();
    expect(hop.decision).toBe('PERMIT');
    receiptId = hop.receipt_id;
    expect(receiptId).toMatch(/^rcpt_test_/);

    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(srv.url + '/dashboard/receipts');
      expect(await page.locator('.test-banner').count()).toBe(1);
      expect(await page.content()).toContain(receiptId);
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
      expect(await axeSerious(page)).toEqual([]);
      await screenshot(page, { path: join(OUT, `test-mode-receipts-${width}.png`), fullPage: true });
      await page.goto(srv.url + '/dashboard/fuses');
      expect(await page.innerText('main')).toContain('trial fuse');
    }

    // The public verifier proves it against the test log, and says it is a test receipt.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${srv.url}/verify?id=${receiptId}`);
    await page.waitForSelector('#verify-result[data-state="proven"]', { timeout: 30_000 });
    expect(await page.locator('#verify-summary').innerText()).toMatch(
      /^Test receipt \(billed nothing, not a live receipt\)\. Proven: .*public test log/,
    );
    expect(await page.innerText('#verify-result')).toContain("a TEST receipt: a test key's act");
    expect(await page.innerText('#verify-result')).toContain('/receipts-test at size');

    await page.goto(srv.url + '/dashboard/receipts');
    await flip();
    expect(await switchState()).toBe('false');
    await page.goto(srv.url + '/dashboard/receipts');
    expect(await page.locator('.test-banner').count()).toBe(0);
    expect(await page.content()).not.toContain(receiptId);
    await page.goto(srv.url + '/dashboard/keys');
    expect(await page.locator('tbody tr:has-text("trial")').count()).toBe(0);
    expect(await page.innerText('main')).toContain('This makes a live key');
    await page.goto(srv.url + '/dashboard/fuses');
    expect(await page.innerText('main')).not.toContain('trial fuse');
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(srv.url + '/dashboard');
      expect(await axeSerious(page)).toEqual([]);
      await screenshot(page, { path: join(OUT, `test-mode-live-${width}.png`), fullPage: true });
    }
    // The switch is remembered: on again, the test side is back.
    await flip();
    await page.goto(srv.url + '/dashboard/receipts');
    expect(await switchState()).toBe('true');
    expect(await page.content()).toContain(receiptId);
    await page.setViewportSize({ width: 390, height: 900 });
    await page.goto(srv.url + '/dashboard');
    await screenshot(page, { path: join(OUT, 'test-mode-overview-390.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    await screenshot(page, { path: join(OUT, 'test-mode-overview-1280.png'), fullPage: true });
  });
});
