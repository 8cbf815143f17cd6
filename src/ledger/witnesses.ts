/**
 * What the gate knows of its witnesses (migration 0220): per log and witness
 * the size it holds and the last size it cosigned, and every cosignature kept.
 * `cosignedCheckpoint` is the one way a checkpoint is served: the log's signed
 * note with the cosignature lines known for its size appended after the log's
 * own signature (C2SP signed-note allows any number of signature lines).
 */
import type { WitnessPolicy } from '../crypto/witness-policy.ts';
import { quorumHolds } from '../crypto/witness-policy.ts';
import { nowIso } from '../ids.ts';
import { signCheckpoint, signedCheckpoint, type CheckpointSigner, type SignedCheckpoint } from './checkpoint.ts';
import { treeHead } from './log.ts';
import type { Sql } from './sql.ts';

/** What serving a cosigned checkpoint needs: a checkpoint signer and the witness policy (null: no witnessing). */
export interface WitnessedSigner extends CheckpointSigner {
  witnessPolicy?: WitnessPolicy | null;
}

export interface WitnessState {
  log: string;
  vkey: string;
  name: string;
  known_size: number;
  cosigned_size: number | null;
  cosigned_at: string | null;
  last_error: string | null;
  error_at: string | null;
  failures: number;
}

export interface Cosigner {
  /** The witness's name in the policy. */
  name: string;
  vkey: string;
  cosigned_at: string;
}

export interface CosignedCheckpoint extends SignedCheckpoint {
  /** The witnesses (of the current policy) whose cosignature lines the note carries. */
  cosigners: Cosigner[];
  /** Whether those cosigners satisfy the policy's quorum (false without a policy). */
  quorum: boolean;
}

/** The witness's answers: it holds `size` (after a 409), without having cosigned it for us. */
export async function recordWitnessSize(tx: Sql, log: string, vkey: string, name: string, size: number): Promise<void> {
  await tx.execute({
    sql: `INSERT INTO witness_state (log, vkey, name, known_size) VALUES (?, ?, ?, ?)
          ON CONFLICT (log, vkey) DO UPDATE SET name = excluded.name, known_size = excluded.known_size`,
    args: [log, vkey, name, size],
  });
}

/** A verified cosignature of the checkpoint of `log` at `size`: kept, and the witness's state moved to it. */
export async function recordCosignature(tx: Sql, log: string, vkey: string, name: string, size: number, line: string): Promise<void> {
  const at = nowIso();
  await tx.execute({
    sql: `INSERT INTO witness_cosignatures (log, tree_size, vkey, line, cosigned_at) VALUES (?, ?, ?, ?, ?)
          ON CONFLICT (log, tree_size, vkey) DO UPDATE SET line = excluded.line, cosigned_at = excluded.cosigned_at`,
    args: [log, size, vkey, line, at],
  });
  await tx.execute({
    sql: `INSERT INTO witness_state (log, vkey, name, known_size, cosigned_size, cosigned_at, failures) VALUES (?, ?, ?, ?, ?, ?, 0)
          ON CONFLICT (log, vkey) DO UPDATE SET name = excluded.name, known_size = excluded.known_size,
            cosigned_size = excluded.cosigned_size, cosigned_at = excluded.cosigned_at, failures = 0`,
    args: [log, vkey, name, size, size, at],
  });
}

/** A failed submission (status, timeout, bad cosignature): recorded, the state it holds unchanged. */
export async function recordWitnessError(tx: Sql, log: string, vkey: string, name: string, error: string): Promise<void> {
  await tx.execute({
    sql: `INSERT INTO witness_state (log, vkey, name, last_error, error_at, failures) VALUES (?, ?, ?, ?, ?, 1)
          ON CONFLICT (log, vkey) DO UPDATE SET name = excluded.name, last_error = excluded.last_error,
            error_at = excluded.error_at, failures = witness_state.failures + 1`,
    args: [log, vkey, name, error.slice(0, 500), nowIso()],
  });
}

const str = (v: unknown) => (v === null || v === undefined ? null : String(v));

export async function witnessStates(db: Sql, log: string): Promise<WitnessState[]> {
  const rs = await db.execute({ sql: 'SELECT * FROM witness_state WHERE log = ?', args: [log] });
  return rs.rows.map((r) => ({
    log: String(r.log),
    vkey: String(r.vkey),
    name: String(r.name),
    known_size: Number(r.known_size),
    cosigned_size: r.cosigned_size === null ? null : Number(r.cosigned_size),
    cosigned_at: str(r.cosigned_at),
    last_error: str(r.last_error),
    error_at: str(r.error_at),
    failures: Number(r.failures),
  }));
}

interface StoredLine {
  size: number;
  vkey: string;
  line: string;
  at: string;
}

/** The current policy's witnesses among stored lines, and whether they make the quorum. */
function judge(policy: WitnessPolicy | null | undefined, lines: StoredLine[]): { cosigners: Cosigner[]; lines: string[]; quorum: boolean } {
  if (!policy) return { cosigners: [], lines: [], quorum: false };
  const byVkey = new Map(policy.witnesses.map((w) => [w.key.vkey, w]));
  const kept = lines.filter((l) => byVkey.has(l.vkey));
  const cosigners = kept.map((l) => ({ name: byVkey.get(l.vkey)!.name, vkey: l.vkey, cosigned_at: l.at }));
  return {
    cosigners,
    lines: kept.map((l) => l.line),
    quorum: policy.witnesses.length > 0 && quorumHolds(policy, new Set(cosigners.map((c) => c.name))),
  };
}

async function linesAt(db: Sql, log: string, sizes: number[]): Promise<StoredLine[]> {
  if (sizes.length === 0) return [];
  const rs = await db.execute({
    sql: `SELECT tree_size, vkey, line, cosigned_at FROM witness_cosignatures WHERE log = ? AND tree_size IN (${sizes.map(() => '?').join(', ')}) ORDER BY vkey`,
    args: [log, ...sizes],
  });
  return rs.rows.map((r) => ({ size: Number(r.tree_size), vkey: String(r.vkey), line: String(r.line), at: String(r.cosigned_at) }));
}

function withLines(cp: SignedCheckpoint, policy: WitnessPolicy | null | undefined, stored: StoredLine[]): CosignedCheckpoint {
  const j = judge(policy, stored);
  return { ...cp, note: cp.note + j.lines.join(''), cosigners: j.cosigners, quorum: j.quorum };
}

/**
 * THE checkpoint to serve: the signed checkpoint of `log` at `size` (default:
 * its current size) followed by every cosignature known for that size from the
 * witnesses of the current policy. Any endpoint that serves a checkpoint calls this.
 */
export async function cosignedCheckpoint(ctx: WitnessedSigner, log: string, size?: number): Promise<CosignedCheckpoint> {
  const cp = await signedCheckpoint(ctx, log, size);
  return withLines(cp, ctx.witnessPolicy, ctx.witnessPolicy ? await linesAt(ctx.ledger.read, log, [cp.size]) : []);
}

/** The same for a head the caller already holds (see signCheckpoint). */
export async function cosignHead(ctx: WitnessedSigner, log: string, head: { size: number; root: Uint8Array }): Promise<CosignedCheckpoint> {
  const cp = signCheckpoint(ctx, log, head);
  return withLines(cp, ctx.witnessPolicy, ctx.witnessPolicy ? await linesAt(ctx.ledger.read, log, [cp.size]) : []);
}

/**
 * The checkpoint a proof of entry `index` should be made against: the first
 * cosigned size past `index` where the quorum holds, else the size past it with
 * the most cosignatures; undefined when no witness cosigned one yet. Sizes
 * witnessed later only add cosigned checkpoints, so once the quorum holds the
 * answer stays until the hour-old cosignatures are thinned (thinCosignatures):
 * then it may move to a later cosigned checkpoint, which proves the entry as well.
 */
export async function witnessedSizeCovering(ctx: WitnessedSigner, log: string, index: number): Promise<CosignedCheckpoint | undefined> {
  if (!ctx.witnessPolicy || ctx.witnessPolicy.witnesses.length === 0) return undefined;
  const rs = await ctx.ledger.read.execute({
    sql: 'SELECT DISTINCT tree_size FROM witness_cosignatures WHERE log = ? AND tree_size > ? ORDER BY tree_size LIMIT 16',
    args: [log, index],
  });
  const sizes = rs.rows.map((r) => Number(r.tree_size));
  const stored = await linesAt(ctx.ledger.read, log, sizes);
  let best: { size: number; count: number } | undefined;
  for (const size of sizes) {
    const j = judge(
      ctx.witnessPolicy,
      stored.filter((l) => l.size === size),
    );
    if (j.quorum) return cosignHead(ctx, log, await treeHead(ctx.ledger.read, log, size));
    if (j.cosigners.length > (best?.count ?? 0)) best = { size, count: j.cosigners.length };
  }
  return best ? cosignHead(ctx, log, await treeHead(ctx.ledger.read, log, best.size)) : undefined;
}

/** The newest checkpoint of `log` that any witness cosigned, if one exists. */
export async function latestWitnessed(ctx: WitnessedSigner, log: string): Promise<CosignedCheckpoint | undefined> {
  if (!ctx.witnessPolicy) return undefined;
  const rs = await ctx.ledger.read.execute({ sql: 'SELECT MAX(tree_size) AS s FROM witness_cosignatures WHERE log = ?', args: [log] });
  const s = rs.rows[0]?.s;
  return s === null || s === undefined ? undefined : cosignedCheckpoint(ctx, log, Number(s));
}

/** Cosignatures are kept whole for this long, then thinned to one cosigned checkpoint per log and minute. */
export const COSIGNATURES_KEPT_WHOLE_MS = 3_600_000;

/**
 * Thins the cosigned checkpoints of `log` made before `before` (RFC 3339) and
 * past size `after` to one per minute: the size most witnesses cosigned in that
 * minute (the smallest on a tie). Every entry stays proven by a cosigned
 * checkpoint (a later one); storage grows by minutes, not by submissions.
 * Returns the largest size it looked at, the `after` of the next call.
 */
export async function thinCosignatures(tx: Sql, log: string, before: string, after: number): Promise<number> {
  const rs = await tx.execute({
    sql: `SELECT tree_size, substr(MIN(cosigned_at), 1, 16) AS minute, COUNT(*) AS n FROM witness_cosignatures
          WHERE log = ? AND tree_size > ? GROUP BY tree_size HAVING MAX(cosigned_at) < ? ORDER BY tree_size`,
    args: [log, after, before],
  });
  const rows = rs.rows.map((r) => ({ size: Number(r.tree_size), minute: String(r.minute), n: Number(r.n) }));
  const best = new Map<string, { size: number; n: number }>();
  for (const r of rows) {
    const b = best.get(r.minute);
    if (!b || r.n > b.n) best.set(r.minute, r);
  }
  const drop = rows.filter((r) => best.get(r.minute)!.size !== r.size).map((r) => r.size);
  for (let i = 0; i < drop.length; i += 200) {
    const chunk = drop.slice(i, i + 200);
    await tx.execute({
      sql: `DELETE FROM witness_cosignatures WHERE log = ? AND tree_size IN (${chunk.map(() => '?').join(', ')})`,
      args: [log, ...chunk],
    });
  }
  // The newest minute may still get rows: look at it again next time.
  const lastMinute = rows.at(-1)?.minute;
  const settled = rows.filter((r) => r.minute !== lastMinute);
  return settled.length ? settled.at(-1)!.size : after;
}
