/** Relay partners and their track-link clicks (SPEC 2.4). */
import type { Client, Transaction } from './sql.ts';
import { nowIso } from '../ids.ts';

export interface Partner {
  partner_id: string;
  key_id: string;
  name: string;
  receipt_id: string;
  created_at: string;
}

export async function getPartner(db: Client | Transaction, id: string): Promise<Partner | undefined> {
  const r = (
    await db.execute({
      sql: 'SELECT partner_id, key_id, name, receipt_id, created_at FROM relay_partners WHERE partner_id = ?',
      args: [id],
    })
  ).rows[0];
  return r
    ? {
        partner_id: String(r.partner_id),
        key_id: String(r.key_id),
        name: String(r.name),
        receipt_id: String(r.receipt_id),
        created_at: String(r.created_at),
      }
    : undefined;
}

/** Inserts a partner; false when the id is taken. */
export async function insertPartner(tx: Transaction, p: Partner): Promise<boolean> {
  const rs = await tx.execute({
    sql: 'INSERT INTO relay_partners (partner_id, key_id, name, receipt_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (partner_id) DO NOTHING',
    args: [p.partner_id, p.key_id, p.name, p.receipt_id, p.created_at],
  });
  return rs.rowsAffected > 0;
}

export async function countClick(tx: Transaction, partnerId: string, target: string): Promise<void> {
  const now = nowIso();
  await tx.execute({
    sql: `INSERT INTO relay_clicks (partner_id, target, clicks, last_click_at) VALUES (?, ?, 1, ?)
          ON CONFLICT (partner_id, target) DO UPDATE SET clicks = relay_clicks.clicks + 1, last_click_at = excluded.last_click_at`,
    args: [partnerId, target, now],
  });
}

export async function partnerClicks(db: Client, partnerId: string): Promise<Record<string, number>> {
  const rs = await db.execute({ sql: 'SELECT target, clicks FROM relay_clicks WHERE partner_id = ?', args: [partnerId] });
  return Object.fromEntries(rs.rows.map((r) => [String(r.target), Number(r.clicks)]));
}

export interface NetworkTotals {
  partners: number;
  clicks_total: number;
  clicks_by_target: Record<string, number>;
  top_partners: Array<{ partner_id: string; clicks: number }>;
}

export async function relayNetwork(db: Client, top = 20): Promise<NetworkTotals> {
  const partners = Number((await db.execute('SELECT COUNT(*) AS n FROM relay_partners')).rows[0]!.n);
  const byTarget = await db.execute('SELECT target, SUM(clicks) AS n FROM relay_clicks GROUP BY target ORDER BY target');
  const best = await db.execute({
    sql: 'SELECT partner_id, SUM(clicks) AS n FROM relay_clicks GROUP BY partner_id ORDER BY n DESC, partner_id LIMIT ?',
    args: [top],
  });
  const clicks_by_target = Object.fromEntries(byTarget.rows.map((r) => [String(r.target), Number(r.n)]));
  return {
    partners,
    clicks_total: Object.values(clicks_by_target).reduce((a, b) => a + b, 0),
    clicks_by_target,
    top_partners: best.rows.map((r) => ({ partner_id: String(r.partner_id), clicks: Number(r.n) })),
  };
}
