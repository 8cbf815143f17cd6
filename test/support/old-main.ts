/**
 * A server started on the database main wrote before tiles
 * (test/fixtures/main-7b6fb56.*, made by test/fixtures/make-main-7b6fb56.ts
 * with that commit's code), so that its start-up runs every migration since on
 * real old data. `before` may add rows to the old database first, as that
 * code stored them.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient, type Client } from '@libsql/client';
import { startTestServer, tempDir, testEnv, type TestServer } from './server.ts';

export const oldMainFixture = (ext: string) => new URL(`../fixtures/main-7b6fb56.${ext}`, import.meta.url);

/** The origins the fixture's receipts were issued under. */
export const OLD_MAIN_ENV = { SITE_URL: 'http://fixture.test', BASE_URL: 'http://fixture.test' };

export async function startOnOldMain(before?: (db: Client) => Promise<void>): Promise<TestServer> {
  const dir = tempDir();
  const db = createClient({ url: testEnv(dir, OLD_MAIN_ENV).DATABASE_URL! });
  try {
    await db.executeMultiple(readFileSync(oldMainFixture('sql'), 'utf8'));
    await before?.(db);
  } finally {
    db.close();
  }
  copyFileSync(oldMainFixture('signing-keys.json'), join(dir, 'signing-keys.json'));
  return startTestServer(OLD_MAIN_ENV, dir);
}
