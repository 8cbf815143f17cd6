/**
 * /dashboard/reviews in headless Chromium against a real server (issue 47): a
 * signed-up person sees the pending count and what an agent's held request
 * asks, approves it with a note while the agent long-polls the review, and the
 * agent's wait ends with the approval by that person; the same request then
 * goes through once. A PAS-A pre-bind held for manual underwriting waits in
 * the same queue, naming its issue. The overview's operator statement then
 * counts the agent key's reviews of the month. axe finds nothing serious at
 * 1280 and 390 px, and screenshots of both are written for a person to look at.
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
const HELD = {
  rail: 'rtp',
  transfer: {
    amount: '12500.00',
    currency: 'USD',
    counterparty: 'ACME Supplies LLC',
    account_number: '000123456789',
    routing_number: '021000021',
  },
};

let srv: TestServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  srv = await startTestServer();
  ({ browser } = await launchChromium());
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  mkdirSync(SHOTS, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
});

describe('/dashboard/reviews in Chromium', { timeout: 120_000 }, () => {
  it('approves a held request with a note while the agent long-polls, and the agent goes on once', async () => {
    await page.goto(srv.url + '/signup');
    await page.fill('#email', 'reviewer@example.invalid');
    await page.fill('#password', 'correct horse battery staple');
    await Promise.all([page.waitForURL(/\/dashboard\?welcome=1$/), page.click('main button[type=submit]')]);
    const accountId = (await loginByEmail(srv.ctx.ledger.read, 'reviewer@example.invalid'))!.account_id;
    const agent = await srv.newKey('payments-agent', undefined, 'agent', accountId);

    await page.goto(srv.url + '/dashboard/reviews');
    expect(await page.locator('main h1').innerText()).toBe('Reviews: 0 pending');

    // The agent's transfer is above the USD review threshold: HOLD, with its review.
    const held = await (await srv.fetch('/v1/prefinality/evaluate', { key: agent.secret, json: HELD })).json();
    expect(held).toMatchObject({ decision: 'HOLD', rule: { id: 'review_threshold' } });
    const other = await (
      await srv.fetch('/v1/prefinality/evaluate', {
        key: agent.secret,
        json: { ...HELD, transfer: { ...HELD.transfer, amount: '20000.00' } },
      })
    ).json();
    // A pre-bind under a licence never charged: HOLD, a manual-underwriting issue, and its review.
    const underwriting = await srv.newKey('underwriting', undefined, 'operator', accountId);
    const fuse = await (await srv.fetch('/v1/fuses', { key: underwriting.secret, json: { state: 'LIVE' } })).json();
    const bind = await (
      await srv.fetch('/v1/pas/pas-a/pre-bind', {
        key: agent.secret,
        json: { fuse_id: fuse.fuse_id, license_id: 'lic_east_2026', job_id: 'job_7731', write: { op: 'bind', policy: 'P-7731' } },
      })
    ).json();
    expect(bind).toMatchObject({ decision: 'HOLD', issue: { code: 'license_not_live' } });

    await page.goto(srv.url + '/dashboard/reviews');
    expect(await page.locator('main h1').innerText()).toBe('Reviews: 3 pending');
    const pas = page.locator(`li#${bind.review_id}`);
    expect(await pas.locator('h3').innerText()).toBe(`pre-bind of job job_7731 under licence lic_east_2026 on fuse ${fuse.fuse_id}`);
    expect(await pas.innerText()).toContain(`manual-underwriting issue ${bind.issue.issue_id}`);
    const item = page.locator(`li#${held.review_id}`);
    expect(await item.locator('h3').innerText()).toBe('12500.00 USD to ACME Supplies LLC on rtp');
    expect(await item.innerText()).toContain('review_threshold');
    expect(await item.innerText()).toContain(agent.id);
    expect(await axeSerious(page)).toEqual([]);
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await screenshot(page, { path: join(SHOTS, `reviews-${width}.png`), fullPage: true });
    }
    expect(await axeSerious(page)).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });

    // The agent waits on its review while the person approves it in the dashboard.
    const waiting = srv.fetch(`/v1/reviews/${held.review_id}?wait=30`, { key: agent.secret }).then((r) => r.json());
    await item.locator('textarea').fill('Invoice 4471 checked with the supplier by phone');
    await Promise.all([page.waitForURL(/answered=approved/), item.getByRole('button', { name: `Approve ${held.review_id}` }).click()]);
    expect(await page.locator('main h1').innerText()).toBe('Reviews: 2 pending');
    expect(await page.locator('.notice').innerText()).toContain(`Review ${held.review_id} approved`);
    expect(await page.locator('table').innerText()).toContain('Invoice 4471 checked with the supplier by phone');
    const decided = await waiting;
    expect(decided).toMatchObject({
      id: held.review_id,
      state: 'approved',
      decided_by: { kind: 'person', id: 'reviewer@example.invalid' },
      note: 'Invoice 4471 checked with the supplier by phone',
    });

    // The agent goes on, once.
    const go = await srv.fetch('/v1/prefinality/evaluate', { key: agent.secret, json: { ...HELD, review_id: held.review_id } });
    expect(go.status).toBe(200);
    expect((await go.json()).review.approved_by).toEqual({ kind: 'person', id: 'reviewer@example.invalid' });
    expect((await srv.fetch('/v1/prefinality/evaluate', { key: agent.secret, json: { ...HELD, review_id: held.review_id } })).status).toBe(
      409,
    );

    // Denying the other; a reload of the answer posts nothing twice.
    await Promise.all([
      page.waitForURL(/answered=denied/),
      page
        .locator(`li#${other.review_id}`)
        .getByRole('button', { name: `Deny ${other.review_id}` })
        .click(),
    ]);
    await page.reload();
    expect(await page.locator('main h1').innerText()).toBe('Reviews: 1 pending');
    expect((await (await srv.fetch(`/v1/reviews/${other.review_id}`, { key: agent.secret })).json()).state).toBe('denied');
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await screenshot(page, { path: join(SHOTS, `reviews-answered-${width}.png`), fullPage: true });
    }

    // The overview's operator statement counts the agent key's reviews of the month, as /v1/me does.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(srv.url + '/dashboard');
    const statement = page.locator('h3:has-text("Operator statement") + .table-wrap table');
    // The last column of each key's row: its reviews of the month.
    expect((await statement.locator('thead th').last().innerText()).trim()).toBe('Reviews');
    const cells = await statement.locator('tbody tr', { hasText: 'payments-agent' }).locator('td').allInnerTexts();
    expect(
      cells
        .at(-1)!
        .replace(/\u00a0/g, ' ')
        .trim(),
    ).toBe('3 opened; 1 approved, 1 denied, 0 expired');
    const me = (await (await srv.fetch('/v1/me', { key: agent.secret })).json()).operator_checkout.reviews;
    expect(me).toMatchObject({ opened: 3, approved: 1, denied: 1, expired: 0 });
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      expect(await axeSerious(page)).toEqual([]);
      await screenshot(page, { path: join(SHOTS, `statement-reviews-${width}.png`), fullPage: true });
    }
  });
});
