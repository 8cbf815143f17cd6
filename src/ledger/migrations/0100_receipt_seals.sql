-- Batch seals of the receipts log (issue 13): when a write batch that appended receipts
-- commits, the service signs ONE C2SP checkpoint of the receipts log at the batch's end size
-- and ONE compact JWS over that checkpoint's body; both are stored here, in the same
-- transaction as the receipts they cover. A receipt's evidence is its leaf, its index, the
-- inclusion proof at the first seal whose tree_size is past its index, and that seal.
CREATE TABLE receipt_seals (
  tree_size INTEGER PRIMARY KEY,
  root BLOB NOT NULL,
  note TEXT NOT NULL,
  jws TEXT NOT NULL,
  kid TEXT NOT NULL,
  created_at TEXT NOT NULL
);
