/**
 * The client side of C2SP tlog-witness (c2sp.org/tlog-witness): one
 * add-checkpoint request to one witness, and what its answer means. The
 * witness URLs come from the operator's policy, so no address guard applies.
 */
import { verifyCosignature } from '../crypto/cosignature.ts';
import { noteParts } from '../crypto/note.ts';
import type { Hash } from '../crypto/merkle.ts';
import type { PolicyWitness } from '../crypto/witness-policy.ts';

export type AddCheckpointResult =
  /** The witness cosigned: its valid cosignature line (with newline) and its timestamp. */
  | { kind: 'cosigned'; line: string; timestamp: number }
  /** 409 with text/x.tlog.size naming another size than the old one: the witness's latest cosigned size; resubmit from it. */
  | { kind: 'conflict'; size: number }
  /** Anything else: an HTTP status (403, 404, 422, 5xx, 409 without a size...), a timeout, a bad cosignature. */
  | { kind: 'failed'; status?: number; error: string };

/** The request body of add-checkpoint: the old size line, the proof lines, an empty line, the signed checkpoint. */
export function addCheckpointBody(oldSize: number, proof: readonly Hash[], note: string): string {
  return `old ${oldSize}\n${proof.map((h) => `${Buffer.from(h).toString('base64')}\n`).join('')}\n${note}`;
}

/**
 * POSTs `${witness.url}/add-checkpoint` and reads the answer. Never throws: a
 * network error or timeout is a `failed` result. A 200 is `cosigned` only when
 * one of its lines verifies against the witness's vkey over this checkpoint.
 */
export async function addCheckpoint(
  witness: PolicyWitness,
  oldSize: number,
  proof: readonly Hash[],
  note: string,
  timeoutMs: number,
): Promise<AddCheckpointResult> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${witness.url}/add-checkpoint`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      body: addCheckpointBody(oldSize, proof, note),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    text = await res.text();
  } catch (e) {
    const err = e as Error;
    return { kind: 'failed', error: err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : `unreachable: ${err.message}` };
  }
  if (res.status === 409) {
    const type = res.headers.get('content-type')?.split(';')[0]?.trim();
    const m = /^(0|[1-9][0-9]*)\n$/.exec(text);
    const size = m ? Number(m[1]) : NaN;
    // At the size it was sent, a 409 means the witness holds another root there: nothing to resubmit.
    if (type === 'text/x.tlog.size' && Number.isSafeInteger(size) && size !== oldSize) return { kind: 'conflict', size };
    return { kind: 'failed', status: 409, error: 'conflict without a size: the witness holds another root at this size' };
  }
  if (res.status !== 200)
    return { kind: 'failed', status: res.status, error: `HTTP ${res.status}${text ? `: ${text.slice(0, 200).trim()}` : ''}` };
  const body = noteParts(note).text;
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      const timestamp = await verifyCosignature(body, line, witness.key);
      if (timestamp !== undefined) return { kind: 'cosigned', line: `${line}\n`, timestamp };
    } catch (e) {
      return { kind: 'failed', status: 200, error: (e as Error).message };
    }
  }
  return { kind: 'failed', status: 200, error: 'the answer holds no cosignature by this witness key' };
}
