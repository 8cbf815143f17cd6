/**
 * The prices of the operator checkout (SPEC 1 and 8.3; the formula is
 * src/domain/pricing.ts operatorCheckout): its rate on a month's cleared
 * exposure, and the toll it counts per hop. The floor is OPERATOR_FLOOR_USD,
 * a setting of the running service.
 */

/** Basis points of a month's cleared exposure. */
export const OPERATOR_BPS = 10;
/** The SKU whose toll a month owes per hop. */
export const OPERATOR_PER_HOP_SKU = 'execute_gate';
