/** The browser verifier at /verify, driven as a person would: paste, press, read the result. */
import type { Page } from 'playwright-core';

export async function verifyIn(page: Page, baseUrl: string, input: string): Promise<{ state: string; summary: string; rows: string[] }> {
  await page.goto(baseUrl + '/verify');
  await page.getByLabel('Receipt, token or receipt id').fill(input);
  await page.getByRole('button', { name: 'Verify in this browser' }).click();
  await page.waitForSelector('#verify-result[data-state="proven"], #verify-result[data-state="refused"]');
  return {
    state: (await page.getAttribute('#verify-result', 'data-state'))!,
    summary: await page.locator('#verify-summary').innerText(),
    rows: await page.locator('#verify-findings tr').allInnerTexts(),
  };
}
