/**
 * `fusegate reviews list|approve|deny`: the review queue (docs/reviews.md)
 * from a terminal. It talks to the running gate (FUSEGATE_URL) with an
 * operator key (FUSEGATE_KEY), because an answer is an act like any other:
 * it is receipted, four-eyes checked and told to subscribers by the service,
 * never written to the database behind its back.
 */
import { FuseGateError, type Review } from '../client.ts';
import { gateClient } from './gate-client.ts';
import { askedOf } from '../domain/review.ts';
import { type CliContext, type Command, UsageError, enumFlag } from './shared.ts';

const STATES = ['pending', 'approved', 'denied', 'expired'] as const;

/** One line of the queue: id, state, operation, what was asked, when it expires. */
function line(r: Review): string {
  const s = r.summary as Record<string, unknown>;
  return `${r.id}  ${r.state.padEnd(8)}  ${String(r.operation).padEnd(20)}  ${askedOf(s)}  (${String(s.rule ?? '')}; expires ${String(r.expires_at)})`;
}

function answer(verb: 'approve' | 'deny'): Command['run'] {
  return async (ctx: CliContext) => {
    const id = ctx.args[0];
    if (!id) throw new UsageError('the review ID is required');
    const note = typeof ctx.flags.note === 'string' ? ctx.flags.note : undefined;
    try {
      const r = (await gateClient().call(`review_${verb}`, {
        review_id: id,
        ...(note !== undefined ? { note } : {}),
      })) as unknown as Review;
      ctx.out(`${r.id}: ${r.state} (receipt ${String(r.receipt_id)})`, r);
    } catch (e) {
      if (!(e instanceof FuseGateError)) throw e;
      ctx.out(`cannot ${verb} ${id}: ${e.problem.code}: ${e.problem.detail ?? e.problem.title}`, e.problem);
      return 1;
    }
  };
}

export const reviewCommands: Record<string, Command> = {
  'reviews list': {
    usage: 'reviews list [--state pending|approved|denied|expired]',
    summary: "the account's reviews, newest first (FUSEGATE_URL, FUSEGATE_KEY)",
    async run(ctx) {
      const state = enumFlag(ctx, 'state', STATES);
      const list = await gateClient().call('reviews_list', state ? { state } : {});
      const data = list.data as Review[];
      ctx.out(data.map(line).join('\n') || 'no reviews', list);
    },
  },
  'reviews approve': {
    usage: 'reviews approve REVIEW_ID [--note TEXT]',
    summary: 'approve a held request, as the operator key in FUSEGATE_KEY',
    run: answer('approve'),
  },
  'reviews deny': {
    usage: 'reviews deny REVIEW_ID [--note TEXT]',
    summary: 'deny a held request, as the operator key in FUSEGATE_KEY',
    run: answer('deny'),
  },
};
