/**
 * Indexes the spend leaves redeemed before the exclusion trees existed, once:
 * one tree per key, built in one pass, in this migration's transaction (so a
 * redeem in another process waits for it and then adds to a complete tree).
 */
import type { Transaction } from '../sql.ts';
import { buildExclusionTree } from '../pas-exclusion.ts';

export async function up(tx: Transaction): Promise<void> {
  const owners = await tx.execute(
    'SELECT DISTINCT key_id FROM pas_spend_leaves WHERE key_id NOT IN (SELECT key_id FROM pas_exclusion_trees)',
  );
  for (const o of owners.rows) {
    const keyId = String(o.key_id);
    const jobs = await tx.execute({ sql: 'SELECT job_id FROM pas_spend_leaves WHERE key_id = ?', args: [keyId] });
    await buildExclusionTree(
      tx,
      keyId,
      jobs.rows.map((r) => String(r.job_id)),
    );
  }
}
