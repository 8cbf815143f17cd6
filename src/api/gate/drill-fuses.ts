/**
 * The public drill fuses (migration 0020; docs/gate-service.md): every visitor
 * finds fuse_drill_live LIVE and fuse_drill_dead DEAD, and the demos on the
 * home page rely on it. They belong to no one: the public and keyless x402
 * payers hop on them, nobody changes them (governed.ts `changeableIn`). A
 * database from before that rule may hold one changed (any payer could panic
 * fuse_drill_live); the server puts each back as it starts, with a receipt of
 * the restore in the public log.
 */
import { nowIso } from '../../ids.ts';
import { DRILL_FUSES, DRILL_OWNER, transitionFuse, type FuseState } from '../../ledger/fuses.ts';
import type { AppContext } from '../context.ts';
import type { BackgroundJob } from '../jobs.ts';

/** Each drill fuse and the state the docs promise for it. */
const DRILL_STATES: ReadonlyArray<readonly [string, FuseState]> = [
  [DRILL_FUSES.live, 'LIVE'],
  [DRILL_FUSES.dead, 'DEAD'],
];

/** Puts a drill fuse back in its documented state if it is not; answers the state it was found in. */
async function restore(ctx: AppContext, fuseId: string, to: FuseState): Promise<FuseState | undefined> {
  return ctx.ledger.act({
    needs: { fuseId },
    run: async (tx, state) => {
      const fuse = state.fuse;
      if (!fuse || fuse.key_id !== DRILL_OWNER || fuse.state === to) return { writes: {}, result: undefined };
      const now = nowIso();
      await transitionFuse(tx, fuse.id, [fuse.state], to, now);
      const receipt = state.receipt(ctx, { kind: 'drill_restore', decision: to, subject: fuse.id, demo: true, data: { from: fuse.state } });
      return { writes: { receipt, fuse: { ...fuse, state: to, updated_at: now } }, result: fuse.state };
    },
  });
}

/** A job with start-up work only: the drill fuses restored before the server reports ready. */
export function drillFuseRestore(ctx: AppContext): BackgroundJob {
  return {
    name: 'drill fuse restore',
    async start() {
      for (const [id, to] of DRILL_STATES) {
        const from = await restore(ctx, id, to);
        if (from) ctx.log('info', 'drill fuse restored', { fuse_id: id, from, to });
      }
    },
    async stop() {},
  };
}
