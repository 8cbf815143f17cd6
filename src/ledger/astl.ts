/**
 * ASTL manifests: each publish appends a JSON leaf to the `astl` log and
 * indexes it here. A republish is a new version; nothing is rewritten.
 */
import type { Transaction } from './sql.ts';
import { canonicalJson } from '../crypto/canonical.ts';
import { readEntriesAt, type Db, type Inclusion } from './log.ts';

export const ASTL_LOG = 'astl';

/** The leaf of a manifest, exactly as logged (its canonical JSON is the leaf bytes). */
export interface ManifestLeaf {
  type: 'astl.manifest';
  manifest_id: string;
  entity: string;
  version: number;
  act_kinds: string[];
  /** RFC 9162 root (base64) of the sorted act kinds: the head absence witnesses are checked against. */
  surface_root: string;
  published_at: string;
}

export interface StoredManifest extends ManifestLeaf {
  key_id: string;
  log_index: number;
  leaf_hash: string;
  receipt_id: string;
}

export const leafBytes = (v: unknown): Uint8Array => new TextEncoder().encode(canonicalJson(v));

/** Owner key of an entity (its first publisher) and its latest version. */
export async function entityHead(db: Db, entity: string): Promise<{ key_id: string; version: number } | undefined> {
  const rs = await db.execute({
    sql: 'SELECT key_id, version FROM astl_manifests WHERE entity = ? ORDER BY version DESC LIMIT 1',
    args: [entity],
  });
  const r = rs.rows[0];
  return r ? { key_id: String(r.key_id), version: Number(r.version) } : undefined;
}

/** Appends a manifest (through its act's `append`, ledger/acts.ts) and stores its row. */
export async function appendManifest(
  tx: Transaction,
  append: (log: string, leaf: Uint8Array) => Promise<Inclusion>,
  m: ManifestLeaf,
  keyId: string,
  receiptId: string,
): Promise<Inclusion> {
  const out = await append(ASTL_LOG, leafBytes(m));
  await tx.execute({
    sql: `INSERT INTO astl_manifests (id, entity, version, key_id, act_kinds, log_index, leaf_hash, receipt_id, created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    args: [m.manifest_id, m.entity, m.version, keyId, JSON.stringify(m.act_kinds), out.index, Buffer.from(out.leafHash).toString('base64'), receiptId, m.published_at],
  });
  return out;
}

function toManifest(r: Record<string, unknown>, leaf: ManifestLeaf): StoredManifest {
  return { ...leaf, key_id: String(r.key_id), log_index: Number(r.log_index), leaf_hash: String(r.leaf_hash), receipt_id: String(r.receipt_id) };
}

async function withLeaves(db: Db, rows: Record<string, unknown>[]): Promise<StoredManifest[]> {
  const entries = await readEntriesAt(db, ASTL_LOG, rows.map((r) => Number(r.log_index)));
  return rows.map((r, i) => toManifest(r, JSON.parse(new TextDecoder().decode(entries[i]!.leaf)) as ManifestLeaf));
}

const COLS = 'key_id, log_index, leaf_hash, receipt_id';

/** Every version of an entity's manifest, newest first. */
export async function manifestsOf(db: Db, entity: string, limit = 100): Promise<StoredManifest[]> {
  const rs = await db.execute({ sql: `SELECT ${COLS} FROM astl_manifests WHERE entity = ? ORDER BY version DESC LIMIT ?`, args: [entity, limit] });
  return withLeaves(db, rs.rows as unknown as Record<string, unknown>[]);
}

/** The manifest with this id, or undefined. */
export async function findManifest(db: Db, id: string): Promise<StoredManifest | undefined> {
  const rs = await db.execute({ sql: `SELECT ${COLS} FROM astl_manifests WHERE id = ?`, args: [id] });
  const [m] = await withLeaves(db, rs.rows as unknown as Record<string, unknown>[]);
  return m;
}
