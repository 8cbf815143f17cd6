/**
 * The checkpointer thread (ledger/drivers/embedded/checkpointer.ts) on a real libSQL file
 * written through the real ledger: under a steady stream of commits it keeps
 * the WAL rewinding, so that commits overwrite the file's blocks instead of
 * growing it, and it loses nothing.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { openLedger, type Ledger } from '../src/ledger/db.ts';
import { removeTempDirs, tempDir, testEnv } from './support/server.ts';

let ledger: Ledger | undefined;
afterEach(async () => {
  await ledger?.close();
  ledger = undefined;
  removeTempDirs();
});

/** The WAL header's checkpoint sequence number: SQLite adds one each time a writer rewinds the WAL. */
function rewinds(wal: string): number {
  const fd = openSync(wal, 'r');
  try {
    const header = Buffer.alloc(32);
    readSync(fd, header, 0, 32, 0);
    return header.readUInt32BE(12);
  } finally {
    closeSync(fd);
  }
}

it('keeps the WAL rewinding under a steady stream of commits, and every row committed is there', async () => {
  const dir = tempDir();
  ledger = await openLedger(loadConfig(testEnv(dir, { WAL_CHECKPOINT_MS: '25' })));
  const wal = join(dir, 'fusegate.db-wal');
  await ledger.write((tx) => tx.execute('CREATE TABLE scratch (id INTEGER PRIMARY KEY, body BLOB NOT NULL)'));
  const first = rewinds(wal);
  // About 10 pages a commit, one every millisecond or two: a server's groups under load. (Before the catch-up
  // passes, the WAL did not rewind once here, and grew past what went through it.)
  const rowBytes = 40_000;
  // At least 400 commits, and more (up to 5,000) while the WAL has not yet rewound three times or is not yet
  // smaller than what went through it: a machine busy with other work slows the checkpointer's thread as much
  // as the writer, and the WAL then grows further between two rewinds before the file's size tells.
  let rows = 0;
  const settled = () => rewinds(wal) - first >= 3 && statSync(wal).size < 0.9 * rows * rowBytes;
  while (rows < 400 || (rows < 5_000 && !settled())) {
    await ledger.write((tx) => tx.execute({ sql: 'INSERT INTO scratch (body) VALUES (?)', args: [randomBytes(rowBytes)] }));
    rows++;
    await new Promise((r) => setTimeout(r, 1));
  }
  const written = rows * rowBytes;
  expect(rewinds(wal) - first).toBeGreaterThanOrEqual(3);
  // Rewound, the file stays smaller than what went through it (never rewound, it grows past it: whole pages and frame headers).
  expect(statSync(wal).size).toBeLessThan(0.9 * written);
  const rs = await ledger.read.execute('SELECT COUNT(*) AS n, SUM(length(body)) AS bytes FROM scratch');
  expect([Number(rs.rows[0]!.n), Number(rs.rows[0]!.bytes)]).toEqual([rows, written]);
});
