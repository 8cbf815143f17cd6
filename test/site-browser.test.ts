/**
 * Headless Chromium (found by test/support/browser.ts, driven by playwright-core)
 * against a real server: every landing page has its heading and the
 * navigation, axe-core finds no serious or critical violation, and the stack
 * and foundry pages are saved as screenshots under test-output/.
 * No browser found fails this test with what to do; it is never skipped.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUT, screenshot } from './support/axe.ts';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const AXE = readFileSync(join(process.cwd(), 'node_modules/axe-core/axe.min.js'), 'utf8');

// Page path -> its h1, by hand from SPEC 4.1 / 2.4 / 2.5 and our page titles.
const GATE_PAGES = [
  '/afterward',
  '/bind-room',
  '/bound',
  '/capture',
  '/diligence',
  '/floor',
  '/inhabitant',
  '/only',
  '/operator',
  '/register',
  '/scanner',
  '/this',
  '/uplink',
];
const LAYER_PAGES = ['relay', 'clear', 'nap', 'clearing', 'signal', 'orn', 'absence', 'pdtr', 'require-receipt', 'issuer-pays', 'astl'].map(
  (l) => `/stack/${l}`,
);
const FOUNDRY_PAGES = [
  'physics',
  'print',
  'obligation',
  'oracle',
  'trigger',
  'conformity',
  'depository',
  'settlement',
  'clearing',
  'stack',
].map((l) => `/foundry/${l}`);
// The docs index and the two docs with the widest tables and most code (docs/*.md rendered).
const DOC_PAGES = ['/docs', '/docs/what-runs', '/docs/companion-metered-apis'];
const PAGES = [
  '/',
  '/start',
  '/stack',
  '/foundry',
  '/pricing',
  '/logs',
  '/verify',
  '/reference',
  ...GATE_PAGES,
  ...LAYER_PAGES,
  ...FOUNDRY_PAGES,
  ...DOC_PAGES,
];
// The only pages that ship JavaScript: the live demo, the explorer, the verifier, and live values on layer pages.
const SCRIPTED = new Set([
  '/',
  '/start',
  '/reference',
  '/logs',
  '/verify',
  '/stack/clearing',
  '/stack/signal',
  '/foundry/clearing',
  '/foundry/settlement',
]);

let srv: TestServer;
let browser: Browser;

beforeAll(async () => {
  ({ browser } = await launchChromium());
  srv = await startTestServer();
  mkdirSync(join(OUT, 'pages'), { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
});

async function axeSerious(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE });
  const violations = await page.evaluate(async () => {
    const r = await (globalThis as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help }));
  });
  return (violations as { id: string; impact: string; nodes: number; help: string }[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}, ${v.nodes} nodes): ${v.help}`);
}

describe('landing pages in Chromium', () => {
  for (const path of PAGES) {
    it(
      `${path} has one heading, the main navigation, no serious axe violation, ${SCRIPTED.has(path) ? 'its script' : 'no script'}, and fits 1280 and 390 px`,
      { timeout: 90_000 },
      async () => {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        try {
          const res = await page.goto(srv.url + path, { waitUntil: 'networkidle' });
          expect(res?.status(), path).toBe(200);
          if (path === '/logs') await page.waitForSelector('body[data-explorer="ready"]');
          const h1 = page.locator('h1');
          expect(await h1.count()).toBe(1);
          expect((await h1.innerText()).trim().length).toBeGreaterThan(0);
          const nav = page.getByRole('navigation', { name: 'Main' });
          for (const label of ['Home', 'Stack', 'Foundry', 'Pricing']) {
            expect(await nav.getByRole('link', { name: label, exact: true }).count(), `nav ${label}`).toBe(1);
          }
          // The diligence offer is a gate page (listed on the landing), not a step of a buyer's path (issue 31).
          expect(await nav.getByRole('link', { name: 'Diligence', exact: true }).count(), 'nav Diligence').toBe(0);
          const scripts = await page.locator('script').count();
          if (SCRIPTED.has(path)) expect(scripts, 'its script').toBeGreaterThan(0);
          else expect(scripts, 'ships client JS').toBe(0);
          expect(await axeSerious(page)).toEqual([]);
          const name = path === '/' ? 'home' : path.slice(1).replace(/\//g, '-');
          await screenshot(page, { path: join(OUT, 'pages', `${name}-1280.jpg`), fullPage: true, type: 'jpeg', quality: 70 });
          await page.setViewportSize({ width: 390, height: 844 });
          const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
          expect(overflow, `${path} scrolls sideways at 390 px`).toBeLessThanOrEqual(0);
          await screenshot(page, { path: join(OUT, 'pages', `${name}-390.jpg`), fullPage: true, type: 'jpeg', quality: 70 });
        } finally {
          await page.close();
        }
      },
    );
  }

  it('the API reference shows every operation of the OpenAPI description with an example request', async () => {
    const doc = (await (await fetch(srv.url + '/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    try {
      await page.goto(srv.url + '/reference');
      // The index lists every operation, each a link to its area's page.
      const listed = (await page.locator('li[data-search] a code').allInnerTexts()).map((h) => h.trim());
      expect(listed.sort()).toEqual([...operations].sort());
      // The search box keeps only the operations that hold every word typed.
      await page.fill('#op-search', 'keys surface');
      expect((await page.locator('li[data-search]:visible a code').allInnerTexts()).map((h) => h.trim())).toEqual([
        'POST /v1/keys/{key_id}/surface',
      ]);
      expect(await page.textContent('#op-search-status')).toBe(`1 of ${operations.length} operations match`);
      await page.fill('#op-search', '');
      expect(await page.locator('li[data-search]:visible').count()).toBe(operations.length);
      // An operation's link leads to its article on its area's page, with an example request.
      await Promise.all([
        page.waitForURL(/\/reference\/gate#post-v1-fuse-hop$/),
        page.click('li[data-search] a:has-text("POST /v1/fuse/hop")'),
      ]);
      const hop = page.locator('article', { has: page.locator('h2', { hasText: 'POST /v1/fuse/hop' }) });
      const curl = await hop.getByLabel('Example request for POST /v1/fuse/hop').innerText();
      expect(curl).toContain('Authorization: Bearer $KEY');
      expect(curl).toContain('"fuse_id"');
      // Every area's page together shows every operation once (the area nav links every other area).
      const shown = (await page.locator('article h2').allInnerTexts()).map((h) => h.trim());
      const others = await page
        .locator('nav[aria-label="Areas of the reference"] a')
        .evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).pathname));
      for (const href of others) {
        await page.goto(srv.url + href);
        shown.push(...(await page.locator('article h2').allInnerTexts()).map((h) => h.trim()));
      }
      expect(shown.sort()).toEqual([...operations].sort());
    } finally {
      await page.close();
    }
  });

  it('the stack page shows the eleven layers in order and the attach flow', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(srv.url + '/stack');
    const names = await page.locator('ol.cards > li h3').allInnerTexts();
    expect(names.map((n) => n.trim())).toEqual([
      '1. Relay',
      '2. Clear',
      '3. NAP',
      '4. Clearing',
      '5. Signal',
      '6. ORN',
      '7. Absence',
      '8. PDTR',
      '9. Require-receipt',
      '10. Issuer-pays',
      '11. ASTL',
    ]);
    expect(await page.locator('ol.flow > li').count()).toBe(11);
    await screenshot(page, { path: join(OUT, 'stack.png'), fullPage: true });
    await page.goto(srv.url + '/foundry');
    expect(await page.locator('ol.cards > li').count()).toBe(10);
    expect(await page.locator('ol.flow > li').count()).toBe(9);
    await screenshot(page, { path: join(OUT, 'foundry.png'), fullPage: true });
    await page.close();
  });

  it('the server-rendered pages (trigger-oracle, a receipt) render for a browser without a serious axe violation', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const res = await page.goto(srv.url + '/signal/trigger-oracle');
    expect(res!.headers()['content-type']).toContain('text/html');
    expect(await page.locator('h1').innerText()).toBe('How oracle readings drive trigger fires');
    expect(await page.locator('table').first().locator('tbody tr').count()).toBe(5);
    expect(await axeSerious(page)).toEqual([]);
    await screenshot(page, { path: join(OUT, 'trigger-oracle.png'), fullPage: true });
    const demo = await (
      await fetch(srv.url + '/demo/hop', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ fuse_id: 'fuse_drill_live' }),
      })
    ).json();
    await page.goto(new URL(demo.verify_url).pathname.replace(/^/, srv.url));
    expect(await page.locator('.verdict').innerText()).toContain('genuine');
    expect(await axeSerious(page)).toEqual([]);
    await page.close();
    // A client asking for JSON still gets the document.
    const json = await (await fetch(srv.url + '/signal/trigger-oracle', { headers: { accept: 'application/json' } })).json();
    expect(json.schema).toBe('fusegate-trigger-oracle-v1');
  });

  it('is readable on a phone: no horizontal scroll of the page', async () => {
    const page = await browser.newPage({ viewport: { width: 375, height: 740 }, isMobile: true });
    for (const path of ['/stack', '/foundry', '/pricing', '/stack/clear', '/docs/what-runs']) {
      await page.goto(srv.url + path);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, path).toBeLessThanOrEqual(0);
    }
    await page.goto(srv.url + '/pricing');
    await screenshot(page, { path: join(OUT, 'pricing-phone.png'), fullPage: true });
    await page.close();
  });
});
