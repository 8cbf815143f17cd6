/**
 * What an act route hands the pipeline (api/act.ts commitAct): the state it
 * needs read under the write lock and its decision, with what it writes and
 * answers.
 */
import type { ActNeeds, ActState, ActWrites } from '../ledger/acts.ts';
import type { Transaction } from '../ledger/sql.ts';
import type { Reply } from './reply.ts';

export interface Decision {
  writes: ActWrites;
  reply: Reply;
}

/**
 * What a route declares: the state it needs read under the write lock, and its
 * decision, pure (`decide`) or reading its area's own rows in the transaction
 * (`run`, see ledger/acts.ts). Either throws a Problem to refuse: nothing is written.
 */
export type ActSpec = { needs?: ActNeeds } & (
  { decide(state: ActState): Decision; run?: undefined } | { run(tx: Transaction, state: ActState): Promise<Decision>; decide?: undefined }
);
