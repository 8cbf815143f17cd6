/**
 * /dashboard/requests in headless Chromium against a real server (issue 49
 * item 4): a signed-up person sees the requests their agent made, a refusal
 * among them with its problem code, filters to the failures of one key, and
 * follows a PERMIT's receipt link. axe finds nothing serious at 1280 and
 * 390 px, and screenshots of both are written for a person to look at.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginByEmail } from '../src/ledger/accounts.ts';
import { OUT, axeSerious, screenshot } from './support/axe.ts';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const SHOTS = join(OUT, 'dashboard');

let srv: TestServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  srv = await startTestServer({ REQUEST_LOG_ENABLED: 'true' });
  ({ browser } = await launchChromium());
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  mkdirSync(SHOTS, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
});

describe('/dashboard/requests in Chromium', { timeout: 120_000 }, () => {
  it("lists the agent's requests, failures with their code, filters them, and links a PERMIT to its receipt", async () => {
    await page.goto(srv.url + '/signup');
    await page.fill('#email', 'ops@example.invalid');
    await page.fill('#password', 'correct horse battery staple');
    await Promise.all([page.waitForURL(/\/dashboard\?welcome=1$/), page.click('main button[type=submit]')]);
    const accountId = (await loginByEmail(srv.ctx.ledger.read, 'ops@example.invalid'))!.account_id;
    const operator = await srv.newKey('ops', undefined, 'operator', accountId);
    const agent = await srv.newKey('billing-agent', undefined, 'agent', accountId);
    const fuse = (await (await srv.fetch('/v1/fuses', { key: operator.secret, json: { state: 'LIVE' } })).json()).fuse_id as string;
    const permit = await (await srv.fetch('/v1/fuse/hop', { key: agent.secret, json: { fuse_id: fuse, action: { kind: 'pay' } } })).json();
    expect(permit.decision).toBe('PERMIT');
    const missing = await srv.fetch('/v1/fuse/hop', { key: agent.secret, json: { fuse_id: 'fuse_nope', action: { kind: 'pay' } } });
    expect(missing.status).toBe(404);
    const code = (await missing.json()).code as string;

    await page.goto(srv.url + '/dashboard/requests');
    expect(await page.locator('main h1').innerText()).toBe('Requests');
    const table = page.locator('table.requests');
    const failedRow = table.locator('tbody tr.failed', { hasText: 'billing-agent' });
    expect(await failedRow.count()).toBe(1);
    expect(await failedRow.innerText()).toContain(code);
    expect(await failedRow.innerText()).toContain('POST /v1/fuse/hop');
    expect(await axeSerious(page)).toEqual([]);
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await screenshot(page, { path: join(SHOTS, `requests-${width}.png`), fullPage: true });
    }
    expect(await axeSerious(page)).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });

    // Only the agent's failures.
    await page.selectOption('#f-key', 'billing-agent');
    await page.selectOption('#f-status', 'failed');
    await Promise.all([page.waitForURL(/status=failed/), page.getByRole('button', { name: 'Filter' }).click()]);
    const rows = await table.locator('tbody tr').allInnerTexts();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain('404');

    // The PERMIT links to its receipt.
    await page.selectOption('#f-status', '2xx');
    await Promise.all([page.waitForURL(/status=2xx/), page.getByRole('button', { name: 'Filter' }).click()]);
    const link = table.locator(`a:has-text("${permit.receipt_id}")`);
    expect(await link.getAttribute('href')).toBe(permit.verify_url);
  });
});
