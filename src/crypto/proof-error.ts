/**
 * What the core throws when evidence does not hold: a proof that does not
 * lead to its root, a signature that does not verify, a malformed note, key,
 * checkpoint or token. Its message says which, for a person to read.
 */
export class ProofError extends Error {
  override name = 'ProofError';
}
