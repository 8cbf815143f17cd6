/**
 * Finding a log entry (issue 31 item 5): GET /api/v1/logs/{log}/search by
 * receipt id, index, leaf hash (hex and base64) and fuse id on a real server,
 * bad input refused as a problem; and /logs in headless Chromium finding the
 * same entries (typed, and from a ?q= link), at 1280 and 390 px.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUT, axeSerious, screenshot } from './support/axe.ts';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let srv: TestServer;
let browser: Browser;
let fuseId = '';
const hops: Array<{ receipt_id: string; decision: string }> = [];

const leafHashOf = (leafB64: string) =>
  createHash('sha256')
    .update(Buffer.concat([Buffer.from([0]), Buffer.from(leafB64, 'base64')]))
    .digest();

beforeAll(async () => {
  srv = await startTestServer();
  ({ browser } = await launchChromium());
  mkdirSync(OUT, { recursive: true });
  const key = (await srv.newKey('search')).secret;
  fuseId = (await (await srv.fetch('/v1/fuses', { key, json: { label: 'searched' } })).json()).fuse_id;
  for (let i = 0; i < 3; i++) await srv.fetch('/demo/hop', { json: { fuse_id: 'fuse_drill_dead' } });
  for (let i = 0; i < 2; i++) hops.push(await (await srv.fetch('/v1/fuse/hop', { key, json: { fuse_id: fuseId } })).json());
  await srv.fetch(`/v1/fuses/${fuseId}/dead`, { key, method: 'POST' });
  hops.push(await (await srv.fetch('/v1/fuse/hop', { key, json: { fuse_id: fuseId } })).json());
  for (let i = 0; i < 3; i++) await srv.fetch('/demo/hop', { json: { fuse_id: 'fuse_drill_live' } });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
});

const search = async (q: string, extra = '') => srv.fetch(`/api/v1/logs/receipts/search?q=${encodeURIComponent(q)}${extra}`);

describe('GET /api/v1/logs/{log}/search', () => {
  it('finds an entry by receipt id, by index and by its leaf hash in hex or base64', async () => {
    const target = hops[1]!;
    const byId = await (await search(target.receipt_id)).json();
    expect(byId).toMatchObject({ log: 'receipts', by: 'receipt_id', complete: true });
    expect(byId.entries).toHaveLength(1);
    const hit = byId.entries[0];
    expect(hit.payload).toMatchObject({ receipt_id: target.receipt_id, subject: fuseId });
    expect(hit.leaf_hash).toBe(leafHashOf(hit.leaf).toString('base64'));

    const byIndex = await (await search(String(hit.index))).json();
    expect(byIndex.by).toBe('index');
    expect(byIndex.entries.map((e: { leaf: string }) => e.leaf)).toEqual([hit.leaf]);

    const hex = leafHashOf(hit.leaf).toString('hex');
    for (const q of [hex, hex.toUpperCase(), hit.leaf_hash]) {
      const r = await (await search(q)).json();
      expect(r.by).toBe('leaf_hash');
      expect(r.entries.map((e: { index: number }) => e.index)).toEqual([hit.index]);
    }
  });

  it("finds a fuse's entries, newest first, and says what it searched", async () => {
    const r = await (await search(fuseId)).json();
    expect(r.by).toBe('fuse_id');
    // Created, two hops, blown, one denied hop: five receipts name the fuse.
    expect(r.entries.map((e: { payload: { kind: string } }) => e.payload.kind)).toEqual(['hop', 'fuse_dead', 'hop', 'hop', 'fuse_create']);
    expect(r.entries[0].payload.receipt_id).toBe(hops[2]!.receipt_id);
    expect(r.searched).toEqual({ from: 0, to: r.tree_size });
    expect(r.complete).toBe(true);
    const drills = await (await search('fuse_drill_dead')).json();
    expect(drills.entries).toHaveLength(3);
  });

  it('finds a receipt by the start of its id, and entries by key id, decision and time', async () => {
    const target = hops[1]!;
    const start = target.receipt_id.slice(0, -6);
    const byStart = await (await search(start)).json();
    expect(byStart.by).toBe('receipt_id');
    expect(byStart.entries.map((e: { payload: { receipt_id: string } }) => e.payload.receipt_id)).toEqual([target.receipt_id]);
    // A start that stops inside the index is matched by scanning: it finds the receipt among others.
    const short = await (await search(target.receipt_id.slice(0, 6))).json();
    expect(short.entries.map((e: { payload: { receipt_id: string } }) => e.payload.receipt_id)).toContain(target.receipt_id);
    // The start of the id with a wrong random part finds nothing.
    expect((await (await search(`${target.receipt_id.split('_').slice(0, 2).join('_')}_zzzz`)).json()).entries).toEqual([]);

    const keyId = (await (await search(target.receipt_id)).json()).entries[0].payload.key_id as string;
    const byKey = await (await search(keyId)).json();
    expect(byKey.by).toBe('key_id');
    // Its fuse made, two hops, the blow, the refused hop: five receipts, all of that key.
    expect(byKey.entries.map((e: { payload: { kind: string } }) => e.payload.kind)).toEqual([
      'hop',
      'fuse_dead',
      'hop',
      'hop',
      'fuse_create',
    ]);

    const denied = await (await search('deny')).json();
    expect(denied.by).toBe('decision');
    expect(denied.entries.length).toBeGreaterThanOrEqual(4);
    expect(denied.entries.every((e: { payload: { decision: string } }) => e.payload.decision === 'DENY')).toBe(true);
    expect(denied.entries.map((e: { payload: { receipt_id: string } }) => e.payload.receipt_id)).toContain(hops[2]!.receipt_id);

    const appended = byKey.entries[0].created_at as string;
    const byMinute = await (await search(appended.slice(0, 16))).json();
    expect(byMinute.by).toBe('time');
    expect(byMinute.entries.map((e: { index: number }) => e.index)).toContain(byKey.entries[0].index);
    expect(byMinute.entries.every((e: { created_at: string }) => e.created_at.startsWith(appended.slice(0, 16)))).toBe(true);
    expect((await (await search('2001-01-01')).json()).entries).toEqual([]);
  });

  it('answers no match as an empty list, and bad input as a problem naming it', async () => {
    expect((await (await search('rcpt_doesnotexist')).json()).entries).toEqual([]);
    expect((await (await search('999999')).json()).entries).toEqual([]);
    expect((await (await search('0'.repeat(64))).json()).entries).toEqual([]);
    for (const [q, status] of [
      ['', 400],
      ['not a thing!', 400],
    ] as const) {
      const res = await search(q);
      expect(res.status, q).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect((await res.json()).detail).toMatch(/q /);
    }
    const forced = await search('abc', '&by=index');
    expect(forced.status).toBe(400);
    expect((await srv.fetch('/api/v1/logs/nolog/search?q=1')).status).toBe(404);
  });
});

describe('/logs search in Chromium', { timeout: 120_000 }, () => {
  async function open(page: Page, path: string) {
    await page.goto(srv.url + path);
    await page.waitForSelector('body[data-explorer="ready"]');
  }

  it('finds an entry by a typed receipt id, and a fuse from a ?q= link, at 1280 and 390 px', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await open(page, '/logs');
    await page.getByLabel(/Receipt id \(or its start\)/).fill(hops[0]!.receipt_id);
    await page.getByRole('button', { name: 'Find' }).click();
    await page.waitForSelector('#search-status[data-state="found"]');
    const rows = await page.locator('#search-results tr').allInnerTexts();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain(fuseId);
    expect(page.url()).toContain(`q=${hops[0]!.receipt_id}`);
    // Its inclusion is proven in the browser from the result row.
    await page.locator('#search-results button').first().click();
    await page.waitForSelector('#inclusion-result[data-state="ok"]');

    await open(page, `/logs?q=${fuseId}`);
    await page.waitForSelector('#search-status[data-state="found"]');
    expect(await page.locator('#search-results tr').count()).toBe(5);
    expect(await axeSerious(page)).toEqual([]);
    await page.locator('#search-h').scrollIntoViewIfNeeded();
    await screenshot(page, { path: join(OUT, 'logs-search-1280.png') });

    await page.setViewportSize({ width: 390, height: 844 });
    await open(page, `/logs?q=${fuseId}`);
    await page.waitForSelector('#search-status[data-state="found"]');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.locator('#search-h').scrollIntoViewIfNeeded();
    await screenshot(page, { path: join(OUT, 'logs-search-390.png') });
    await page.emulateMedia({ colorScheme: 'dark' });
    await screenshot(page, { path: join(OUT, 'logs-search-390-dark.png') });
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.locator('#search-h').scrollIntoViewIfNeeded();
    await screenshot(page, { path: join(OUT, 'logs-search-1280-dark.png') });
    await page.emulateMedia({ colorScheme: 'light' });

    // An index beyond the log after a found entry: the old result is gone and the answer says the range.
    await page.getByLabel(/Receipt id \(or its start\)/).fill('999999');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.waitForSelector('#search-status[data-state="none"]');
    expect(await page.locator('#search-wrap').isHidden()).toBe(true);
    expect(await page.textContent('#search-status')).toMatch(/^No entry 999999: the receipts log holds entries 0 to \d+\.$/);
    // The same in the inclusion form: a proven entry's verdict does not stay up beside an index out of range.
    await page.locator('#inclusion-index').fill('0');
    await page.getByRole('button', { name: 'Prove inclusion in this browser' }).click();
    await page.waitForSelector('#inclusion-result[data-state="ok"]');
    await page.locator('#inclusion-index').fill('999999');
    expect(await page.locator('#inclusion-result').isHidden()).toBe(true);
    await page.getByRole('button', { name: 'Prove inclusion in this browser' }).click();
    await page.waitForSelector('#inclusion-result[data-state="failed"]');
    expect(await page.textContent('#inclusion-result')).toMatch(/index 999999 is not in the tree of size/);
    // Tap targets: every button and verify link of the page is at least 44 px high.
    const small = await page.evaluate(() =>
      [...document.querySelectorAll('main button, main td a, #log-tabs a')]
        .filter((el) => (el as HTMLElement).offsetParent && el.getBoundingClientRect().height < 44)
        .map((el) => el.outerHTML.slice(0, 80)),
    );
    expect(small).toEqual([]);

    await open(page, '/logs?q=rcpt_nothing_here');
    await page.waitForSelector('#search-status[data-state="none"]');
    expect(await page.textContent('#search-status')).toMatch(/No entry of the receipts log matches this receipt id/);
    await page.close();
  });
});
