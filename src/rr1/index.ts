/** RR-1 require-receipt, as a reusable piece: `import { requireReceipt } from 'fusegate/rr1'`. */
export {
  RECEIPT_HEADER,
  REQUIRED_HEADER,
  REQUIRED_STATUS,
  challenge,
  memoryClaims,
  remoteReceiptVerifier,
  requireReceipt,
} from './middleware.ts';
export type { RefusalReason, RemoteVerifierOptions, RequireReceiptOptions, Verified } from './middleware.ts';
export { encodeReceiptDocument, parseReceiptDocument, verifyReceiptToken, type ReceiptTrust } from '../crypto/receipt.ts';
export { parseWitnessPolicy, type WitnessPolicy } from '../crypto/witness-policy.ts';
export { checkConformance, type ConformanceResult, type Step } from './conformance.ts';
