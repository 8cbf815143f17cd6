/**
 * What x402 needs of the running service: its configuration, ledger, signing
 * keys (a paid act's receipt is signed again) and log. The app context
 * (src/api/context.ts) has it; payments imports nothing from src/api.
 */
import type { Config } from '../../config.ts';
import type { Ledger } from '../../ledger/db.ts';
import type { ReceiptIssuer } from '../../ledger/receipts.ts';

export interface X402Context extends ReceiptIssuer {
  config: Config;
  ledger: Ledger;
  log: (level: 'info' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}
