/**
 * Trust core figures:
 *  - receipt-log appends per second: each append is an act whose one write is
 *    a receipt (a leaf of the receipts log and its row), committed by the
 *    group-commit queue (set-oriented, ledger/acts.ts) against the same append
 *    in one transaction each (the baseline), at 1, 16 and 256 concurrent writers;
 *  - time to serve an inclusion proof and a checkpoint over HTTP for a log of
 *    1,000,000 entries (the log is bulk-built directly in its tables).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { loadConfig } from '../src/config.ts';
import { localDatabasePath, openLedger } from '../src/ledger/db.ts';
import { EmbeddedSql } from '../src/ledger/drivers/embedded/connection.ts';
import { remoteSql } from '../src/ledger/drivers/embedded/open.ts';
import { commitActs, type ActPlan } from '../src/ledger/acts.ts';
import { appendLeaves } from '../src/ledger/log.ts';
import type { Transaction } from '../src/ledger/sql.ts';
import { fmt, removeDir, report, spawnServer } from './lib.ts';

const APPENDS = Number(process.env.BENCH_APPENDS ?? 10_000);
const BIG_LOG = Number(process.env.BENCH_BIG_LOG ?? 1_000_000);

/** Sealed receipts are not signed one by one: making one needs only the service's URL. */
const issuer = { config: { BASE_URL: 'http://127.0.0.1' }, keyring: undefined as never };

function env(dir: string) {
  return loadConfig({ DATABASE_URL: `file:${join(dir, 'bench.db')}`, SIGNING_KEY_FILE: join(dir, 'k.json'), LOG_LEVEL: 'silent' });
}

async function appendRate(concurrency: number, grouped: boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'fusegate-bench-log-'));
  const config = env(dir);
  const ledger = await openLedger(config);
  // Baseline: a connection of its own (the same driver, statements prepared once), one
  // write transaction per append, one at a time.
  const single = new EmbeddedSql(localDatabasePath(config.DATABASE_URL)!);
  single.exec('PRAGMA busy_timeout=30000');
  single.exec(`PRAGMA synchronous=${config.DATABASE_SYNCHRONOUS}`);
  let chain: Promise<unknown> = Promise.resolve();
  const oneTx = (act: ActPlan<unknown>) => {
    const next = chain.then(async () => {
      single.run('BEGIN IMMEDIATE');
      await commitActs(single as unknown as Transaction, [act]);
      single.run('COMMIT');
    });
    chain = next;
    return next;
  };
  let n = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (n < APPENDS) {
        const subject = `leaf ${n++}`;
        const act: ActPlan<undefined> = {
          needs: {},
          decide: (state) => ({
            writes: { receipt: state.receipt(issuer, { kind: 'bench', decision: 'PERMIT', subject }) },
            result: undefined,
          }),
        };
        if (grouped) await ledger.act(act);
        else await oneTx(act);
      }
    }),
  );
  const rate = APPENDS / ((performance.now() - started) / 1000);
  single.close();
  await ledger.close();
  removeDir(dir);
  return rate;
}

/** Appends a log of `size` leaves in big transactions of its own, beside the running server. */
async function bulkBuild(url: string, log: string, size: number): Promise<void> {
  const db = createClient({ url, concurrency: 1 });
  // The server beside us may hold the write lock for a moment (its start-up writes, a
  // checkpoint): this bench-only bulk writer waits for it instead of failing with SQLITE_BUSY.
  await db.execute('PRAGMA busy_timeout=30000');
  await db.execute('PRAGMA synchronous=OFF');
  for (let from = 0; from < size; from += 50_000) {
    const leaves = Array.from({ length: Math.min(50_000, size - from) }, (_, k) => Buffer.from(`entry ${from + k}`));
    const tx = await db.transaction('write');
    try {
      await appendLeaves(remoteSql(tx), log, leaves);
      await tx.commit();
    } finally {
      tx.close();
    }
  }
  db.close();
}

async function timeRequests(url: string, paths: string[], rounds: number): Promise<number> {
  const started = performance.now();
  for (let r = 0; r < rounds; r++) for (const p of paths) await (await fetch(url + p)).arrayBuffer();
  return (performance.now() - started) / (rounds * paths.length);
}

export async function benchTrust(): Promise<void> {
  for (const c of [1, 16, 256]) {
    const grouped = await appendRate(c, true);
    const single = await appendRate(c, false);
    report(
      'trust',
      `receipt-log appends/s, ${c} writer(s)`,
      `${Math.round(grouped)}/s group commit`,
      `${Math.round(single)}/s one tx each`,
      fmt.ratio(grouped, single),
      c === 256 ? { text: '>= 10,000/s and >= 10x', met: grouped >= 10_000 && grouped >= 10 * single } : undefined,
    );
  }

  const server = await spawnServer();
  try {
    // The server has created its tables; fill the astl log behind it.
    const built = performance.now();
    await bulkBuild(server.env.DATABASE_URL!, 'astl', BIG_LOG);
    console.log(`  (bulk-built ${BIG_LOG} entries in ${((performance.now() - built) / 1000).toFixed(1)} s)`);
    await timeRequests(server.url, ['/api/v1/logs/receipts/checkpoint', '/api/v1/logs/astl/checkpoint'], 20); // warm-up
    const small = await timeRequests(server.url, ['/api/v1/logs/receipts/checkpoint'], 50);
    const proofPaths = Array.from(
      { length: 20 },
      (_, i) => `/api/v1/logs/astl/proof/inclusion?index=${(i * 48_271) % BIG_LOG}&tree_size=${BIG_LOG}`,
    );
    const proof = await timeRequests(server.url, proofPaths, 5);
    const cp = await timeRequests(server.url, ['/api/v1/logs/astl/checkpoint'], 50);
    report(
      'trust',
      `inclusion proof @ ${BIG_LOG.toLocaleString('en-US')} entries`,
      fmt.ms(proof),
      `${fmt.ms(small)} checkpoint of an empty log`,
      fmt.ratio(proof, small),
    );
    report(
      'trust',
      `checkpoint @ ${BIG_LOG.toLocaleString('en-US')} entries`,
      fmt.ms(cp),
      `${fmt.ms(small)} checkpoint of an empty log`,
      fmt.ratio(cp, small),
    );
  } finally {
    await server.stop();
  }
}
