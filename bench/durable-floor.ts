/**
 * The durable floor of a hop on this machine, for the gate section: a bare
 * node:http server that answers each POST only after one group commit
 * (BEGIN IMMEDIATE ... COMMIT at synchronous=FULL, the requests of one event
 * loop turn together) of the rows a hop writes: a receipt row with its
 * indexes, a receipts-log entry with a ~500-byte leaf, two node hashes, a
 * meter row with its indexes and a quota counter. No framework, no
 * validation, no authentication, no signature. Run as its own process:
 * `node bench/durable-floor.ts DB_PATH`; prints {"url": ...} when listening.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'libsql';

const db = new Database(process.argv[2]!);
db.exec('PRAGMA journal_mode=WAL');
db.exec('PRAGMA synchronous=FULL');
// As the service: no checkpoint inside COMMIT (it runs on its own thread there).
db.exec('PRAGMA wal_autocheckpoint=0');
db.exec(`
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

const prepared = new Map<string, ReturnType<typeof db.prepare>>();
const statement = (sql: string) => {
  let s = prepared.get(sql);
  if (!s) prepared.set(sql, (s = db.prepare(sql)));
  return s;
};
const values = (columns: number, rows: number) => Array.from({ length: rows }, () => `(${Array(columns).fill('?').join(', ')})`).join(', ');

let size = 0;
let waiting: ServerResponse[] = [];

function commitGroup(): void {
  const group = waiting;
  waiting = [];
  const now = new Date().toISOString();
  const acts = group.map(() => {
    const id = `rcpt_${randomBytes(16).toString('base64url')}`;
    const leaf = Buffer.from(JSON.stringify({ v: 1, id, kind: 'hop', decision: 'PERMIT', subject: 'fuse_floor', key_id: 'key_floor', created_at: now, data: 'x'.repeat(380) }));
    return { id, leaf, hash: createHash('sha256').update(leaf).digest() };
  });
  const first = size;
  db.exec('BEGIN IMMEDIATE');
  statement(`INSERT INTO receipts VALUES ${values(7, acts.length)}`).run(acts.flatMap((a, i) => [a.id, first + i, 'hop', 'PERMIT', 'fuse_floor', 'key_floor', now]));
  statement(`INSERT INTO log_entries VALUES ${values(4, acts.length)}`).run(acts.flatMap((a, i) => ['receipts', first + i, a.leaf, now]));
  statement(`INSERT INTO log_nodes VALUES ${values(4, 2 * acts.length)}`).run(acts.flatMap((a, i) => ['receipts', first + i + 1, 0, a.hash, 'receipts', 2 * (first + i + 1), 1, a.hash]));
  statement(`INSERT INTO meter VALUES ${values(5, acts.length)}`).run(acts.flatMap((a) => ['key_floor', 'execute_gate', 100_000, a.id, now]));
  statement('UPDATE quotas SET used = used + ? WHERE key_id = ?').run([acts.length, 'key_floor']);
  db.exec('COMMIT');
  size += acts.length;
  group.forEach((res, i) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ decision: 'PERMIT', receipt_id: acts[i]!.id }));
  });
}

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c));
  req.on('end', () => {
    JSON.parse(body);
    if (waiting.push(res) === 1) setImmediate(commitGroup);
  });
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
