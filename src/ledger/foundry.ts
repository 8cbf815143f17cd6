/**
 * Foundry pipeline runs (SPEC 2.5, 4.2): each sealed run's report, per key and
 * tenant, for the tenant projection. What a run computes is in
 * src/domain/foundry.ts; src/api/site/foundry.ts decides and answers.
 */
import { recordWriter, type RecordWriter } from './records.ts';
import { insertRows, type Client, type Transaction } from './sql.ts';

export interface FoundryRunRow {
  id: string;
  /** The owning account (ownerId). */
  owner: string;
  tenantId: string;
  /** The run's report, stored as JSON. */
  report: unknown;
  receiptId: string;
  createdAt: string;
}

/** Multi-row: an act declares its row among its writes (records.ts), written with its group's. */
export async function insertFoundryRuns(tx: Transaction, rows: readonly FoundryRunRow[]): Promise<void> {
  await insertRows(
    tx,
    'foundry_runs',
    ['id', 'key_id', 'tenant_id', 'report', 'receipt_id', 'created_at'],
    rows.map((r) => [r.id, r.owner, r.tenantId, JSON.stringify(r.report), r.receiptId, r.createdAt]),
  );
}

/** A foundry run. Written with its group's records (records.ts). */
export const FOUNDRY_RUNS: RecordWriter<FoundryRunRow> = recordWriter('foundry_runs', insertFoundryRuns);

/** How many runs the account `owner` made for `tenantId`, the first one's time, and how many since `since`; undefined when none. */
export async function tenantRunCounts(
  db: Client | Transaction,
  owner: string,
  tenantId: string,
  since: string,
): Promise<{ runs: number; first_at: string; recent: number } | undefined> {
  const r = (
    await db.execute({
      sql: 'SELECT COUNT(*) AS runs, MIN(created_at) AS first_at, COALESCE(SUM(CASE WHEN created_at >= ? THEN 1 ELSE 0 END), 0) AS recent FROM foundry_runs WHERE key_id = ? AND tenant_id = ?',
      args: [since, owner, tenantId],
    })
  ).rows[0]!;
  if (Number(r.runs) === 0) return undefined;
  return { runs: Number(r.runs), first_at: String(r.first_at), recent: Number(r.recent) };
}

/** The newest run the account `owner` made for `tenantId` (its report parsed), or undefined. */
export async function latestTenantRun(
  db: Client | Transaction,
  owner: string,
  tenantId: string,
): Promise<{ id: string; receipt_id: string; created_at: string; report: unknown } | undefined> {
  const r = (
    await db.execute({
      sql: 'SELECT id, receipt_id, created_at, report FROM foundry_runs WHERE key_id = ? AND tenant_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1',
      args: [owner, tenantId],
    })
  ).rows[0];
  return (
    r && { id: String(r.id), receipt_id: String(r.receipt_id), created_at: String(r.created_at), report: JSON.parse(String(r.report)) }
  );
}
