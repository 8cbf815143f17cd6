/**
 * ASTL manifests: each publish appends a JSON leaf to the `astl` log and
 * indexes it here. A republish is a new version; nothing is rewritten.
 * A publish is committed with its group (ledger/acts.ts): the group reads
 * its entities' heads in one statement and writes its manifests' rows in one.
 *
 * Two tables. A publish adds its row at the end of astl_manifests (manifest
 * ids are sortable) and moves one row of astl_entities, which holds a row per
 * entity however many versions it has:
 *   astl_entities   one row per entity: its owner, newest version and manifest
 *   astl_manifests  one row per manifest, by id: its log index, its receipt and
 *                   the id of the version before it (an entity's versions are a
 *                   chain from its head, newest first)
 * Everything else of a manifest (entity, version, kinds, time) is its leaf in
 * the log, and its leaf hash is the hash of that leaf.
 */
import { recordWriter, type RecordWriter } from './records.ts';
import { canonicalJson } from '../crypto/canonical.ts';
import { leafHash } from '../crypto/merkle.ts';
import { base64 } from '../crypto/base64.ts';
import { readEntriesAt, type Db } from './log.ts';
import { insertRows, type Transaction } from './sql.ts';

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
  log_index: number;
  leaf_hash: string;
  receipt_id: string;
}

export const leafBytes = (v: unknown): Uint8Array => new TextEncoder().encode(canonicalJson(v));

/** An entity's owner (the account of its first publisher), its newest version and that version's manifest id. */
export interface EntityHead {
  key_id: string;
  version: number;
  manifest_id: string;
}

/**
 * The heads of the entities a group's publishes name, in one statement
 * (ledger/acts.ts GroupReader). A publish records its manifest with the group
 * and sets its entity's head for the publishes after it (`state.setRow`).
 */
export const ENTITY_HEADS = {
  async read(db: Db, entities: readonly string[]): Promise<Map<string, EntityHead>> {
    const where = db.dialect.oneOf('entity', entities);
    const rs = await db.execute({
      sql: `SELECT entity, key_id, version, manifest_id FROM astl_entities WHERE ${where.sql}`,
      args: where.args,
    });
    return new Map(
      rs.rows.map((r) => [String(r.entity), { key_id: String(r.key_id), version: Number(r.version), manifest_id: String(r.manifest_id) }]),
    );
  },
};

/** A published manifest's row, recorded with its group (records.ts). */
export interface ManifestRow {
  leaf: ManifestLeaf;
  keyId: string;
  logIndex: number;
  receiptId: string;
  /** The entity's manifest before this one (its head when this was published), or undefined for version 1. */
  prevId: string | undefined;
}

/** Records a group's manifests and moves each entity's head to its newest one. */
export async function insertManifests(tx: Transaction, rows: readonly ManifestRow[]): Promise<void> {
  await insertRows(
    tx,
    'astl_manifests',
    ['id', 'log_index', 'receipt_id', 'prev_id'],
    rows.map((r) => [r.leaf.manifest_id, r.logIndex, r.receiptId, r.prevId ?? null]),
  );
  const heads = new Map(rows.map((r) => [r.leaf.entity, r]));
  await insertRows(
    tx,
    'astl_entities',
    ['entity', 'key_id', 'version', 'manifest_id'],
    [...heads.values()].map((r) => [r.leaf.entity, r.keyId, r.leaf.version, r.leaf.manifest_id]),
    ' ON CONFLICT (entity) DO UPDATE SET version = excluded.version, manifest_id = excluded.manifest_id',
  );
}

/** A published ASTL manifest's row (its entity's head is set for the group's later publishes by `state.setRow`). Written with its group's records (records.ts). */
export const ASTL_MANIFESTS: RecordWriter<ManifestRow> = recordWriter('astl_manifests', insertManifests);

/** Rows of astl_manifests with their leaves, read from the log. */
async function withLeaves(db: Db, rows: ReadonlyArray<Record<string, unknown>>): Promise<StoredManifest[]> {
  const entries = await readEntriesAt(
    db,
    ASTL_LOG,
    rows.map((r) => Number(r.log_index)),
  );
  return rows.map((r, i) => {
    const bytes = entries[i]!.leaf;
    const leaf = JSON.parse(new TextDecoder().decode(bytes)) as ManifestLeaf;
    return { ...leaf, log_index: Number(r.log_index), leaf_hash: base64(leafHash(bytes)), receipt_id: String(r.receipt_id) };
  });
}

/** Every version of an entity's manifest, newest first: its chain from the head. */
export async function manifestsOf(db: Db, entity: string, limit = 100): Promise<StoredManifest[]> {
  const rs = await db.execute({
    sql: `WITH RECURSIVE chain (n, log_index, receipt_id, prev_id) AS (
            SELECT 1, m.log_index, m.receipt_id, m.prev_id FROM astl_entities e JOIN astl_manifests m ON m.id = e.manifest_id WHERE e.entity = ?
            UNION ALL
            SELECT c.n + 1, m.log_index, m.receipt_id, m.prev_id FROM chain c JOIN astl_manifests m ON m.id = c.prev_id WHERE c.n < ?
          )
          SELECT log_index, receipt_id FROM chain ORDER BY n`,
    args: [entity, limit],
  });
  return withLeaves(db, rs.rows as unknown as Record<string, unknown>[]);
}

/** The manifest with this id, or undefined. */
export async function findManifest(db: Db, id: string): Promise<StoredManifest | undefined> {
  const rs = await db.execute({ sql: 'SELECT log_index, receipt_id FROM astl_manifests WHERE id = ?', args: [id] });
  const [m] = await withLeaves(db, rs.rows as unknown as Record<string, unknown>[]);
  return m;
}
