/**
 * Pages written for the buyer, and the small items of issue 31 (items 7 and 8),
 * in headless Chromium against a real server: every layer page says what it
 * does for the reader and what it costs, with realistic examples and prices in
 * words; /stack and /pricing speak to whoever pays; the landing and /v1/me
 * agree on the monthly floor; Diligence is out of the top navigation; /docs is
 * grouped; /reference keeps its space; the landing's terminal snippet defines
 * $BASE; demo cards do not clip receipt ids at 390 and 1280 px; a path with
 * dot segments is a JSON 404. Screenshots of each page at both widths.
 */
import { mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA } from '../src/catalog/catalogs.ts';
import { OUT, axeSerious, screenshot } from './support/axe.ts';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let srv: TestServer;
let browser: Browser;
const SHOTS = join(OUT, 'buyer');

beforeAll(async () => {
  srv = await startTestServer();
  ({ browser } = await launchChromium());
  mkdirSync(SHOTS, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
});

async function open(path: string, width = 1280): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  const res = await page.goto(srv.url + path);
  expect(res?.status(), path).toBe(200);
  return page;
}

async function shoot(page: Page, name: string, fullPage = true): Promise<void> {
  await screenshot(page, { path: join(SHOTS, `${name}-1280.png`), fullPage });
  await page.setViewportSize({ width: 390, height: 844 });
  expect(
    await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth),
    `${name} scrolls sideways at 390`,
  ).toBeLessThanOrEqual(0);
  await screenshot(page, { path: join(SHOTS, `${name}-390.png`), fullPage });
}

const LAYER_PAGES = [...DATA.stack.layers.map((l) => l.path), ...DATA.foundry.layers.map((l) => l.path)];

describe('layer pages for the buyer', { timeout: 180_000 }, () => {
  it('say what the layer does for you and what it costs, with realistic examples and prices in words', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    for (const path of LAYER_PAGES) {
      expect((await page.goto(srv.url + path))?.status(), path).toBe(200);
      const h2 = await page.locator('h2').allInnerTexts();
      expect(h2, path).toContain('What it does for you');
      expect(h2, path).toContain('What it costs you');
      const cost = await page.locator('p.cost').innerText();
      expect(cost, path).toMatch(/\d+\.\d\d USD|\d+(\.\d+)? bps|adds no charge/);
      const examples = (await page.locator('article.endpoint pre').allInnerTexts()).join('\n');
      expect(examples, path).not.toMatch(/"string"|\{\}|-9007199254740991|"https:\/\/example\.com\/"|_…"|"example_id"/);
      // Every endpoint shows a response: from its schema, or recorded from a real call (scripts/record-examples.ts).
      const withoutResponse = await page
        .locator('article.endpoint')
        .evaluateAll((as) =>
          as.filter((a) => !/Response \d{3}/.test(a.textContent ?? '')).map((a) => a.querySelector('h3')!.textContent!.trim()),
        );
      expect(
        withoutResponse.filter((h) => !/^POST .*(reasoning-seal|\/retry)$|openings$/.test(h)),
        path,
      ).toEqual([]);
      const items = await page.locator('#prices ~ .table-wrap tbody tr td:first-child').allInnerTexts();
      for (const item of items) {
        expect(item, `${path} price label`).not.toMatch(/: (price|usd)\b|^[a-z]+(_[a-z0-9]+)+$|^toll [a-z_]+/);
      }
    }
    await page.close();
    const clear = await open('/stack/clear');
    expect(await clear.locator('article.endpoint pre').first().innerText()).toMatch(/"fuse_id": "fuse_[A-Za-z0-9]{22}"/);
    await shoot(clear, 'stack-clear');
    await clear.close();
  });

  it('/stack speaks of what you pay, not of revenue', async () => {
    const page = await open('/stack');
    const text = await page.locator('main').innerText();
    expect(text).not.toMatch(/Revenue is the sum of the layer meters/);
    expect(text).toMatch(/You pay only for the layers you use/);
    await shoot(page, 'stack', false);
    await page.close();
  });
});

describe('pricing and the floor', { timeout: 120_000 }, () => {
  it('/pricing says which fee applies to whom, with one worked month', async () => {
    const page = await open('/pricing');
    const who = await page.locator('#who-pays').locator('..').innerText();
    expect(who).toMatch(/Which fee applies to whom/);
    expect(who).toMatch(/You, if your agents use the gate/);
    expect(who).toMatch(/Everyone else pays nothing/);
    const rows = await page.locator('table[aria-label], .table-wrap[aria-label="Worked monthly example"] tbody tr').allInnerTexts();
    const month = rows.join('\n');
    // 3000 x 0.10 + 200 x 0.50 + 250,000 USD at 2 bps; the checkout is covered by the tolls.
    expect(month).toMatch(/Permitted hops\s+3,000 × 0\.10 USD\s+300\.00 USD/);
    expect(month).toMatch(/Refused hops\s+200 × 0\.50 USD\s+100\.00 USD/);
    expect(month).toMatch(/Cleared-payment fee.*50\.00 USD/);
    expect(month).toMatch(/Operator checkout.*0\.00 USD/);
    expect(month).toMatch(/The month\s+450\.00 USD/);
    // Tolls are named in words, the SKU beside them.
    const tolls = await page.locator('#tolls ~ .table-wrap tbody tr').first().innerText();
    expect(tolls).not.toMatch(/\tClear\t|\tFoundry\t/);
    expect(await axeSerious(page)).toEqual([]);
    await shoot(page, 'pricing');
    await page.close();
  });

  it('the landing and GET /v1/me agree on the 0.10 USD monthly floor; the terminal snippet defines $BASE', async () => {
    const key = (await srv.newKey('floor')).secret;
    const me = await (await srv.fetch('/v1/me', { key })).json();
    const floor = me.usage?.operator_checkout?.floor_usd ?? me.operator_checkout?.floor_usd;
    expect(floor).toBe('0.10');
    const page = await open('/');
    const costs = await page.locator('.grid3 > div', { hasText: 'What it costs' }).innerText();
    expect(costs).toContain('No subscription');
    expect(costs).toContain(`${floor} USD monthly floor`);
    const snippet = await page.locator('pre.terminal').innerText();
    expect(snippet.split('\n')[0]).toBe(`BASE=${srv.ctx.config.BASE_URL}`);
    expect(snippet).toContain('$BASE/demo/hop');
    await page.close();
  });
});

describe('navigation, docs and reference', { timeout: 120_000 }, () => {
  it('Diligence is out of the top navigation and still reachable from the landing', async () => {
    const page = await open('/');
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link', { name: 'Diligence', exact: true }).count()).toBe(0);
    expect(await nav.getByRole('link', { name: 'Pricing', exact: true }).count()).toBe(1);
    expect(await page.locator('main a[href="/diligence"]').count()).toBe(1);
    await page.close();
  });

  it('/docs lists user docs apart from engineering docs', async () => {
    const page = await open('/docs');
    expect(await page.locator('main h2').allInnerTexts()).toEqual(['Using Fuse Gate', 'Running it, and its internals']);
    const under = async (id: string) =>
      page
        .locator(`#${id} ~ ul`)
        .first()
        .locator('a')
        .evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    const users = await under('users');
    const engineers = await under('engineers');
    expect(users).toContain('/docs/alerts');
    expect(users).toContain('/docs/pricing');
    expect(engineers).toContain('/docs/pipeline');
    expect(engineers).toContain('/docs/tests-and-benchmarks');
    expect(users.filter((u) => engineers.includes(u))).toEqual([]);
    await shoot(page, 'docs');
    await page.close();
  });

  it('/reference renders "errors are application/problem+json" with its space', async () => {
    const page = await open('/reference');
    expect(await page.locator('p.lede').innerText()).toMatch(/errors are application\/problem\+json/i);
    await page.close();
  });
});

describe('small items', { timeout: 120_000 }, () => {
  it('demo cards show whole receipt ids at 1280 and 390 px', async () => {
    for (const width of [1280, 390]) {
      const page = await open('/', width);
      await page.click('#demo-run');
      await page.waitForSelector('[data-fuse="fuse_drill_dead"][data-state]');
      await page.waitForSelector('[data-fuse="fuse_drill_live"][data-state]');
      const clipped = await page.evaluate(() =>
        [...document.querySelectorAll('.demo-facts dd')]
          .filter((dd) => {
            const panel = dd.closest('.panel')!.getBoundingClientRect();
            const r = dd.getBoundingClientRect();
            return dd.scrollWidth > dd.clientWidth + 1 || r.right > panel.right + 1;
          })
          .map((dd) => dd.textContent),
      );
      expect(clipped, `${width} px`).toEqual([]);
      const ids = await page.locator('.demo-facts dd').allInnerTexts();
      expect(ids.filter((t) => /^rcpt_/.test(t.replace(/\s/g, '')))).toHaveLength(2);
      await page.locator('#demo').screenshot({ path: join(SHOTS, `demo-${width}.png`) });
      await page.close();
    }
  });

  it('a path with dot segments is a JSON 404 problem, not the page it folds onto', async () => {
    const u = new URL(srv.url);
    const raw = (path: string) =>
      new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
        const r = request({ host: u.hostname, port: u.port, path, headers: { accept: 'text/html' } }, (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
        });
        r.on('error', reject);
        r.end();
      });
    for (const path of ['/go/%2e%2e/%2e%2e', '/go/%2E%2e', '/go/../..', '/./pricing']) {
      const r = await raw(path);
      expect(r.status, path).toBe(404);
      expect(r.type, path).toMatch(/application\/problem\+json/);
      expect(JSON.parse(r.body).code).toBe('route_not_found');
    }
    expect((await raw('/pricing')).status).toBe(200);
  });
});
