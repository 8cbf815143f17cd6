/**
 * /dashboard/alerts in headless Chromium against a real server (issue 31 item 4):
 * an account adds an alert subscription, a reload does not add a second one,
 * blowing a fuse from the dashboard delivers a signed event to a real receiver
 * and shows the delivery, removal asks first; axe finds nothing serious at
 * 1280 and 390 px, and screenshots of both are written for a person to look at.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUT as SHOTS, axeSerious, screenshot } from './support/axe.ts';
import { launchChromium } from './support/browser.ts';
import { untilCommitted } from './support/commits.ts';
import { startReceiver, type Receiver } from './support/receiver.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let srv: TestServer;
let browser: Browser;
let page: Page;
let hook: Receiver;

beforeAll(async () => {
  hook = await startReceiver();
  srv = await startTestServer({ WEBHOOK_POLL_MS: '50', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  ({ browser } = await launchChromium());
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  mkdirSync(SHOTS, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
  await hook?.close();
});

describe('/dashboard/alerts in Chromium', { timeout: 120_000 }, () => {
  it('adds a subscription once, shows the delivery of a blown fuse, and removes it after asking', async () => {
    await page.goto(srv.url + '/signup');
    await page.fill('#email', 'alerts@example.invalid');
    await page.fill('#password', 'correct horse battery staple');
    await Promise.all([page.waitForURL(srv.url + '/dashboard?welcome=1'), page.click('main button[type=submit]')]);
    await page.goto(srv.url + '/dashboard/fuses');
    await page.fill('#fuse-label', 'payments agent');
    await Promise.all([page.waitForURL(srv.url + '/dashboard/fuses?done=created'), page.click('text=Create fuse')]);
    const fuseId = (await page.locator('td code').first().textContent())!;

    await page.goto(srv.url + '/dashboard');
    await page.click('nav.dash >> text=Alerts');
    expect(await page.textContent('h1')).toBe('Alerts');
    const url = hook.url('/hooks/fusegate');
    await page.fill('#a-url', url);
    expect(await page.isChecked('input[value="fuse.state_changed"]')).toBe(true);
    await page.uncheck('input[value="hop.denied"]');
    await page.selectOption('#a-fuse', fuseId);
    await Promise.all([page.waitForURL(/\/dashboard\/alerts\?added=whs_/), page.click('text=Add subscription')]);
    expect(await page.textContent('[role=status]')).toMatch(/added/);
    await page.reload();
    expect(await page.locator('a:has-text("Remove…")').count()).toBe(1);
    const row = page.locator('ul.subs li').first();
    expect(await row.textContent()).toContain('fuse.state_changed');
    expect(await row.textContent()).not.toContain('hop.denied');
    expect(await row.textContent()).toContain(fuseId);

    // Nothing chosen: the API's refusal is shown, nothing is added.
    await page.fill('#a-url', url);
    for (const box of await page.locator('input[name=events]').all()) await box.uncheck();
    await page.click('text=Add subscription');
    expect(await page.textContent('[role=alert]')).toMatch(/at least one event/);
    // The form is kept: the URL typed is still there to correct.
    expect(await page.inputValue('#a-url')).toBe(url);
    expect(await page.locator('a:has-text("Remove…")').count()).toBe(1);

    // Blow the fuse from the dashboard: the receiver gets the event, the page shows it delivered.
    await page.goto(srv.url + '/dashboard/fuses');
    await page.click('a:has-text("Blow")');
    await Promise.all([page.waitForURL(srv.url + '/dashboard/fuses?done=dead'), page.click('text=Yes, blow it')]);
    await hook.arrived(1);
    expect(hook.calls.map((c) => JSON.parse(c.body))).toEqual([expect.objectContaining({ type: 'fuse.state_changed', fuse_id: fuseId })]);
    // The page shows the delivery once the deliverer has recorded it.
    const delivered = async () =>
      (await srv.ctx.ledger.read.execute("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE state = 'delivered'")).rows[0]!.n === 1;
    await untilCommitted(srv.ctx.ledger, delivered);
    await page.goto(srv.url + '/dashboard/alerts');
    const delivery = page.locator('#deliveries + * tbody tr').first();
    expect(await delivery.textContent()).toMatch(/fuse\.state_changed[\s\S]*delivered/);
    expect(await delivery.locator('td[data-label="Endpoint"]').textContent()).toBe(url);

    // "Send test event": delivered to the receiver like any event, listed first, marked test, its payload one click away.
    await Promise.all([page.waitForURL(/tested=whs_/), page.click('button:has-text("Send test event")')]);
    await hook.arrived(2);
    expect(JSON.parse(hook.calls[1]!.body)).toMatchObject({ type: 'alert.test', test: true });
    await untilCommitted(
      srv.ctx.ledger,
      async () =>
        (await srv.ctx.ledger.read.execute("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE state = 'delivered'")).rows[0]!.n === 2,
    );
    await page.reload();
    const test = page.locator('#deliveries + * tbody tr').first();
    expect(await test.locator('td[data-label="Event"]').textContent()).toMatch(/^alert\.test test/);
    expect(await test.locator('pre.payload').isVisible()).toBe(false);
    await test.locator('summary:has-text("Payload")').click();
    expect(JSON.parse((await test.locator('pre.payload').textContent())!)).toMatchObject({ type: 'alert.test', test: true });
    expect(await axeSerious(page)).toEqual([]);
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const tail = scheme === 'dark' ? '-dark' : '';
      await page.setViewportSize({ width: 1280, height: 900 });
      await screenshot(page, { path: join(SHOTS, `dashboard-alerts-1280${tail}.png`), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      expect(await axeSerious(page)).toEqual([]);
      await screenshot(page, { path: join(SHOTS, `dashboard-alerts-390${tail}.png`), fullPage: true });
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 900 });

    // Removal asks first, then says so.
    await page.click('a:has-text("Remove…")');
    expect(await page.textContent('h1')).toBe('Remove this alert subscription?');
    await Promise.all([page.waitForURL(/\/dashboard\/alerts\?removed=whs_/), page.click('text=Yes, remove it')]);
    expect(await page.textContent('[role=status]')).toMatch(/removed/);
    expect(await page.locator('a:has-text("Remove…")').count()).toBe(0);
  });
});
