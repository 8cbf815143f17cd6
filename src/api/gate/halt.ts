/**
 * HALT when the ledger cannot answer in time (SPEC 4.1 OCSP alias): a caller
 * asking "may I still act?" must get a firm "no" quickly, not wait for the
 * write queue's busy retries (up to 10 s) nor see a generic ledger error
 * because authentication, which also reads the ledger, failed first.
 */
import type { H3Event } from 'h3';
import { Problem, isUnreachable, toProblem } from '../problem.ts';

export function haltProblem(fuseId: string | null): Problem {
  return new Problem({
    status: 503,
    code: 'halt',
    title: 'Halt',
    detail: 'the fuse ledger cannot be reached: HALT, do not act until a lookup answers',
    headers: { 'retry-after': '1' },
    extra: { halt: true, fuse_id: fuseId },
  });
}

/**
 * Runs `work` (authentication included); a ledger that is unreachable, busy or
 * slower than `deadlineMs` turns into the 503 halt. Other problems (401, 404,
 * 402...) pass through. A lookup still queued when the deadline passes may
 * count its hop later: it answered halt, which costs the caller nothing.
 */
export async function haltUnlessAnsweredWithin<T>(event: H3Event, deadlineMs: number, work: () => Promise<T>): Promise<T> {
  const fuseId = event.url.searchParams.get('fuse_id');
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(haltProblem(fuseId)), deadlineMs);
  });
  const running = work();
  running.catch(() => undefined); // settled after the deadline: nobody listens any more
  try {
    return await Promise.race([running, deadline]);
  } catch (e) {
    if (e instanceof Problem && e.code === 'halt') throw e;
    const p = toProblem(e);
    if (p.status === 503 || isUnreachable(e)) throw haltProblem(fuseId);
    throw e;
  } finally {
    clearTimeout(timer);
  }
}
