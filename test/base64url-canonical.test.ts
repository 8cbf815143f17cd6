/**
 * Signature checks accept only canonical base64url (issue 31 item 8): a token
 * whose last character was changed only in its unused bits decodes, leniently,
 * to the same signature bytes; it must fail the signature check anyway, in the
 * shared decoder, on the server (POST /v1/receipts/verify) and in the browser
 * verifier on /verify (headless Chromium).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base64, fromBase64 } from '../src/crypto/base64.ts';
import { base64urlProblem, decodeBase64url, isCanonicalBase64url } from '../src/crypto/base64url.ts';
import { ProofError } from '../src/crypto/proof-error.ts';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The same bytes, written with the last character's unused low bits set: a non-canonical twin. */
function twin(b64url: string): string {
  const last = ALPHABET.indexOf(b64url.at(-1)!);
  const unused = b64url.length % 4 === 2 ? 0b1111 : 0b11;
  return b64url.slice(0, -1) + ALPHABET[last ^ unused]!;
}

describe('canonical base64url', () => {
  it('decodes the canonical form and refuses its twin, padding, other alphabets and impossible lengths', () => {
    const bytes = new Uint8Array([1, 2, 3, 250, 251]);
    const canonical = Buffer.from(bytes).toString('base64url');
    expect(decodeBase64url(canonical)).toEqual(bytes);
    const t = twin(canonical);
    // A lenient decoder cannot tell them apart; that is the bug.
    expect(Buffer.from(t, 'base64url')).toEqual(Buffer.from(bytes));
    expect(isCanonicalBase64url(t)).toBe(false);
    expect(() => decodeBase64url(t)).toThrow(/bits set that encode nothing/);
    expect(base64urlProblem(`${canonical}=`)).toMatch(/alphabet/);
    expect(base64urlProblem('ab+/')).toMatch(/alphabet/);
    expect(base64urlProblem('abcde')).toMatch(/length/);
    expect(isCanonicalBase64url('')).toBe(true);
    // The standard base64 decoder (hashes, keys, note signatures) refuses the twin too, and any padding but the length's.
    const std = base64(bytes);
    expect(fromBase64(std)).toEqual(bytes);
    expect(std).toBe('AQID+vs=');
    expect(() => fromBase64(`${std.slice(0, -2)}${ALPHABET[ALPHABET.indexOf(std.at(-2)!) ^ 0b11]!}=`)).toThrow(ProofError);
    expect(() => fromBase64(std.slice(0, -2) + 'x=')).toThrow(/bits set that encode nothing/);
    expect(() => fromBase64(std.replace(/=+$/, ''))).toThrow(/padding/);
    expect(() => fromBase64(`${std}=`)).toThrow(ProofError);
    expect(() => fromBase64(canonical)).toThrow(/alphabet|padding/);
  });
});

describe('a receipt token with a non-canonical signature', () => {
  let srv: TestServer;
  let browser: Browser;
  let jws = '';
  beforeAll(async () => {
    srv = await startTestServer();
    ({ browser } = await launchChromium());
    const key = (await srv.newKey('b64')).secret;
    const fuse = await (await srv.fetch('/v1/fuses', { key, json: {} })).json();
    jws = (await (await srv.fetch('/api/v1/execute-gate', { key, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay' } } })).json())
      .receipt;
    expect(jws.split('.')).toHaveLength(3);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await srv?.stop();
  });

  const tampered = () => {
    const [h, p, s] = jws.split('.') as [string, string, string];
    return `${h}.${p}.${twin(s)}`;
  };

  it('fails the server verifier (POST /v1/receipts/verify)', async () => {
    const ok = await (await srv.fetch('/v1/receipts/verify', { json: { receipt: jws } })).json();
    expect(ok.valid).toBe(true);
    const bad = await (await srv.fetch('/v1/receipts/verify', { json: { receipt: tampered() } })).json();
    expect(bad).toMatchObject({ valid: false, reason: 'bad_signature' });
  });

  it("fails the browser verifier's signature check on /verify", { timeout: 120_000 }, async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const check = async (input: string) => {
      await page.goto(srv.url + '/verify');
      await page.getByLabel('Receipt, token or receipt id').fill(input);
      await page.getByRole('button', { name: 'Verify in this browser' }).click();
      await page.waitForSelector('#verify-result[data-state="proven"], #verify-result[data-state="refused"]');
      return {
        state: await page.getAttribute('#verify-result', 'data-state'),
        rows: await page.locator('#verify-findings tr').allInnerTexts(),
      };
    };
    expect((await check(jws)).state).toBe('proven');
    const r = await check(tampered());
    expect(r.state).toBe('refused');
    const signature = r.rows.find((x) => x.startsWith('Receipt signature'));
    expect(signature).toMatch(/✗/);
    expect(signature).toMatch(/signature is not canonical base64url/);
    await page.close();
  });
});

describe('standard base64 of bytes read in place', () => {
  it('encodes exactly the view it is given, not the buffer around it', () => {
    const whole = new Uint8Array([0xff, 0x01, 0x02, 0x03, 0xfe]);
    expect(base64(whole.subarray(1, 4))).toBe('AQID');
    expect(base64(whole)).toBe(Buffer.from(whole).toString('base64'));
    expect(base64(new Uint8Array(0))).toBe('');
  });
});
