/**
 * How the write path stores a log and a receipt (issue 13: fewer B-tree pages
 * per group commit), and the migrations that bring an older database there:
 *  - log node hashes keyed by where their span ends, so that one append's nodes
 *    share one B-tree edge (migration 0180);
 *  - a receipt's row without a copy of its leaf: the receipt is read back from
 *    the receipts log (migration 0181);
 *  - a fresh leaf's proof and root made from its append's right edge, not read again.
 */
import { createClient } from '@libsql/client';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { leafHash, rootOf, verifyInclusion } from '../src/crypto/merkle.ts';
import { loadKeyring } from '../src/crypto/keys.ts';
import { openLedger } from '../src/ledger/db.ts';
import { getReceipt, recordReceipts, sealedReceipt, signReceipt } from '../src/ledger/receipts.ts';
import { appendLeaf, appendLeaves, inclusionProof, treeHead } from '../src/ledger/log.ts';
import { migrate } from '../src/ledger/migrate.ts';
import { tempDir, testEnv } from './support/server.ts';

const leaves = Array.from({ length: 77 }, (_, i) => new TextEncoder().encode(`leaf ${i}`));

describe('log nodes keyed by the end of their span', () => {
  it('a group append writes every node it makes at one edge of the key order, and heads and proofs read them back', async () => {
    const ledger = await openLedger(loadConfig(testEnv(tempDir())));
    try {
      await ledger.write((tx) => appendLeaves(tx, 'astl', leaves.slice(0, 40)));
      await ledger.write((tx) => appendLeaves(tx, 'astl', leaves.slice(40)));
      // The key orders nodes by where they end, so the nodes one append makes are one run of it.
      const key = (await ledger.read.execute("SELECT name FROM pragma_table_info('log_nodes') WHERE pk > 0 ORDER BY pk")).rows.map((r) => String(r.name));
      expect(key).toEqual(['log', 'span_end', 'level']);
      const rows = (await ledger.read.execute("SELECT span_end, level FROM log_nodes WHERE log = 'astl' ORDER BY span_end, level")).rows;
      // Leaf i completes one node per trailing 1 bit of i, plus its own: the second append's nodes all end past leaf 40.
      const made = (from: number, to: number) => {
        let n = 0;
        for (let i = from; i < to; i++) {
          n++;
          for (let j = i; j % 2 === 1; j = (j - 1) / 2) n++;
        }
        return n;
      };
      expect(rows.filter((r) => Number(r.span_end) > 40).length).toBe(made(40, 77));
      expect(rows.length).toBe(made(0, 77));
      // Every node ends where its level says: a multiple of 2^level.
      for (const r of rows) expect(Number(r.span_end) % 2 ** Number(r.level)).toBe(0);
      const head = await treeHead(ledger.read, 'astl');
      expect(Buffer.from(head.root)).toEqual(Buffer.from(rootOf(leaves.map((l) => leafHash(l)))));
      for (const index of [0, 39, 40, 76]) {
        const proof = await inclusionProof(ledger.read, 'astl', index, 77);
        expect(() => verifyInclusion(index, 77, leafHash(leaves[index]!), proof.hashes, head.root)).not.toThrow();
      }
    } finally {
      await ledger.close();
    }
  });

  it('the migration re-keys nodes stored by (level, idx), and the tree keeps its root and proofs', async () => {
    const dir = tempDir();
    const env = testEnv(dir);
    const ledger = await openLedger(loadConfig(env));
    await ledger.write((tx) => appendLeaves(tx, 'triggers', leaves));
    const before = await treeHead(ledger.read, 'triggers');
    await ledger.close();

    const db = createClient({ url: env.DATABASE_URL!, intMode: 'number' });
    try {
      // Back to the layout of before: nodes keyed by (log, level, idx).
      await db.batch(
        [
          'CREATE TABLE old_nodes (log TEXT NOT NULL, level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (log, level, idx)) WITHOUT ROWID',
          'INSERT INTO old_nodes SELECT log, level, span_end / (1 << level) - 1, hash FROM log_nodes',
          'DROP TABLE log_nodes',
          'ALTER TABLE old_nodes RENAME TO log_nodes',
          "DELETE FROM schema_migrations WHERE version = '0180_log_nodes_by_span_end'",
        ],
        'write',
      );
      expect((await db.execute("SELECT COUNT(*) AS n FROM pragma_table_info('log_nodes') WHERE name = 'span_end'")).rows[0]!.n).toBe(0);
      expect(await migrate(db)).toEqual(['0180_log_nodes_by_span_end']);
      const after = await treeHead(db, 'triggers');
      expect(after.size).toBe(77);
      expect(Buffer.from(after.root)).toEqual(Buffer.from(before.root));
      const proof = await inclusionProof(db, 'triggers', 63, 77);
      expect(() => verifyInclusion(63, 77, leafHash(leaves[63]!), proof.hashes, after.root)).not.toThrow();
      expect(await migrate(db)).toEqual([]);
    } finally {
      db.close();
    }
  });
});

describe('a fresh leaf is proved from its own append', () => {
  it('appendLeaf answers the same proof and root as the stored tree, at every size up to 77', async () => {
    const ledger = await openLedger(loadConfig(testEnv(tempDir())));
    try {
      for (let i = 0; i < leaves.length; i++) {
        const a = await ledger.write((tx) => appendLeaf(tx, 'astl', leaves[i]!));
        expect(a.index).toBe(i);
        // Against the whole tree hashed from scratch, and the proof read from the stored nodes.
        expect(Buffer.from(a.root)).toEqual(Buffer.from(rootOf(leaves.slice(0, i + 1).map((l) => leafHash(l)))));
        const stored = await inclusionProof(ledger.read, 'astl', i, i + 1);
        expect(a.proof.map((h) => Buffer.from(h).toString('hex'))).toEqual(stored.hashes.map((h) => Buffer.from(h).toString('hex')));
        expect(() => verifyInclusion(i, i + 1, a.leafHash, a.proof, a.root)).not.toThrow();
      }
    } finally {
      await ledger.close();
    }
  });
});

describe('a receipt is read back from its leaf', () => {
  async function withReceipts() {
    const env = testEnv(tempDir());
    const config = loadConfig(env);
    const issuer = { config, keyring: await loadKeyring(config) };
    const sealed = sealedReceipt(issuer, { kind: 'hop', decision: 'PERMIT', subject: 'fuse_a', key_id: 'key_a', data: { note: 'é ✓' } });
    const signed = await signReceipt(issuer, { kind: 'execute_gate', decision: 'ALLOW', subject: 'fuse_a', key_id: 'key_a' });
    const ledger = await openLedger(config);
    await ledger.write((tx) => recordReceipts(tx, [sealed, signed]));
    return { env, ledger, sealed, signed };
  }

  it('a sealed receipt gives back its payload, a self-contained one its JWS and payload', async () => {
    const { ledger, sealed, signed } = await withReceipts();
    try {
      expect(await getReceipt(ledger.read, sealed.receipt_id)).toEqual({ receipt_id: sealed.receipt_id, jws: null, payload: sealed.payload, log_index: 0 });
      expect(await getReceipt(ledger.read, signed.receipt_id)).toEqual({ receipt_id: signed.receipt_id, jws: signed.jws, payload: signed.payload, log_index: 1 });
      expect(await getReceipt(ledger.read, 'rcpt_none')).toBeUndefined();
      const columns = (await ledger.read.execute("SELECT name FROM pragma_table_info('receipts')")).rows.map((r) => String(r.name));
      expect(columns).not.toContain('payload');
      expect(columns).not.toContain('jws');
    } finally {
      await ledger.close();
    }
  });

  async function backToCopies(db: ReturnType<typeof createClient>) {
    // The layout of before: the row held the payload and the JWS ('' when sealed).
    await db.batch(
      [
        `CREATE TABLE old_receipts (id TEXT PRIMARY KEY, kind TEXT NOT NULL, decision TEXT NOT NULL, subject TEXT, key_id TEXT,
           jws TEXT NOT NULL, payload TEXT NOT NULL, log_index INTEGER, created_at TEXT NOT NULL)`,
        "INSERT INTO old_receipts SELECT r.id, r.kind, r.decision, r.subject, r.key_id, CASE WHEN substr(CAST(e.leaf AS TEXT), 1, 1) = '{' THEN '' ELSE CAST(e.leaf AS TEXT) END, 'copy', r.log_index, r.created_at FROM receipts r JOIN log_entries e ON e.log = 'receipts' AND e.idx = r.log_index",
        'DROP TABLE receipts',
        'ALTER TABLE old_receipts RENAME TO receipts',
        'CREATE INDEX receipts_by_subject ON receipts (subject)',
        'CREATE INDEX receipts_by_key ON receipts (key_id, created_at)',
        "DELETE FROM schema_migrations WHERE version = '0181_receipts_read_from_leaf'",
      ],
      'write',
    );
  }

  it('the migration drops the copies and every receipt still reads back whole', async () => {
    const { env, ledger, sealed, signed } = await withReceipts();
    await ledger.close();
    const db = createClient({ url: env.DATABASE_URL!, intMode: 'number' });
    try {
      await backToCopies(db);
      expect(await migrate(db)).toEqual(['0181_receipts_read_from_leaf']);
      expect((await getReceipt(db, sealed.receipt_id))?.payload).toEqual(sealed.payload);
      expect(await getReceipt(db, signed.receipt_id)).toMatchObject({ jws: signed.jws, payload: signed.payload });
      expect((await db.execute("SELECT COUNT(*) AS n FROM receipts WHERE key_id = 'key_a' AND subject = 'fuse_a'")).rows[0]!.n).toBe(2);
    } finally {
      db.close();
    }
  });

  it('the migration refuses a database whose receipt has no leaf, and changes nothing', async () => {
    const { env, ledger, sealed } = await withReceipts();
    await ledger.close();
    const db = createClient({ url: env.DATABASE_URL!, intMode: 'number' });
    try {
      await backToCopies(db);
      await db.execute("DELETE FROM log_entries WHERE log = 'receipts' AND idx = 0");
      await expect(migrate(db)).rejects.toThrow(/1 receipt rows have no receipts-log leaf/);
      const row = (await db.execute({ sql: 'SELECT payload FROM receipts WHERE id = ?', args: [sealed.receipt_id] })).rows[0]!;
      expect(row.payload).toBe('copy');
    } finally {
      db.close();
    }
  });
});
