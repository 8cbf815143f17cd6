/**
 * The pages that check the service in the visitor's browser, driven in
 * headless Chromium against a real server: /verify proves a real receipt (by
 * JWS, by id, and a pre-finality JWT) and refuses a tampered one; the log
 * explorer's consistency check passes for a real pair of checkpoints and fails
 * for a forged one; the landing page's live demo; the 404 page for browsers.
 * Each check is computed in the page by the crypto core bundled with it, not by the server.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealNow } from '../src/api/site/clearing.ts';
import { OUT, axeSerious, screenshot } from './support/axe.ts';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { verifyIn } from './support/verify-page.ts';

let srv: TestServer;
let browser: Browser;
let key: string;
let receipt: { id: string; jws: string };

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

beforeAll(async () => {
  srv = await startTestServer();
  ({ browser } = await launchChromium());
  mkdirSync(OUT, { recursive: true });
  key = (await srv.newKey('trust')).secret;
  const fuse = await (await srv.fetch('/v1/fuses', { key, json: { label: 'browser test' } })).json();
  for (let i = 0; i < 4; i++) await srv.fetch('/demo/hop', { json: { fuse_id: 'fuse_drill_dead' } });
  // A hop's receipt is batch-sealed (no per-receipt JWS); an execute-gate receipt is a token the caller holds.
  const hop = await (await srv.fetch('/v1/fuse/hop', { key, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay' } } })).json();
  const gate = await (await srv.fetch('/api/v1/execute-gate', { key, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay' } } })).json();
  expect(typeof gate.receipt).toBe('string');
  receipt = { id: hop.receipt_id, jws: gate.receipt };
  for (let i = 0; i < 3; i++) await srv.fetch('/demo/hop', { json: { fuse_id: 'fuse_drill_live' } });
});
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
});

describe('/verify in Chromium', () => {
  it('proves a real receipt pasted as a JWS: signature, signed checkpoint, inclusion, leaf', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const r = await verifyIn(page, srv.url, receipt.jws);
    expect(r.state).toBe('proven');
    expect(r.summary).toMatch(/^Proven: Fuse Gate signed this receipt \(\w+ PERMIT/);
    expect(r.rows.map((x) => x.split('\t')[0])).toEqual([
      'Receipt signature',
      'Signed checkpoint',
      'Inclusion',
      'Leaf and payload',
      'Live or test',
    ]);
    expect(r.rows.every((x) => x.includes('✓ holds'))).toBe(true);
    expect(await axeSerious(page)).toEqual([]);
    await screenshot(page, { path: join(OUT, 'verify-proven.png'), fullPage: true });
    await page.close();
  });

  it('proves a batch-sealed receipt given by id (the link the live demo and the explorer use)', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 900 } });
    await page.goto(`${srv.url}/verify?id=${receipt.id}`);
    await page.waitForSelector('#verify-result[data-state="proven"]');
    expect(await page.locator('#verify-summary').innerText()).toContain('Proven');
    const rows = await page.locator('#verify-findings tr').allInnerTexts();
    expect(rows.find((x) => x.startsWith('Inclusion'))).toContain('✓ holds');
    expect(rows.every((x) => x.includes('✓ holds'))).toBe(true);
    await page.close();
  });

  it('refuses a tampered receipt: a changed decision breaks the signature', async () => {
    const [h, p, s] = receipt.jws.split('.') as [string, string, string];
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const forged = `${h}.${b64url({ ...payload, decision: 'BLOCK' })}.${s}`;
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const r = await verifyIn(page, srv.url, forged);
    expect(r.state).toBe('refused');
    expect(r.summary).toMatch(/^Not proven: receipt signature: the signature does not verify/);
    // A flipped signature byte is refused as well.
    const flipped = `${h}.${p}.${s.startsWith('A') ? 'B' : 'A'}${s.slice(1)}`;
    expect((await verifyIn(page, srv.url, flipped)).state).toBe('refused');
    // Input that is neither a token nor a receipt id says what to paste.
    expect((await verifyIn(page, srv.url, 'hello')).summary).toContain('paste a receipt');
    expect((await verifyIn(page, srv.url, 'rcpt_doesnotexist')).summary).toContain('no receipt rcpt_doesnotexist');
    await page.close();
  });

  it('refuses a batch-sealed receipt whose evidence was changed on the way: payload, checkpoint JWS', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    let change: (ev: Record<string, any>) => void = () => {};
    await page.route(`**/v1/receipts/${receipt.id}`, async (route) => {
      const ev = await (await route.fetch()).json();
      change(ev);
      await route.fulfill({ json: ev });
    });
    const verdict = async () => {
      await page.goto(`${srv.url}/verify?id=${receipt.id}`);
      await page.waitForSelector('#verify-result[data-state="proven"], #verify-result[data-state="refused"]');
      return { state: await page.getAttribute('#verify-result', 'data-state'), summary: await page.locator('#verify-summary').innerText() };
    };
    expect((await verdict()).state).toBe('proven');
    change = (ev) => {
      ev.payload.decision = 'DENY';
    };
    expect(await verdict()).toEqual({
      state: 'refused',
      summary: expect.stringMatching(/^Not proven: leaf and payload: the logged leaf does not carry the payload shown/),
    });
    change = (ev) => {
      const [h, p, s] = String(ev.checkpoint_jws).split('.');
      ev.checkpoint_jws = `${h}.${p}.${s!.startsWith('A') ? 'B' : 'A'}${s!.slice(1)}`;
    };
    expect(await verdict()).toEqual({
      state: 'refused',
      summary: expect.stringMatching(/^Not proven: signed checkpoint: the signature does not verify/),
    });
    await page.close();
  });

  it('proves a pre-finality JWT against the published JWKS and its receipt in the log', async () => {
    const transfer = {
      amount: '125.00',
      currency: 'USD',
      account_number: '000123456789',
      routing_number: '021000021',
      counterparty: 'ACME Supplies LLC',
    };
    const demo = await (await srv.fetch('/demo/prefinality/evaluate', { json: { rail: 'rtp', transfer } })).json();
    expect(typeof demo.receipt_jwt).toBe('string');
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const r = await verifyIn(page, srv.url, demo.receipt_jwt);
    expect(r.rows[0]).toContain('Pre-finality signature');
    expect(r.rows.find((x) => x.startsWith('Inclusion'))).toContain('✓ holds');
    expect(r.state).toBe('proven');
    const [h, p, s] = String(demo.receipt_jwt).split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    expect((await verifyIn(page, srv.url, `${h}.${b64url({ ...claims, decision: 'GO', exp: claims.exp + 86_400 })}.${s}`)).state).toBe(
      'refused',
    );
    await page.close();
  });
});

describe('/logs in Chromium', () => {
  async function explorer(page: Page, log = 'receipts') {
    await page.goto(`${srv.url}/logs?log=${log}`);
    await page.waitForSelector('body[data-explorer="ready"]');
  }

  it('verifies the signed checkpoint, lists the newest entries and proves an inclusion in the browser', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await explorer(page);
    const size = (await (await srv.fetch('/api/v1/logs/receipts')).json()).tree_size as number;
    expect(await page.locator('#tree-size').innerText()).toBe(String(size));
    expect(await page.locator('#cp-status').innerText()).toContain('✓ verified in this browser');
    expect(await page.locator('#entries tr').count()).toBe(Math.min(20, size));
    expect(await page.locator('#entries tr').first().locator('td').first().innerText()).toBe(String(size - 1));
    expect(await page.locator('#growth svg[role="img"]').count()).toBe(1);
    await page.locator('#entries tr').nth(3).getByRole('button').click();
    await page.waitForSelector('#inclusion-result[data-state]');
    expect(await page.getAttribute('#inclusion-result', 'data-state')).toBe('ok');
    expect(await page.locator('#inclusion-result').innerText()).toContain(`Entry ${size - 4}`);
    expect(await axeSerious(page)).toEqual([]);
    await page.close();
  });

  it('checks consistency between two real checkpoints in the browser, and fails a forged one', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await explorer(page);
    const older = await page.inputValue('#cp-old');
    const newer = await page.inputValue('#cp-new');
    expect(older.split('\n')[1]).not.toBe(newer.split('\n')[1]);
    const check = async () => {
      await page.evaluate(() => document.getElementById('consistency-result')!.removeAttribute('data-state'));
      await page.getByRole('button', { name: 'Check consistency in this browser' }).click();
      await page.waitForSelector('#consistency-result[data-state]');
      return {
        state: await page.getAttribute('#consistency-result', 'data-state'),
        text: await page.locator('#consistency-result').innerText(),
      };
    };
    const ok = await check();
    expect(ok.state, ok.text).toBe('ok');
    expect(ok.text).toContain('✓ Consistent');

    // The same older checkpoint with another root: its signature no longer holds.
    const lines = older.split('\n');
    lines[2] = Buffer.alloc(32, 7).toString('base64');
    await page.fill('#cp-old', lines.join('\n'));
    const forged = await check();
    expect(forged.state).toBe('failed');
    expect(forged.text).toContain('older checkpoint: the note signature does not verify');

    // A genuine checkpoint of another log is not a checkpoint of this one.
    await page.fill('#cp-old', await (await srv.fetch('/api/v1/logs/astl/checkpoint')).text());
    expect((await check()).state).toBe('failed');
    await page.close();
  });

  it('remembers the last checkpoint it saw and compares the next visit with it', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await explorer(page);
    const first = await page.inputValue('#cp-new');
    await srv.fetch('/demo/hop', { json: { fuse_id: 'fuse_drill_live' } });
    await explorer(page);
    expect(await page.inputValue('#cp-old')).toBe(first);
    await page.getByRole('button', { name: 'Check consistency in this browser' }).click();
    await page.waitForSelector('#consistency-result[data-state]');
    expect(await page.getAttribute('#consistency-result', 'data-state')).toBe('ok');
    await context.close();
  });
});

describe('landing demo and 404 in Chromium', () => {
  it('runs the keyless demo on the LIVE and DEAD drill fuses side by side, with links to the receipts', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(srv.url + '/');
    await page.getByRole('button', { name: 'Run both hops' }).click();
    await page.waitForSelector('[data-fuse="fuse_drill_dead"][data-state]');
    await page.waitForSelector('[data-fuse="fuse_drill_live"][data-state]');
    expect(await page.getAttribute('[data-fuse="fuse_drill_live"]', 'data-state')).toBe('go');
    expect(await page.getAttribute('[data-fuse="fuse_drill_dead"]', 'data-state')).toBe('refused');
    const link = page.locator('[data-fuse="fuse_drill_dead"] a', { hasText: 'Verify this receipt' });
    await link.click();
    await page.waitForSelector('#verify-result[data-state="proven"]');
    expect(await page.locator('#verify-summary').innerText()).toContain('hop DENY');
    await page.close();
  });

  it('shows the clearing checkpoint current at view time on the clearing layer page, not the one of the build', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(srv.url + '/stack/clearing');
    await page.waitForSelector('[data-live="clearing"][data-state="loaded"]');
    const before = await page.locator('[data-live="clearing"]').innerText();
    const { attestation } = await sealNow(srv.ctx.ledger);
    await page.reload();
    await page.waitForSelector('[data-live="clearing"][data-state="loaded"]');
    const after = await page.locator('[data-live="clearing"]').innerText();
    expect(before).not.toContain(attestation.checkpoint_id);
    expect(after).toContain(attestation.checkpoint_id);
    expect(after).toContain(`${attestation.total_usd} USD`);
    await page.close();
  });

  it('answers an unknown path with the HTML 404 page for a browser and problem+json for everyone else', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const res = await page.goto(srv.url + '/no/such/page');
    expect(res!.status()).toBe(404);
    expect(await page.locator('h1').innerText()).toBe('Page not found');
    expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Get started' }).count()).toBe(1);
    expect(await axeSerious(page)).toEqual([]);
    await page.close();
    const api = await srv.fetch('/no/such/page', { headers: { accept: 'application/json' } });
    expect(api.status).toBe(404);
    expect(api.headers.get('content-type')).toContain('application/problem+json');
    expect((await api.json()).code).toBe('route_not_found');
    const plain = await srv.fetch('/no/such/page');
    expect(plain.headers.get('content-type')).toContain('application/problem+json');
  });

  it('gives the server-rendered pages the site header and footer', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 900 } });
    for (const path of [`/v1/receipts/${receipt.id}`, '/signal/trigger-oracle']) {
      await page.goto(srv.url + path);
      // At 390 px the main navigation is folded into the header's menu.
      await page.click('header .menu summary');
      expect(
        await page.getByRole('navigation', { name: 'Main menu' }).getByRole('link', { name: 'Verify', exact: true }).count(),
        path,
      ).toBe(1);
      expect(await page.getByRole('navigation', { name: 'Stack layers' }).count(), path).toBe(1);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, path).toBeLessThanOrEqual(0);
      expect(await axeSerious(page), path).toEqual([]);
    }
    await page.close();
  });
});
