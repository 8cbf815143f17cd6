/** RR-1 require-receipt, as a reusable piece: `import { requireReceipt } from 'fusegate/rr1'`. */
export { RECEIPT_HEADER, REQUIRED_HEADER, REQUIRED_STATUS, challenge, memoryClaims, remoteReceiptVerifier, requireReceipt } from './middleware.ts';
export type { RefusalReason, RequireReceiptOptions, Verified } from './middleware.ts';
export { checkConformance, type ConformanceResult, type Step } from './conformance.ts';
