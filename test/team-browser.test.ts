/**
 * Team accounts in headless Chromium against a real server (issue 49), at
 * 1280 and 390 px: an owner invites a viewer, the link is passed on, the
 * viewer signs up from it and joins, sees the account read-only, and the
 * owner's audit log shows both acts. A viewer is shown no form that would
 * answer 403, an operator those of an operator and no owner's. axe on the
 * pages this adds; screenshots in light and dark go to test-output/team/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertMember } from '../src/ledger/members.ts';
import { loginByEmail } from '../src/ledger/accounts.ts';
import { OUT, axeSerious, screenshot } from './support/axe.ts';
import { launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const SHOTS = join(OUT, 'team');
const PASSWORD = 'correct horse battery staple';

let srv: TestServer;
let browser: Browser;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  srv = await startTestServer();
  ({ browser } = await launchChromium());
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await srv?.stop();
});

async function newPage(width: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  return context.newPage();
}

/** The page as it is, in light and dark, at its width. */
async function shots(page: Page, name: string, width: number) {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await screenshot(page, { path: join(SHOTS, `${name}-${width}-${scheme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

describe('team accounts in Chromium', { timeout: 240_000 }, () => {
  for (const width of [1280, 390]) {
    it(`at ${width} px: invite, accept by signing up, a viewer's read-only dashboard, the audit log`, async () => {
      const owner = await newPage(width);
      await owner.goto(srv.url + '/signup');
      await owner.fill('#email', `owner-${width}@team.example`);
      await owner.fill('#password', PASSWORD);
      await Promise.all([owner.waitForURL(/\/dashboard\?welcome=1$/), owner.click('main button[type=submit]')]);
      await owner.goto(srv.url + '/dashboard/keys');
      await owner.fill('#key-name', 'deploy bot');
      await Promise.all([owner.waitForURL(/created=/), owner.click('main button:has-text("Create key")')]);

      // Members: the owner alone; invite a viewer; the link is shown once, focused.
      await owner.goto(srv.url + '/dashboard/members');
      expect(await axeSerious(owner)).toEqual([]);
      await owner.fill('#invite-email', `viewer-${width}@team.example`);
      await owner.selectOption('#invite-role', 'viewer');
      await Promise.all([owner.waitForURL(/invited=/), owner.click('main button:has-text("Invite")')]);
      const shown = await owner.locator('#invite-link').innerText();
      expect(shown).toMatch(/^http.*\/invite\/[A-Za-z0-9_-]{43}$/);
      // Passed on and opened at this server's address (the test's BASE_URL may name another host).
      const link = srv.url + new URL(shown).pathname;
      expect(await owner.evaluate(() => document.activeElement?.id)).toBe('invite-link');
      expect(await axeSerious(owner)).toEqual([]);
      await shots(owner, 'members-invited', width);

      // The invitee opens it signed out, creates their account from it, and joins.
      const invitee = await newPage(width);
      await invitee.goto(link);
      expect(await invitee.locator('main').innerText()).toContain(`owner-${width}@team.example invited viewer-${width}@team.example`);
      expect(await axeSerious(invitee)).toEqual([]);
      await shots(invitee, 'invitation', width);
      await Promise.all([invitee.waitForURL(/\/signup\?next=/), invitee.click('main a:has-text("Create an account")')]);
      await invitee.fill('#email', `viewer-${width}@team.example`);
      await invitee.fill('#password', PASSWORD);
      await Promise.all([invitee.waitForURL(new URL(link).href), invitee.click('main button[type=submit]')]);
      await Promise.all([invitee.waitForURL(/\/dashboard\/members\?done=joined$/), invitee.click('main button:has-text("Join")')]);
      expect(await invitee.locator('[role=status]').first().innerText()).toContain('You joined the account');
      expect(await invitee.locator('.acting').innerText()).toContain('as viewer');
      await shots(invitee, 'members-viewer', width);
      // A viewer has no action on anyone: no empty Actions column, and whose account it is beside the name.
      expect(await invitee.locator('table.members th').allInnerTexts()).toEqual(['Person', 'Role', 'Since']);
      expect(await invitee.locator('table.members').innerText()).toContain(`owner-${width}@team.example (their own account)`);

      // A viewer reads the owner's keys, and is offered no change.
      await invitee.goto(srv.url + '/dashboard/keys');
      expect(await invitee.locator('main').innerText()).toContain('deploy bot');
      expect(await invitee.locator('#key-name').count()).toBe(0);
      expect(await invitee.locator('main a:has-text("Revoke")').count()).toBe(0);
      expect(await invitee.locator('[role=note]').innerText()).toContain('You are a viewer');

      // The owner's audit log has the key, the invitation and the join, filterable by person.
      await owner.goto(srv.url + '/dashboard/audit');
      const table = await owner.locator('table.audit').innerText();
      for (const action of ['key.created', 'member.invited', 'member.joined']) expect(table).toContain(action);
      expect(table).not.toContain(link.split('/').pop()!);
      expect(await axeSerious(owner)).toEqual([]);
      await shots(owner, 'audit', width);
      await owner.selectOption('#f-actor', `viewer-${width}@team.example`);
      await Promise.all([owner.waitForURL(/actor=/), owner.click('main button:has-text("Filter")')]);
      const mine = await owner.locator('table.audit').innerText();
      expect(mine).toContain('member.joined');
      expect(mine).not.toContain('member.invited');
    });
  }

  it('shows a viewer no form it may not post, an operator those of an operator, and neither an owner’s', async () => {
    const signUp = async (email: string) => {
      const p = await newPage(1280);
      await p.goto(srv.url + '/signup');
      await p.fill('#email', email);
      await p.fill('#password', PASSWORD);
      await Promise.all([p.waitForURL(/\/dashboard\?welcome=1$/), p.click('main button[type=submit]')]);
      return { page: p, id: (await loginByEmail(srv.ctx.ledger.read, email))!.account_id };
    };
    const owner = await signUp('owner-roles@team.example');
    const ops = await srv.newKey('ops key', 1000, 'operator', owner.id);
    const fuse = (await (await srv.fetch('/v1/fuses', { key: ops.secret, json: { label: 'prod writes' } })).json()) as { fuse_id: string };

    /** The action of every form the person's pages show in main, acting in the owner's account as `role`. */
    const formsSeenAs = async (role: 'viewer' | 'operator') => {
      const person = await signUp(`${role}-roles@team.example`);
      await srv.ctx.ledger.write((tx) =>
        insertMember(tx, { accountId: owner.id, personId: person.id, role, now: new Date().toISOString() }),
      );
      await person.page.goto(srv.url + '/dashboard/members');
      await person.page.selectOption('#switch-to', owner.id);
      await Promise.all([person.page.waitForURL(/done=switched/), person.page.click('main button:has-text("Switch")')]);
      const seen = new Set<string>();
      for (const path of [
        '/dashboard',
        '/dashboard/keys',
        `/dashboard/keys/${ops.id}`,
        '/dashboard/fuses',
        `/dashboard/fuses/${fuse.fuse_id}`,
        '/dashboard/alerts',
        '/dashboard/webhooks',
        '/dashboard/members',
        '/dashboard/account',
      ]) {
        await person.page.goto(srv.url + path);
        const actions = await person.page
          .locator('main form[method=post]')
          .evaluateAll((forms) => forms.map((f) => new URL((f as HTMLFormElement).action).pathname));
        for (const a of actions) seen.add(a.replaceAll(ops.id, '{key}').replaceAll(fuse.fuse_id, '{fuse}'));
      }
      return { seen, page: person.page };
    };

    const operatorForms = ['/dashboard/start', '/dashboard/keys', '/dashboard/keys/{key}/limit', '/dashboard/fuses', '/dashboard/alerts'];
    const ownerForms = ['/dashboard/account/spend-cap', '/dashboard/members/invite'];
    const viewer = await formsSeenAs('viewer');
    for (const action of [...operatorForms, ...ownerForms]) expect([...viewer.seen], action).not.toContain(action);
    // What a viewer still sees is their own: their sign-in, sessions and the account they act in.
    expect(
      [...viewer.seen].every((a) => /^\/(dashboard\/(account\/(email|password|sessions\/end)|switch|mode)|signout-everywhere)$/.test(a)),
    ).toBe(true);
    await viewer.page.goto(srv.url + '/dashboard');
    expect(await viewer.page.locator('main button:has-text("key")').count()).toBe(0);
    expect(await axeSerious(viewer.page)).toEqual([]);
    await shots(viewer.page, 'overview-viewer', 1280);

    const operator = await formsSeenAs('operator');
    for (const action of operatorForms) expect([...operator.seen], action).toContain(action);
    for (const action of ownerForms) expect([...operator.seen], action).not.toContain(action);
  });
});
