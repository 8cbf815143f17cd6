/**
 * How the entries API shows a leaf's meaning beside its exact bytes: a
 * receipt's leaf (its JWS, or for a batch-sealed receipt its canonical JSON
 * payload) shows its payload; a JSON leaf of another log (astl, triggers,
 * clearing) shows the parsed value. The bytes remain the only thing hashed.
 */
export function decodeLeaf(log: string, leaf: Uint8Array): Record<string, unknown> {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(leaf);
  const parts = text.split('.');
  if (parts.length === 3 && parts.every((p) => /^[A-Za-z0-9_-]*$/.test(p))) {
    try {
      return { payload: JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown };
    } catch {
      return {};
    }
  }
  try {
    const value = JSON.parse(text) as unknown;
    return log === 'receipts' ? { payload: value } : { value };
  } catch {
    return {};
  }
}
