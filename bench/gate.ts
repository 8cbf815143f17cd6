/**
 * Gate core: POST /v1/fuse/hop at 50 connections against the bare node:http
 * baseline answering a POST with a JSON body. Each hop is an act (ledger/acts.ts):
 * decided under the write lock, its receipt appended to the receipts log (a
 * segment per tile, ledger/log.ts) and counted, durably (synchronous=FULL,
 * set-oriented group commit, one seal signed per batch) before it is answered.
 *
 * Then the durable floors (durable-floor.ts): node:http answering only after one
 * durable group commit of what a hop writes in each storage layout (the rows of
 * before issue 26; the tiles with the WAL synced inside COMMIT as shipped, and
 * synced off the event loop as tried; no database), side by side, and the hop
 * against the shipped floor, beside the hop with no sync in COMMIT at all
 * (DATABASE_SYNCHRONOUS=NORMAL): what any scheme that syncs the WAL off the
 * event loop could give at best. Last, the bytes the hops left stored.
 */
import { statSync } from 'node:fs';
import Database from 'libsql';
import { compareHttp, fmt, hopLoad, report, spawnBaseline, spawnDurableFloor, spawnServer } from './lib.ts';

/** Database bytes (WAL checkpointed into the file) of a running server's database. */
export function storedBytes(databaseUrl: string): number {
  const path = databaseUrl.replace(/^file:/, '');
  const db = new Database(path);
  db.exec('PRAGMA busy_timeout=30000');
  db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').all();
  db.close();
  return statSync(path).size;
}

export async function receiptsLogSize(url: string): Promise<number> {
  return ((await (await fetch(`${url}/api/v1/logs/receipts`)).json()) as { tree_size: number }).tree_size;
}

export async function benchGate(): Promise<void> {
  const server = await spawnServer();
  const baseline = await spawnBaseline();
  try {
    const { load: hop } = await hopLoad(server, 'POST /v1/fuse/hop');
    const bytesBefore = storedBytes(server.env.DATABASE_URL!);
    const sizeBefore = await receiptsLogSize(server.url);
    await compareHttp('gate', server, baseline, { ...hop, target: { ratio: 0.4, p99Ms: 15 } });
    const hops = (await receiptsLogSize(server.url)) - sizeBefore;
    const perHop = (storedBytes(server.env.DATABASE_URL!) - bytesBefore) / hops;
    report(
      'gate',
      `stored bytes per hop (${hops.toLocaleString('en-US')} hops, WAL checkpointed)`,
      `${Math.round(perHop)} B`,
      '1,166 B before tiles',
      fmt.ratio(perHop, 1166),
      { text: '<= 600 B', met: perHop <= 600 },
    );
    const names = {
      rows: 'rows layout',
      tiles: 'tiles layout, WAL synced in COMMIT (shipped)',
      'tiles-off-loop': 'tiles layout, WAL synced off the loop (tried, not shipped)',
      'tiles-worker': 'tiles layout, written on a thread of its own (tried, not shipped)',
      none: 'no database',
    };
    // The bound of any scheme that syncs the WAL off the event loop: the same hop with no sync in COMMIT at
    // all (NORMAL survives a crash of the process, not of the machine; a documented, non-default setting).
    const unsynced = await spawnServer({ DATABASE_SYNCHRONOUS: 'NORMAL' });
    try {
      const { load: unsyncedHop } = await hopLoad(
        unsynced,
        'POST /v1/fuse/hop with no sync in COMMIT (DATABASE_SYNCHRONOUS=NORMAL, not durable against power loss)',
      );
      await compareHttp('gate', unsynced, baseline, unsyncedHop);
    } finally {
      await unsynced.stop();
    }
    for (const layout of ['rows', 'tiles', 'tiles-off-loop', 'tiles-worker', 'none'] as const) {
      const floor = await spawnDurableFloor(layout);
      try {
        await compareHttp('gate', floor, baseline, {
          ...hop,
          name: `durable floor, ${names[layout]} (node:http + one durable group commit)`,
          path: '/',
          headers: { 'content-type': 'application/json' },
        });
        if (layout === 'tiles')
          await compareHttp('gate', server, floor, { ...hop, name: 'POST /v1/fuse/hop (baseline: the shipped floor)' });
      } finally {
        await floor.stop();
      }
    }
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}
