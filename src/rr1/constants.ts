/** RR-1 wire names (no imports, so the catalog build can read them too). */

/** The request header that carries the receipt (a compact JWS, or a receipt document as base64url of its JSON). Our choice; SPEC names only the response header. */
export const RECEIPT_HEADER = 'Gate-Receipt';
/** The response header of a 428 challenge, and its status (SPEC 2.4). */
export const REQUIRED_HEADER = 'Receipt-Required';
export const REQUIRED_STATUS = 428;
/** `typ` of the gate's receipt JWS. */
export const RECEIPT_TYP = 'fusegate-receipt+jws';
