-- PAS exclusion proofs (issue 13, point 5): each key's redeemed spend leaves as a
-- sparse Merkle tree (src/crypto/sparse-merkle.ts), updated in the redeem's own
-- write transaction, so the tree and the spend leaves never disagree.
-- A tree per key: its size (leaf count) and root, read in O(1) for the signed head.
CREATE TABLE pas_exclusion_trees (
  id INTEGER PRIMARY KEY,
  key_id TEXT NOT NULL UNIQUE,
  size INTEGER NOT NULL,
  root BLOB NOT NULL
);

-- Its non-empty subtrees: depth, the first `depth` bits of their keys (ceil(depth/8)
-- bytes, trailing bits zero), hash, and the only key when the subtree holds one.
CREATE TABLE pas_exclusion_nodes (
  tree INTEGER NOT NULL,
  depth INTEGER NOT NULL,
  prefix BLOB NOT NULL,
  hash BLOB NOT NULL,
  leaf BLOB,
  PRIMARY KEY (tree, depth, prefix)
) WITHOUT ROWID
