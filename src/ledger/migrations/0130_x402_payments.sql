-- x402 payments (issue 19). One row per payment presented and verified for an
-- act: payment_id is the payment's identity (for EIP-3009, network + asset +
-- payer + authorization nonce), so the primary key makes a payment usable for
-- one act only, across processes, whatever the facilitator says.
-- state: settling (claimed, settle in flight or interrupted by a crash),
-- settled (the act is committed with it), failed (settlement refused: no act).
CREATE TABLE x402_payments (
  payment_id TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('settling', 'settled', 'failed')),
  resource TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  network TEXT NOT NULL,
  asset TEXT NOT NULL,
  amount TEXT NOT NULL,
  payer TEXT NOT NULL,
  pay_to TEXT NOT NULL,
  x402_version INTEGER NOT NULL,
  -- what the facilitator needs to settle again after a crash (the payer's signed payload and our requirements)
  payment_payload TEXT NOT NULL,
  requirements TEXT NOT NULL,
  -- the act decided before settling (its receipt input): signed with the transaction and committed once settled
  pending_receipt TEXT NOT NULL,
  receipt_id TEXT,
  transaction_hash TEXT,
  error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX x402_payments_state ON x402_payments (state, created_at);
