/**
 * Moving up: every row of an embedded database copied into an empty PostgreSQL
 * one (`fusegate database copy`, docs/postgresql.md#moving-up-from-the-embedded-file), then proved.
 *
 * Both ledgers are opened by this code, so both schemas are at its newest
 * step and hold the same tables and columns (test/schema-parity.test.ts). The
 * copy runs inside one write transaction on each side: the source's keeps
 * anything from writing to the file meanwhile and reads one state of it; the
 * target's commits every row or none. Rows go over in pages (keyset order,
 * multi-row inserts of the dialect), and before the target commits, the move
 * is proved from the rows it wrote: each table holds as many rows as its
 * source; each log has the same size, and the root folded from its copied
 * tiles equals the source's; and each earlier tree head (every power of two,
 * every size a witness cosigned) folded from the source's tiles is proved
 * consistent with the new root by a proof read from the target's tiles.
 */
import type { InValue } from '@libsql/client';
import { emptyRoot, foldRange, rangeNodes, verifyConsistency, type Hash } from '../../../crypto/merkle.ts';
import { edgeRoot } from '../../../crypto/tiles.ts';
import type { Ledger } from '../../ledger.ts';
import { consistencyProof, readEdge, readNodeHashes, treeHead } from '../../log.ts';
import { insertRows, type Sql } from '../../sql.ts';

/** Rows read and inserted at a time: a page of receipts' bundles stays a few megabytes. */
const PAGE_ROWS = 500;

/**
 * What a freshly migrated database holds already (the public logs, empty, and
 * the public drills' rows, owned by ''), by table: a target with nothing else
 * is empty, and these rows give way to the source's.
 */
const SEEDED: Record<string, string> = {
  logs: 'size = 0',
  fuses: "key_id = ''",
  pas_licenses: "key_id = ''",
  pas_authority_grants: "key_id = ''",
  health_probe: 'TRUE',
};

export class TargetNotEmptyError extends Error {
  override name = 'TargetNotEmptyError';
}

export interface CopiedLog {
  name: string;
  size: number;
  /** The root, base64, equal on both sides. */
  root: string;
  /** Earlier sizes whose source head was proved consistent with the target's. */
  consistentSizes: number[];
}

export interface CopyReport {
  tables: Array<{ table: string; rows: number }>;
  logs: CopiedLog[];
}

/** Called after each page of a table longer than one page: rows copied so far, of `total`. */
export type CopyProgress = (table: string, copied: number, total: number) => void;

const count = async (db: Sql, table: string, where = 'TRUE'): Promise<number> =>
  Number((await db.execute(`SELECT count(*) AS n FROM ${table} WHERE ${where}`)).rows[0]!.n);

/**
 * Copies the embedded `source` into the empty PostgreSQL `target` and proves
 * the move; throws (and the target keeps nothing) when the target is not
 * empty or a proof fails.
 */
export async function copyEmbeddedToPostgres(source: Ledger, target: Ledger, progress: CopyProgress = () => {}): Promise<CopyReport> {
  if (source.read.dialect.engine !== 'embedded') throw new Error('the source must be the embedded file');
  if (target.read.dialect.engine !== 'postgres') throw new Error('the target must be a PostgreSQL database');
  return source.write((src) =>
    target.write(async (dst) => {
      const tables = await copyOrder(await sourceTables(src), dst);
      await checkEmpty(tables, dst);
      for (const table of Object.keys(SEEDED)) await dst.execute(`DELETE FROM ${table}`);
      const report: CopyReport = { tables: [], logs: [] };
      for (const table of tables) report.tables.push({ table, rows: await copyTable(src, dst, table, progress) });
      await resetIdentities(dst);
      for (const { table, rows } of report.tables) {
        const copied = await count(dst, table);
        if (copied !== rows) throw new Error(`table ${table}: ${rows} rows in the source, ${copied} in the target`);
      }
      for (const r of (await src.execute('SELECT name FROM logs ORDER BY name')).rows)
        report.logs.push(await proveLog(src, dst, String(r.name)));
      return report;
    }),
  );
}

async function sourceTables(src: Sql): Promise<string[]> {
  const rs = await src.execute(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY name",
  );
  return rs.rows.map((r) => String(r.name));
}

/**
 * The source's tables, checked to be the target's, in an order where a table
 * comes after every table its foreign keys reference (the target checks them
 * at each insert).
 */
async function copyOrder(tables: readonly string[], dst: Sql): Promise<string[]> {
  const rs = await dst.execute(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'",
  );
  const there = new Set(rs.rows.map((r) => String(r.name)));
  const missing = tables.filter((t) => !there.delete(t));
  if (missing.length > 0 || there.size > 0)
    throw new Error(
      `the two schemas differ (only in the source: ${missing.join(', ') || 'none'}; only in the target: ${[...there].join(', ') || 'none'})`,
    );
  const fks = await dst.execute(
    "SELECT conrelid::regclass::text AS child, confrelid::regclass::text AS parent FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace",
  );
  const parents = new Map(tables.map((t) => [t, new Set<string>()]));
  for (const r of fks.rows) if (r.child !== r.parent) parents.get(String(r.child))?.add(String(r.parent));
  const ordered: string[] = [];
  const placed = new Set<string>();
  while (ordered.length < tables.length) {
    const ready = tables.filter((t) => !placed.has(t) && [...parents.get(t)!].every((p) => placed.has(p)));
    if (ready.length === 0) throw new Error('the foreign keys of the target form a cycle');
    for (const t of ready) (ordered.push(t), placed.add(t));
  }
  return ordered;
}

async function checkEmpty(tables: readonly string[], dst: Sql): Promise<void> {
  const held: string[] = [];
  for (const table of tables) {
    const n = await count(dst, table, SEEDED[table] ? `NOT (${SEEDED[table]})` : 'TRUE');
    if (n > 0) held.push(`${table} (${n})`);
  }
  if (held.length > 0)
    throw new TargetNotEmptyError(`the target database is not empty: it holds rows in ${held.join(', ')}; copy into a new database`);
}

/**
 * The columns a keyset page is ordered by: the rowid (SQLite's own order,
 * which the target's identity `rowid` columns then follow), or the primary key
 * of a table WITHOUT ROWID.
 */
async function pageKey(src: Sql, table: string): Promise<string[]> {
  const withoutRowid =
    Number((await src.execute({ sql: 'SELECT wr FROM pragma_table_list WHERE name = ?', args: [table] })).rows[0]?.wr ?? 0) === 1;
  if (!withoutRowid) return ['rowid'];
  const rs = await src.execute({ sql: 'SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk', args: [table] });
  return rs.rows.map((r) => String(r.name));
}

async function copyTable(src: Sql, dst: Sql, table: string, progress: CopyProgress): Promise<number> {
  const total = await count(src, table);
  const columns = (await src.execute({ sql: 'SELECT name FROM pragma_table_info(?) ORDER BY cid', args: [table] })).rows.map((r) =>
    String(r.name),
  );
  const key = await pageKey(src, table);
  const keyAs = key.map((k, i) => `${k} AS copy_key_${i}`);
  const select = `SELECT ${[...columns, ...keyAs].join(', ')} FROM ${table}`;
  const order = ` ORDER BY ${key.join(', ')} LIMIT ${PAGE_ROWS}`;
  const after = ` WHERE (${key.join(', ')}) > (${key.map(() => '?').join(', ')})`;
  let last: InValue[] | undefined;
  let copied = 0;
  for (;;) {
    const rs = await src.execute(last ? { sql: select + after + order, args: last } : select + order);
    if (rs.rows.length === 0) break;
    await insertRows(
      dst,
      table,
      columns,
      rs.rows.map((r) => columns.map((c) => r[c] as InValue)),
    );
    copied += rs.rows.length;
    if (total > PAGE_ROWS) progress(table, copied, total);
    const end = rs.rows.at(-1)!;
    last = key.map((_, i) => end[`copy_key_${i}`] as InValue);
    if (rs.rows.length < PAGE_ROWS) break;
  }
  if (copied !== total) throw new Error(`table ${table}: ${total} rows in the source, ${copied} read from it`);
  return copied;
}

/** Identity columns given their values by the copy: their sequences move past the largest, so the next insert takes a new one. */
async function resetIdentities(dst: Sql): Promise<void> {
  const rs = await dst.execute(
    "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES'",
  );
  for (const r of rs.rows) {
    const [table, column] = [String(r.table_name), String(r.column_name)];
    await dst.execute({
      sql: `SELECT setval(pg_get_serial_sequence(?, ?), (SELECT COALESCE(max(${column}), 0) + 1 FROM ${table}), false)`,
      args: [table, column],
    });
  }
}

/** The root of the first `size` leaves, folded from the stored tiles (not from the log's edge). */
async function tileRoot(db: Sql, log: string, size: number): Promise<Hash> {
  return size === 0 ? emptyRoot() : foldRange(await readNodeHashes(db, log, rangeNodes(0, size)));
}

const b64 = (h: Hash): string => Buffer.from(h).toString('base64');

async function proveLog(src: Sql, dst: Sql, log: string): Promise<CopiedLog> {
  const [before, after] = [await readEdge(src, log), await readEdge(dst, log)];
  if (before.size !== after.size) throw new Error(`log ${log}: size ${before.size} in the source, ${after.size} in the target`);
  const size = after.size;
  const root = edgeRoot(after) ?? emptyRoot();
  const roots: Array<[string, Hash]> = [
    ["the source's edge", edgeRoot(before) ?? emptyRoot()],
    ["the source's tiles", await tileRoot(src, log, size)],
    ['the copied tiles', await tileRoot(dst, log, size)],
  ];
  const differ = roots.filter(([, r]) => b64(r) !== b64(root)).map(([what]) => what);
  if (differ.length > 0) throw new Error(`log ${log}: the roots at size ${size} differ (${differ.join(' and ')} against the copied edge)`);
  const consistentSizes = await earlierSizes(src, log, size);
  for (const m of consistentSizes) {
    const old = await treeHead(src, log, m);
    verifyConsistency(m, size, await consistencyProof(dst, log, m, size), old.root, root);
  }
  return { name: log, size, root: b64(root), consistentSizes };
}

/** Earlier sizes to prove: every power of two below `size`, the size before the last leaf, and every size a witness cosigned. */
async function earlierSizes(src: Sql, log: string, size: number): Promise<number[]> {
  const sizes = new Set<number>();
  for (let m = 1; m < size; m *= 2) sizes.add(m);
  if (size > 1) sizes.add(size - 1);
  const rs = await src.execute({
    sql: 'SELECT tree_size FROM witness_cosignatures WHERE log = ? UNION SELECT cosigned_size FROM witness_state WHERE log = ? AND cosigned_size IS NOT NULL',
    args: [log, log],
  });
  for (const r of rs.rows) {
    const m = Number(r.tree_size);
    if (m >= 1 && m < size) sizes.add(m);
  }
  return [...sizes].sort((a, b) => a - b);
}
