/**
 * A receipt's row stops holding a copy of its receipts-log leaf (issue 13, write
 * path). The leaf is the receipt: the canonical JSON of a batch-sealed receipt's
 * payload, or a self-contained receipt's JWS, whose payload is that same JSON.
 * The row keeps what is searched (kind, decision, subject, key, time) and where
 * the leaf is (log_index), and is keyed by its id without a rowid, so one
 * receipt costs one B-tree entry fewer and a fraction of the bytes.
 *
 * Every receipt was appended to the receipts log with the row that names it; a
 * row without its leaf would lose its payload here, so the migration refuses to
 * run on such a database instead.
 */
import type { Transaction } from '../sql.ts';

export async function up(tx: Transaction): Promise<void> {
  const orphans = await tx.execute(
    "SELECT COUNT(*) AS n FROM receipts r WHERE r.log_index IS NULL OR NOT EXISTS (SELECT 1 FROM log_entries e WHERE e.log = 'receipts' AND e.idx = r.log_index)",
  );
  const n = Number(orphans.rows[0]!.n);
  if (n > 0) throw new Error(`${n} receipt rows have no receipts-log leaf; their payload would be lost (restore the log before upgrading)`);
  for (const sql of [
    `CREATE TABLE receipts_by_id (
       id TEXT PRIMARY KEY,
       log_index INTEGER NOT NULL,
       kind TEXT NOT NULL,
       decision TEXT NOT NULL,
       subject TEXT,
       key_id TEXT,
       created_at TEXT NOT NULL
     ) WITHOUT ROWID`,
    'INSERT INTO receipts_by_id (id, log_index, kind, decision, subject, key_id, created_at) SELECT id, log_index, kind, decision, subject, key_id, created_at FROM receipts ORDER BY id',
    'DROP TABLE receipts',
    'ALTER TABLE receipts_by_id RENAME TO receipts',
    'CREATE INDEX receipts_by_subject ON receipts (subject)',
    'CREATE INDEX receipts_by_key ON receipts (key_id, created_at)',
  ]) {
    await tx.execute(sql);
  }
}
