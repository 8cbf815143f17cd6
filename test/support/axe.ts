/** axe-core run inside a page, and where browser tests save their screenshots. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

export const OUT = join(process.cwd(), 'test-output');
const AXE = readFileSync(join(process.cwd(), 'node_modules/axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as it is now. */
export async function axeSerious(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE });
  const violations = await page.evaluate(async () => {
    const r = await (globalThis as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      nodes: v.nodes.length,
      help: v.help,
      targets: v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')),
    }));
  });
  return (violations as { id: string; impact: string; nodes: number; help: string; targets: string[] }[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}, ${v.nodes} nodes: ${v.targets.join(', ')}): ${v.help}`);
}

/**
 * A screenshot for the person reviewing the pages. Chromium sometimes answers
 * "Unable to capture screenshot" when the renderer has not produced a frame yet
 * (seen on a loaded machine); a short wait and another try gets it.
 */
export async function screenshot(page: Page, options: Parameters<Page['screenshot']>[0]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await page.screenshot(options);
      return;
    } catch (e) {
      if (attempt >= 4 || !/Unable to capture screenshot/.test((e as Error).message)) throw e;
      await page.waitForTimeout(250 * attempt);
    }
  }
}
