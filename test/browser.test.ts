/**
 * How browser tests find Chromium (test/support/browser.ts), and proof that the
 * browser packaged as an npm dependency starts and renders on this machine even
 * when another one is installed.
 */
import { describe, expect, it } from 'vitest';
import { NoBrowser, SYSTEM_CHROMIUM, findChromium, launchChromium } from './support/browser.ts';

const only =
  (...present: string[]) =>
  (p: string) =>
    present.includes(p);

describe('browser resolution', () => {
  it('prefers CHROMIUM_PATH, then the system Chromium', async () => {
    expect(await findChromium({ CHROMIUM_PATH: '/opt/chrome/chrome' }, only('/opt/chrome/chrome', SYSTEM_CHROMIUM))).toMatchObject({
      source: 'CHROMIUM_PATH',
      executablePath: '/opt/chrome/chrome',
    });
    expect(await findChromium({}, only(SYSTEM_CHROMIUM))).toMatchObject({ source: 'system', executablePath: SYSTEM_CHROMIUM });
  });

  it('fails with what to do on a CHROMIUM_PATH that does not exist or an unknown switch value', async () => {
    await expect(findChromium({ CHROMIUM_PATH: '/nowhere/chromium' }, only(SYSTEM_CHROMIUM))).rejects.toThrow(NoBrowser);
    await expect(findChromium({ CHROMIUM_PATH: '/nowhere/chromium' }, only())).rejects.toThrow(
      /CHROMIUM_PATH=\/nowhere\/chromium does not exist[\s\S]*npm install/,
    );
    await expect(findChromium({ FUSEGATE_CHROMIUM: 'system' }, only(SYSTEM_CHROMIUM))).rejects.toThrow(
      /FUSEGATE_CHROMIUM=system is not understood/,
    );
  });

  it('falls back to the packaged browser, and FUSEGATE_CHROMIUM=packaged ignores the others', async () => {
    const fallback = await findChromium({}, only());
    expect(fallback.source).toBe('package');
    expect(fallback.executablePath).toMatch(/node_modules\/\.cache\/fusegate-chromium\/[\d.]+\/chromium$/);
    const forced = await findChromium(
      { FUSEGATE_CHROMIUM: 'packaged', CHROMIUM_PATH: '/opt/chrome/chrome' },
      only('/opt/chrome/chrome', SYSTEM_CHROMIUM),
    );
    expect(forced).toEqual(fallback);
  });
});

describe('the packaged Chromium', () => {
  it('starts with only its own libraries and fonts, and renders and runs a page', async () => {
    const { browser, found } = await launchChromium({ ...process.env, FUSEGATE_CHROMIUM: 'packaged' });
    try {
      expect(found.source).toBe('package');
      expect(browser.version()).toMatch(/^\d+\./);
      const page = await browser.newPage();
      await page.setContent(
        '<main><h1>Fuse Gate</h1><p id="n"></p><script>document.getElementById("n").textContent = String(6 * 7)</script></main>',
      );
      expect(await page.textContent('h1')).toBe('Fuse Gate');
      expect(await page.textContent('#n')).toBe('42');
      // Fonts come from the package: text has a real width.
      expect(await page.evaluate(() => document.querySelector('h1')!.getBoundingClientRect().width)).toBeGreaterThan(50);
    } finally {
      await browser.close();
    }
  });
});
