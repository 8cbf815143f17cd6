/**
 * ASTL manifests: each publish appends a JSON leaf to the `astl` log and
 * indexes it here. A republish is a new version; nothing is rewritten.
 * A publish is committed with its group (ledger/acts.ts): the group reads
 * its entities' heads in one statement and writes its manifests' rows in one.
 */
import { canonicalJson } from '../crypto/canonical.ts';
import { insertRows, readEntriesAt, type Db } from './log.ts';
import type { Transaction } from './sql.ts';

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

/** An entity's owner (the key of its first publisher) and its newest version. */
export interface EntityHead {
  key_id: string;
  version: number;
}

/**
 * The heads of the entities a group's publishes name, in one statement
 * (ledger/acts.ts GroupReader). A publish records its manifest with the group
 * and sets its entity's head for the publishes after it (`state.setRow`).
 */
export const ENTITY_HEADS = {
  async read(db: Db, entities: readonly string[]): Promise<Map<string, EntityHead>> {
    // Per entity one seek to its newest version (a GROUP BY would visit every version of it).
    const rs = await db.execute({
      sql: `SELECT m.entity, m.key_id, m.version FROM json_each(?) j
            JOIN astl_manifests m ON m.entity = j.value AND m.version = (SELECT MAX(version) FROM astl_manifests WHERE entity = j.value)`,
      args: [JSON.stringify(entities)],
    });
    return new Map(rs.rows.map((r) => [String(r.entity), { key_id: String(r.key_id), version: Number(r.version) }]));
  },
};

/** A published manifest's row, recorded with its group (records.ts). */
export interface ManifestRow {
  leaf: ManifestLeaf;
  keyId: string;
  logIndex: number;
  leafHash: string;
  receiptId: string;
}

export async function insertManifests(tx: Transaction, rows: readonly ManifestRow[]): Promise<void> {
  await insertRows(
    tx,
    'INSERT INTO astl_manifests (id, entity, version, key_id, act_kinds, log_index, leaf_hash, receipt_id, created_at) VALUES',
    '(?, ?, ?, ?, ?, ?, ?, ?, ?)',
    rows.map((r) => [r.leaf.manifest_id, r.leaf.entity, r.leaf.version, r.keyId, JSON.stringify(r.leaf.act_kinds), r.logIndex, r.leafHash, r.receiptId, r.leaf.published_at]),
  );
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
