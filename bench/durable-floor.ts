/**
 * The durable floor of a hop on this machine, per storage layout, for the gate
 * section: a bare node:http server that answers each POST only after one
 * durable group commit (BEGIN IMMEDIATE ... COMMIT, the requests of one event
 * loop turn together) of what a hop writes in that layout. No framework,
 * no validation, no authentication. So a claim that some figure is "the floor"
 * compares layouts, not only the one shipped:
 *
 *   rows    the layout before issue 26: per act a receipt row with two indexes,
 *           a log entry, two node hashes, a meter row with two indexes, and a
 *           quota counter (about ten B-tree inserts per act);
 *   tiles   the layout shipped (ledger/log.ts, acts.ts): per batch the log's
 *           row (size and edge), one segment row per tile touched with the
 *           batch's bundle, one seal row with its Ed25519 signature, and one
 *           upsert each of the hop counter, the usage counter and the key's
 *           receipt list; COMMIT syncs the WAL on the event loop (FULL), as
 *           the service does;
 *   tiles-off-loop
 *           the same rows, with COMMIT at synchronous=OFF and the WAL synced
 *           on the thread pool (fdatasync, one in flight), a group answered
 *           once a sync that began after its COMMIT has ended: the alternative
 *           tried in the service and not shipped (docs/pipeline.md);
 *   tiles-worker
 *           the same rows and COMMIT, run on a worker thread that owns the
 *           connection: the event loop posts each group's entries in one
 *           message and answers the group when the thread posts back (the
 *           next group forms meanwhile). The upper bound of moving storage
 *           off the event loop: the service's acts decide on state read under
 *           the lock, which a thread needs more than one message a group for
 *           (docs/pipeline.md);
 *   none    no database at all (what the framework-free HTTP costs).
 *
 * Run as its own process: `node bench/durable-floor.ts DB_PATH LAYOUT`; prints
 * {"url": ...} when listening.
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { fdatasync, openSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import Database from 'libsql';

type Layout = 'rows' | 'tiles' | 'tiles-off-loop' | 'tiles-worker' | 'none';
const layout = (isMainThread ? (process.argv[3] ?? 'tiles') : 'tiles') as Layout;
const db = layout === 'none' || layout === 'tiles-worker' ? undefined : new Database(process.argv[2]!);
const walSync = layout === 'tiles-off-loop' ? walSyncOf(`${process.argv[2]!}-wal`) : undefined;
db?.exec('PRAGMA journal_mode=WAL');
db?.exec(`PRAGMA synchronous=${walSync ? 'OFF' : 'FULL'}`);
// As the service: no checkpoint inside COMMIT (it runs on its own thread there).
db?.exec('PRAGMA wal_autocheckpoint=0');
if (layout === 'rows') {
  db!.exec(`
    CREATE TABLE receipts (id TEXT PRIMARY KEY, log_index INTEGER, kind TEXT, decision TEXT, subject TEXT, key_id TEXT, created_at TEXT) WITHOUT ROWID;
    CREATE INDEX receipts_by_key ON receipts (key_id, created_at);
    CREATE INDEX receipts_by_subject ON receipts (subject);
    CREATE TABLE log_entries (log TEXT, idx INTEGER, leaf BLOB, created_at TEXT, PRIMARY KEY (log, idx));
    CREATE TABLE log_nodes (log TEXT, span_end INTEGER, level INTEGER, hash BLOB, PRIMARY KEY (log, span_end, level)) WITHOUT ROWID;
    CREATE TABLE meter (key_id TEXT, sku TEXT, amount_micros INTEGER, ref TEXT, created_at TEXT);
    CREATE INDEX meter_by_key ON meter (key_id, sku);
    CREATE INDEX meter_by_time ON meter (created_at);
    CREATE TABLE quotas (key_id TEXT PRIMARY KEY, used INTEGER);
    INSERT INTO quotas VALUES ('key_floor', 0);
  `);
}
if (db && (layout === 'tiles' || layout === 'tiles-off-loop')) {
  db!.exec(`
    CREATE TABLE logs (name TEXT PRIMARY KEY, size INTEGER, edge BLOB);
    INSERT INTO logs VALUES ('receipts', 0, NULL);
    CREATE TABLE log_segments (log TEXT NOT NULL, start INTEGER NOT NULL, count INTEGER NOT NULL, entries BLOB NOT NULL, summary TEXT, created_at TEXT NOT NULL, PRIMARY KEY (log, start));
    CREATE TABLE receipt_seals (tree_size INTEGER PRIMARY KEY, root BLOB, note TEXT, jws TEXT, kid TEXT, created_at TEXT);
    CREATE TABLE hop_counters (key_id TEXT, day TEXT, hops INTEGER, PRIMARY KEY (key_id, day)) WITHOUT ROWID;
    CREATE TABLE usage_counters (key_id TEXT, day TEXT, sku TEXT, nap INTEGER, count INTEGER, usd INTEGER, micros INTEGER, PRIMARY KEY (key_id, day, sku)) WITHOUT ROWID;
    CREATE TABLE key_receipts (key_id TEXT, day TEXT, first INTEGER, offsets BLOB, PRIMARY KEY (key_id, first)) WITHOUT ROWID;
    CREATE INDEX key_receipts_by_day ON key_receipts (day, key_id);
  `);
}
const { privateKey } = generateKeyPairSync('ed25519');

/** fdatasync of the WAL on the thread pool, one in flight: `synced()` waits for a sync that begins after the call. */
function walSyncOf(walPath: string) {
  let fd: number | undefined;
  let current: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const run = (): Promise<void> =>
    new Promise<void>((resolve, reject) => fdatasync((fd ??= openSync(walPath, 'r')), (e) => (e ? reject(e) : resolve()))).finally(() => {
      if (!next) current = undefined;
    });
  return {
    synced(): Promise<void> {
      if (!current) return (current = run());
      return (next ??= current.then(() => {
        next = undefined;
        return (current = run());
      }));
    },
  };
}

const prepared = new Map<string, ReturnType<NonNullable<typeof db>['prepare']>>();
const statement = (sql: string) => {
  let s = prepared.get(sql);
  if (!s) prepared.set(sql, (s = db!.prepare(sql)));
  return s;
};
const values = (columns: number, rows: number) => Array.from({ length: rows }, () => `(${Array(columns).fill('?').join(', ')})`).join(', ');

let size = 0;
let waiting: ServerResponse[] = [];

function commitRows(acts: Array<{ id: string; leaf: Buffer; hash: Buffer }>, now: string): void {
  const first = size;
  statement(`INSERT INTO receipts VALUES ${values(7, acts.length)}`).run(
    acts.flatMap((a, i) => [a.id, first + i, 'hop', 'PERMIT', 'fuse_floor', 'key_floor', now]),
  );
  statement(`INSERT INTO log_entries VALUES ${values(4, acts.length)}`).run(acts.flatMap((a, i) => ['receipts', first + i, a.leaf, now]));
  statement(`INSERT INTO log_nodes VALUES ${values(4, 2 * acts.length)}`).run(
    acts.flatMap((a, i) => ['receipts', first + i + 1, 0, a.hash, 'receipts', 2 * (first + i + 1), 1, a.hash]),
  );
  statement(`INSERT INTO meter VALUES ${values(5, acts.length)}`).run(
    acts.flatMap((a) => ['key_floor', 'execute_gate', 100_000, a.id, now]),
  );
  statement('UPDATE quotas SET used = used + ? WHERE key_id = ?').run([acts.length, 'key_floor']);
}

function commitTiles(acts: Array<{ id: string; leaf: Buffer; hash: Buffer }>, now: string): void {
  const first = size;
  const edge = Buffer.alloc(32 * 20, 7);
  statement('UPDATE logs SET size = ?, edge = ? WHERE name = ? AND size = ?').run([first + acts.length, edge, 'receipts', first]);
  for (let at = 0; at < acts.length;) {
    const start = first + at;
    const count = Math.min(acts.length - at, 256 - (start % 256));
    const bundle = Buffer.concat(
      acts.slice(at, at + count).flatMap((a) => [Buffer.from([a.leaf.length >> 8, a.leaf.length & 0xff]), a.leaf]),
    );
    statement('INSERT INTO log_segments VALUES (?, ?, ?, ?, ?, ?)').run([
      'receipts',
      start,
      count,
      bundle,
      `{"acts":{"hop PERMIT":${count}},"skus":{"execute_gate":[${count},"${count * 100_000}",false]}}`,
      now,
    ]);
    at += count;
  }
  const note = `localhost/receipts\n${first + acts.length}\n${randomBytes(32).toString('base64')}\n`;
  const sig = sign(null, Buffer.from(note), privateKey).toString('base64');
  statement('INSERT INTO receipt_seals VALUES (?, ?, ?, ?, ?, ?)').run([
    first + acts.length,
    randomBytes(32),
    `${note}\n— localhost/receipts ${sig}\n`,
    sig,
    'kid',
    now,
  ]);
  const day = now.slice(0, 10);
  statement('INSERT INTO hop_counters VALUES (?, ?, ?) ON CONFLICT (key_id, day) DO UPDATE SET hops = hops + excluded.hops').run([
    'key_floor',
    day,
    acts.length,
  ]);
  statement(
    'INSERT INTO usage_counters VALUES (?, ?, ?, 0, ?, 0, ?) ON CONFLICT (key_id, day, sku) DO UPDATE SET count = count + excluded.count, micros = micros + excluded.micros',
  ).run(['key_floor', day, 'execute_gate', acts.length, acts.length * 100_000]);
  const offsets = Buffer.alloc(4 * (acts.length - 1));
  for (let i = 1; i < acts.length; i++) offsets.writeUInt32BE(i, 4 * (i - 1));
  statement('INSERT INTO key_receipts VALUES (?, ?, ?, ?)').run(['key_floor', day, first, offsets]);
}

function commitGroup(): void {
  const group = waiting;
  waiting = [];
  const now = new Date().toISOString();
  const acts = group.map(() => {
    const id = `rcpt_${randomBytes(16).toString('base64url')}`;
    const leaf = Buffer.from(
      JSON.stringify({
        v: 1,
        id,
        kind: 'hop',
        decision: 'PERMIT',
        subject: 'fuse_floor',
        key_id: 'key_floor',
        created_at: now,
        data: 'x'.repeat(380),
      }),
    );
    return { id, leaf, hash: createHash('sha256').update(leaf).digest() };
  });
  if (writer) {
    inFlight = true;
    writer.postMessage({ acts: acts.map((a) => ({ id: a.id, leaf: a.leaf })), now });
    answerWhenWritten = () => {
      group.forEach((res, i) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ decision: 'PERMIT', receipt_id: acts[i]!.id }));
      });
    };
    return;
  }
  if (db) {
    db.exec('BEGIN IMMEDIATE');
    if (layout === 'rows') commitRows(acts, now);
    else commitTiles(acts, now);
    db.exec('COMMIT');
  }
  size += acts.length;
  const answer = () =>
    group.forEach((res, i) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ decision: 'PERMIT', receipt_id: acts[i]!.id }));
    });
  if (walSync) void walSync.synced().then(answer);
  else answer();
}

// tiles-worker: one group in flight on the writer's thread; the main thread answers it when posted back.
let inFlight = false;
let answerWhenWritten: (() => void) | undefined;
const writer = layout === 'tiles-worker' ? new Worker(new URL(import.meta.url), { argv: process.argv.slice(2) }) : undefined;
writer?.on('message', () => {
  inFlight = false;
  answerWhenWritten!();
  if (waiting.length > 0) commitGroup();
});
if (!isMainThread) {
  parentPort!.on('message', (m: { acts: Array<{ id: string; leaf: Uint8Array }>; now: string }) => {
    const acts = m.acts.map((a) => ({ id: a.id, leaf: Buffer.from(a.leaf), hash: Buffer.alloc(0) }));
    db!.exec('BEGIN IMMEDIATE');
    commitTiles(acts, m.now);
    db!.exec('COMMIT');
    size += acts.length;
    parentPort!.postMessage(1);
  });
}

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c));
  req.on('end', () => {
    JSON.parse(body);
    if (waiting.push(res) === 1 && !inFlight) setImmediate(commitGroup);
  });
});
if (isMainThread)
  server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
