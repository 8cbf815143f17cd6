/**
 * Spend caps (docs/accounts.md#spend-caps): the most a key, and an account,
 * may be charged in a UTC calendar month (micro-USD; null: no cap).
 *
 * The act pipeline (acts.ts) reads each key's cap, its account's cap and what
 * each spent this month in the very statement that reads the hop quotas
 * (hop-counters.ts readHopQuotas), under the write lock; a key and an account
 * without a cap read nothing more (each sum sits behind a CASE on the cap).
 * What was spent is the sum of the usage counters of the month (meter.ts), the
 * rows the group commit already adds to once per batch: a cap costs no write
 * of its own, is exact across processes and nodes (the batches serialise on
 * the receipts log's head), and a cap set mid-month counts the month from its
 * first day. Each charge an act states (`state.receipt(.., { charges })`) is
 * checked against both caps as the receipt is minted: past either one the act
 * is refused (SpendCapReached) and writes nothing.
 *
 * When a key or an account reaches 80 % of its cap, the group writes one
 * `spend.threshold` alert (webhooks.ts) and a spend_alerts row, so that the
 * alert goes out once per owner and month.
 */
import { formatUsd } from '../catalog/money.ts';
import { newId, nowIso } from '../ids.ts';
import { record, recordWriter, type ActRecord } from './records.ts';
import { insertRows, type Client, type Fragment, type Transaction } from './sql.ts';
import { ALERT_DELIVERIES } from './webhooks.ts';

/** The share of a cap at which the spend alert goes out, as a fraction num/den (80 %). */
const ALERT_AT = { num: 4n, den: 5n };

/** The first day of `now`'s UTC month (as usage_counters.day is written) and its label (YYYY-MM). */
export function monthOf(now: Date): { firstDay: string; label: string } {
  const label = now.toISOString().slice(0, 7);
  return { firstDay: `${label}-01`, label };
}

/** When the month of `now` ends and spending counts from zero again. */
export function monthReset(now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
}

/**
 * Micro-USD spent, summed from usage_counters rows `u` (whole USD and remainders, meter.ts), as
 * text: "<usd> <micros>", each sum exact in either engine and joined in JavaScript (`spentOf`), since
 * their total in micro-USD passes what a JavaScript number holds exactly (and SQLite's integers).
 */
const SPENT = `CAST(COALESCE(SUM(u.usd), 0) AS TEXT) || ' ' || CAST(COALESCE(SUM(u.micros), 0) AS TEXT)`;

/** The micro-USD a SPENT text stands for ('0' where no cap asked for it). */
function spentOf(text: unknown): bigint {
  const [usd = '0', micros = '0'] = String(text ?? '0').split(' ');
  return BigInt(usd) * 1_000_000n + BigInt(micros);
}

/**
 * The select-list of readHopQuotas' statement that reads the caps: over
 * `api_keys` joined to its account as `a` (LEFT JOIN accounts a). Every
 * subquery runs only for a cap that is set.
 */
export function spendColumns(now: Date): Fragment {
  const { firstDay, label } = monthOf(now);
  return {
    sql: `api_keys.account_id AS account_id, api_keys.spend_cap_micros AS key_cap, a.spend_cap_micros AS account_cap,
    CASE WHEN api_keys.spend_cap_micros IS NULL THEN '0' ELSE (SELECT ${SPENT} FROM usage_counters u WHERE u.key_id = api_keys.id AND u.day >= ?) END AS key_spent,
    CASE WHEN api_keys.spend_cap_micros IS NULL THEN 0 ELSE (SELECT COUNT(*) FROM spend_alerts s WHERE s.owner_id = api_keys.id AND s.month = ?) END AS key_alerted,
    CASE WHEN a.spend_cap_micros IS NULL THEN '0' ELSE (SELECT ${SPENT} FROM usage_counters u JOIN api_keys k ON k.id = u.key_id WHERE k.account_id = api_keys.account_id AND u.day >= ?) END AS account_spent,
    CASE WHEN a.spend_cap_micros IS NULL THEN 0 ELSE (SELECT COUNT(*) FROM spend_alerts s WHERE s.owner_id = api_keys.account_id AND s.month = ?) END AS account_alerted`,
    args: [firstDay, label, firstDay, label],
  };
}

/** What a key, or every key of an account, was charged since the first of `now`'s UTC month (for pages; acts read it under the lock). */
export async function spentThisMonth(
  db: Client | Transaction,
  owner: { keyId: string } | { accountId: string },
  now = new Date(),
): Promise<bigint> {
  const { firstDay } = monthOf(now);
  const rs = await db.execute(
    'keyId' in owner
      ? { sql: `SELECT ${SPENT} AS spent FROM usage_counters u WHERE u.key_id = ? AND u.day >= ?`, args: [owner.keyId, firstDay] }
      : {
          sql: `SELECT ${SPENT} AS spent FROM usage_counters u JOIN api_keys k ON k.id = u.key_id WHERE k.account_id = ? AND u.day >= ?`,
          args: [owner.accountId, firstDay],
        },
  );
  return spentOf(rs.rows[0]?.spent);
}

/** A capped owner's month under the write lock: its cap, what it spent before this batch, what the batch adds. */
export interface CapState {
  scope: 'key' | 'account';
  /** The key id or the account id. */
  id: string;
  accountId: string;
  capMicros: bigint;
  spent: bigint;
  added: bigint;
  /** Its 80 % alert already went out this month. */
  alerted: boolean;
}

/** A key's caps (its own, its account's), or undefined when neither is set. */
export interface KeySpend {
  key: CapState | undefined;
  account: CapState | undefined;
}

/** The caps of a row of spendColumns; `accounts` shares one state per account across the group's keys. */
export function keySpendOf(keyId: string, r: Record<string, unknown>, accounts: Map<string, CapState>): KeySpend | undefined {
  if (r.key_cap == null && r.account_cap == null) return undefined;
  const accountId = String(r.account_id);
  const key = r.key_cap == null ? undefined : capState('key', keyId, accountId, r.key_cap, r.key_spent, r.key_alerted);
  let account: CapState | undefined;
  if (r.account_cap != null) {
    account = accounts.get(accountId);
    if (!account)
      accounts.set(accountId, (account = capState('account', accountId, accountId, r.account_cap, r.account_spent, r.account_alerted)));
  }
  return { key, account };
}

const capState = (scope: CapState['scope'], id: string, accountId: string, cap: unknown, spent: unknown, alerted: unknown): CapState => ({
  scope,
  id,
  accountId,
  capMicros: BigInt(String(cap)),
  spent: spentOf(spent),
  added: 0n,
  alerted: Number(alerted) > 0,
});

/** A charge that would take a key or its account past its monthly spend cap: the act is refused, nothing is written. */
export class SpendCapReached extends Error {
  override name = 'SpendCapReached';
  readonly scope: 'key' | 'account';
  readonly ownerId: string;
  readonly keyId: string;
  readonly capMicros: bigint;
  /** Spent this month before this act. */
  readonly spentMicros: bigint;
  /** What this act would have charged. */
  readonly chargeMicros: bigint;
  constructor(cap: CapState, keyId: string, chargeMicros: bigint) {
    super(
      `${cap.scope} ${cap.id} has spent ${formatUsd(cap.spent + cap.added)} USD of its ${formatUsd(cap.capMicros)} USD monthly spend cap; this act would charge ${formatUsd(chargeMicros)} USD`,
    );
    this.scope = cap.scope;
    this.ownerId = cap.id;
    this.keyId = keyId;
    this.capMicros = cap.capMicros;
    this.spentMicros = cap.spent + cap.added;
    this.chargeMicros = chargeMicros;
  }
}

/**
 * Checks that `amount` fits under the key's caps (throws SpendCapReached if
 * not) and answers how to count it once the act has succeeded: an act that
 * fails after minting its receipt adds nothing.
 */
export function checkSpend(spend: KeySpend, keyId: string, amount: bigint): () => void {
  const caps = [spend.key, spend.account].filter((c): c is CapState => c !== undefined);
  for (const c of caps) if (c.spent + c.added + amount > c.capMicros) throw new SpendCapReached(c, keyId, amount);
  return () => {
    for (const c of caps) c.added += amount;
  };
}

/** The rows a group writes for the caps it took to 80 % this month: the alert's webhook deliveries and its spend_alerts row. */
export function spendAlerts(caps: Iterable<CapState>, now: Date): ActRecord[] {
  const out: ActRecord[] = [];
  const { label } = monthOf(now);
  const at = nowIso(now);
  for (const c of caps) {
    const total = c.spent + c.added;
    if (c.alerted || c.added === 0n || total * ALERT_AT.den < c.capMicros * ALERT_AT.num) continue;
    c.alerted = true;
    const event_id = newId('evt');
    const data = {
      scope: c.scope,
      ...(c.scope === 'key' ? { key_id: c.id } : {}),
      account_id: c.accountId,
      month: label,
      spend_cap_usd: formatUsd(c.capMicros),
      spent_usd: formatUsd(total),
      remaining_usd: formatUsd(total > c.capMicros ? 0n : c.capMicros - total),
      threshold_percent: 80,
    };
    out.push(
      record(ALERT_DELIVERIES, {
        owner: c.accountId,
        event_id,
        type: 'spend.threshold',
        fuse_id: null,
        body: { event_id, type: 'spend.threshold', at, fuse_id: null, data },
      }),
    );
    out.push(record(SPEND_ALERTS, { owner_id: c.id, month: label, at }));
  }
  return out;
}

/** That an owner's 80 % alert went out in a month (kept so that it goes out once). */
const SPEND_ALERTS = recordWriter<{ owner_id: string; month: string; at: string }>('spend_alerts', (tx, rows) =>
  insertRows(
    tx,
    'spend_alerts',
    ['owner_id', 'month', 'at'],
    rows.map((r) => [r.owner_id, r.month, r.at]),
    ' ON CONFLICT (owner_id, month) DO NOTHING',
  ),
);
