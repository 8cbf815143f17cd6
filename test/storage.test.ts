/**
 * How the write path stores a log and a receipt (issue 26: per batch, as C2SP
 * tiles, no row per entry):
 *  - one segment row per append and tile, one stored hash per height-8 node;
 *  - a receipt read back from its entry, found by the index its id carries;
 *  - a fresh leaf's proof and root made from its append's right edge, not read again.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { leafHash, rootOf, verifyInclusion } from '../src/crypto/merkle.ts';
import { loadKeyring } from '../src/crypto/keys.ts';
import { openLedger } from '../src/ledger/db.ts';
import { getReceipt } from '../src/ledger/receipts.ts';
import { commitReceipts } from './support/receipts.ts';
import { appendLeaf, appendLeaves, inclusionProof, treeHead } from '../src/ledger/log.ts';
import { tempDir, testEnv } from './support/server.ts';

const leaves = Array.from({ length: 77 }, (_, i) => new TextEncoder().encode(`leaf ${i}`));

describe('logs stored per batch, as C2SP tiles', () => {
  it('an append writes one segment per tile it touches and no row per entry; heads and proofs read them back', async () => {
    const ledger = await openLedger(loadConfig(testEnv(tempDir())));
    try {
      await ledger.write((tx) => appendLeaves(tx, 'astl', leaves.slice(0, 40)));
      await ledger.write((tx) => appendLeaves(tx, 'astl', leaves.slice(40)));
      const rows = (await ledger.read.execute("SELECT start, count FROM log_segments WHERE log = 'astl' ORDER BY start")).rows.map((r) => [
        Number(r.start),
        Number(r.count),
      ]);
      expect(rows).toEqual([
        [0, 40],
        [40, 37],
      ]);
      // No node of height 8 is complete yet: no stored hash at all.
      expect((await ledger.read.execute("SELECT COUNT(*) AS n FROM log_tile_hashes WHERE log = 'astl'")).rows[0]!.n).toBe(0);
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

  it('an append across tile boundaries cuts its segments there and stores one hash per completed height-8 node', async () => {
    const ledger = await openLedger(loadConfig(testEnv(tempDir())));
    const many = Array.from({ length: 600 }, (_, i) => new TextEncoder().encode(`entry ${i}`));
    try {
      await ledger.write((tx) => appendLeaves(tx, 'triggers', many.slice(0, 300)));
      await ledger.write((tx) => appendLeaves(tx, 'triggers', many.slice(300)));
      const rows = (await ledger.read.execute("SELECT start, count FROM log_segments WHERE log = 'triggers' ORDER BY start")).rows.map(
        (r) => [Number(r.start), Number(r.count)],
      );
      expect(rows).toEqual([
        [0, 256],
        [256, 44],
        [300, 212],
        [512, 88],
      ]);
      const stored = (
        await ledger.read.execute("SELECT level, idx FROM log_tile_hashes WHERE log = 'triggers' ORDER BY level, idx")
      ).rows.map((r) => [Number(r.level), Number(r.idx)]);
      expect(stored).toEqual([
        [1, 0],
        [1, 1],
      ]);
      const hashes = many.map((l) => leafHash(l));
      for (const size of [1, 255, 256, 257, 300, 511, 512, 513, 600]) {
        const head = await treeHead(ledger.read, 'triggers', size);
        expect(Buffer.from(head.root)).toEqual(Buffer.from(rootOf(hashes.slice(0, size))));
        for (const index of [0, size - 1, Math.floor(size / 2)]) {
          const proof = await inclusionProof(ledger.read, 'triggers', index, size);
          expect(() => verifyInclusion(index, size, hashes[index]!, proof.hashes, head.root)).not.toThrow();
        }
      }
    } finally {
      await ledger.close();
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
        expect(a.hashes.map((h) => Buffer.from(h).toString('hex'))).toEqual(stored.hashes.map((h) => Buffer.from(h).toString('hex')));
        expect(() => verifyInclusion(i, i + 1, a.leafHash, a.hashes, a.root)).not.toThrow();
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
    const ledger = await openLedger(config);
    const [sealed] = await commitReceipts(ledger, issuer, [
      { kind: 'hop', decision: 'PERMIT', subject: 'fuse_a', key_id: 'key_a', data: { note: 'é ✓' } },
    ]);
    const [signed] = await commitReceipts(
      ledger,
      issuer,
      [{ kind: 'execute_gate', decision: 'ALLOW', subject: 'fuse_a', key_id: 'key_a' }],
      { signed: true },
    );
    return { env, ledger, sealed, signed };
  }

  it('a sealed receipt gives back its payload, a self-contained one its JWS and payload', async () => {
    const { ledger, sealed, signed } = await withReceipts();
    try {
      expect(await getReceipt(ledger.read, sealed!.receipt_id)).toEqual({
        receipt_id: sealed!.receipt_id,
        jws: null,
        payload: sealed!.payload,
        log_index: 0,
        log: 'receipts',
      });
      expect(await getReceipt(ledger.read, signed!.receipt_id)).toEqual({
        receipt_id: signed!.receipt_id,
        jws: signed!.jws,
        payload: signed!.payload,
        log_index: 1,
        log: 'receipts',
      });
      expect(await getReceipt(ledger.read, 'rcpt_none')).toBeUndefined();
      // The index in an id is public; its random part is what finds the receipt.
      const forged = sealed!.receipt_id.replace(/_[A-Za-z0-9_-]{22}$/, '_' + 'A'.repeat(22));
      expect(await getReceipt(ledger.read, forged)).toBeUndefined();
      expect(await getReceipt(ledger.read, 'rcpt_7_' + 'A'.repeat(22))).toBeUndefined();
    } finally {
      await ledger.close();
    }
  });
});
