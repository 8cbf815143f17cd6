/**
 * /verify in headless Chromium with witnesses: a pasted receipt document (the
 * base64url sent in Gate-Receipt) is proven as it is, the page names the
 * witnesses that cosigned and says the quorum holds, with the policy the
 * service publishes; a tampered cosignature is refused. WebCrypto, not the server.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeReceiptDocument, type ReceiptEvidenceDoc } from '../src/crypto/receipt.ts';
import { OUT, screenshot } from './support/axe.ts';
import { launchChromium } from './support/browser.ts';
import { untilCommitted } from './support/commits.ts';
import { startTestServer, tempDir, type TestServer } from './support/server.ts';
import { startTestWitness, type TestWitness } from './support/test-witness.ts';
import { verifyIn } from './support/verify-page.ts';

let srv: TestServer;
let browser: Browser;
let w1: TestWitness;
let w2: TestWitness;
let doc: ReceiptEvidenceDoc;

beforeAll(async () => {
  [w1, w2] = (await Promise.all(['w1.browser.test', 'w2.browser.test'].map((n) => startTestWitness(n, {})))) as [TestWitness, TestWitness];
  const dir = tempDir();
  writeFileSync(
    join(dir, 'policy'),
    `witness alpha ${w1.vkey} ${w1.url}\nwitness beta ${w2.vkey} ${w2.url}\ngroup both all alpha beta\nquorum both\n`,
  );
  srv = await startTestServer({ WITNESS_POLICY: join(dir, 'policy'), WITNESS_INTERVAL_MS: '100' }, dir);
  for (const l of (await (await srv.fetch('/api/v1/logs')).json()).logs as Array<{ origin: string; verifier_key: string }>)
    for (const w of [w1, w2]) w.trust(l.origin, l.verifier_key);
  ({ browser } = await launchChromium());
  mkdirSync(OUT, { recursive: true });
  const owner = await srv.newKey('owner');
  const fuse = await (await srv.fetch('/v1/fuses', { key: owner.secret, json: { label: 'witnessed' } })).json();
  const hop = await (
    await srv.fetch('/v1/fuse/hop', { key: owner.secret, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay' } } })
  ).json();
  // Witnessed once both cosignatures are stored: checked after each commit of the server.
  await untilCommitted(srv.ctx.ledger, async () => {
    doc = await (await srv.fetch(`/v1/receipts/${hop.receipt_id}`, { headers: { accept: 'application/json' } })).json();
    return doc.witnesses?.quorum_holds === true;
  });
});
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
  await Promise.all([w1, w2].map((w) => w?.close()));
});

describe('/verify with witnesses, in Chromium', () => {
  it('proves a pasted receipt document and names the witnesses that cosigned; the quorum holds', async () => {
    for (const width of [1280, 390]) {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      const r = await verifyIn(page, srv.url, encodeReceiptDocument(doc));
      expect(r.state).toBe('proven');
      expect(r.rows.map((x) => x.split('\t')[0])).toEqual([
        'Signed checkpoint',
        'Inclusion',
        'Witnesses',
        'Leaf and payload',
        'Live or test',
      ]);
      expect(r.rows[2]).toMatch(/cosigned by alpha, beta \(C2SP cosignatures, checked here\); quorum both holds/);
      expect(r.summary).toMatch(/Its witnesses \(alpha, beta\) cosigned that checkpoint/);
      await screenshot(page, { path: join(OUT, `verify-witnessed-${width}.png`), fullPage: true });
      await page.close();
    }
  });

  it('refuses a document whose cosignature was tampered with', async () => {
    const page = await browser.newPage();
    const lines = doc.checkpoint.split('\n');
    const at = lines.findIndex((l) => l.startsWith('\u2014 w2.browser.test '));
    const blob = Buffer.from(lines[at]!.split(' ')[2]!, 'base64');
    blob[50]! ^= 1;
    lines[at] = `\u2014 w2.browser.test ${blob.toString('base64')}`;
    const r = await verifyIn(page, srv.url, JSON.stringify({ ...doc, checkpoint: lines.join('\n') }));
    expect(r.state).toBe('refused');
    expect(r.summary).toMatch(/^Not proven: witnesses: the cosignature by beta does not verify/);
    await page.close();
  });
});
