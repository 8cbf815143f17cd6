/**
 * Until issue 45, a keyless x402 payer acted as the public (owner ''), so an
 * ASTL entity it published was the public's and any other payer could publish
 * its next version. A payer now owns what it publishes, under its payer
 * account (accounts.ts `payerAccountId`). Each entity the public holds goes to
 * the payer of its first version, as that version's receipt names it; an
 * entity whose first receipt names no payment stays as it is.
 */
import { payerAccountId } from '../accounts.ts';
import { getReceipt } from '../receipts.ts';
import type { Transaction } from '../sql.ts';

/** The receipt of the entity's first version: the chain of manifests walked back from its head. */
async function firstReceipt(tx: Transaction, headId: string): Promise<string> {
  for (let id = headId; ;) {
    const m = (await tx.execute({ sql: 'SELECT receipt_id, prev_id FROM astl_manifests WHERE id = ?', args: [id] })).rows[0];
    if (!m) throw new Error(`ASTL manifest ${id} is missing from its entity's chain`);
    if (m.prev_id === null) return String(m.receipt_id);
    id = String(m.prev_id);
  }
}

export async function up(tx: Transaction): Promise<void> {
  const heads = await tx.execute("SELECT entity, manifest_id FROM astl_entities WHERE key_id = ''");
  for (const h of heads.rows) {
    const receipt = await getReceipt(tx, await firstReceipt(tx, String(h.manifest_id)));
    const payment = receipt?.payload.data?.payment as { payer?: unknown; network?: unknown } | undefined;
    if (typeof payment?.payer !== 'string' || typeof payment.network !== 'string') continue;
    await tx.execute({
      sql: 'UPDATE astl_entities SET key_id = ? WHERE entity = ?',
      args: [payerAccountId(payment.network, payment.payer), String(h.entity)],
    });
  }
}
