/**
 * Standard base64 (RFC 4648 §4, padded) of bytes, as the logs' JSON answers
 * carry hashes. The bytes are read where they are: `Buffer.from(bytes)` would
 * copy them first, and a proof answer encodes a dozen hashes.
 */
export const base64 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
