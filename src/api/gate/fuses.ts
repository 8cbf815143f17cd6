/**
 * Fuse management (our extension: SPEC shows no way to create or change a
 * fuse). A fuse belongs to the key that created it; another key gets 404.
 *   POST /v1/fuses                 {state?: "LIVE" | "UNSIGNED", label?}  -> 201 {fuse_id, state}
 *   GET  /v1/fuses                 the calling key's fuses
 *   POST /v1/fuses/{id}/dead       blow it: any state -> DEAD
 *   POST /v1/fuses/{id}/charge     UNSIGNED or DEAD -> LIVE (409 otherwise)
 * Every state change is receipted. The public drill fuses change for nobody
 * (drill-fuses.ts).
 */
import { commitAct } from '../act.ts';
import { z } from 'zod';
import { CHARGEABLE_STATES } from '../../domain/fuse.ts';
import { newId, nowIso } from '../../ids.ts';
import { FUSE_STATES, createFuse, listFuses, transitionFuse, type Fuse, type FuseState } from '../../ledger/fuses.ts';
import { ownerId } from '../../ledger/accounts.ts';
import type { AppContext } from '../context.ts';
import { Problem } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { callerOf, changeableFuse, changeableIn, fuseIdSchema } from './governed.ts';
import { fuseChangedAlert } from './alert-events.ts';
import { drillFuseRestore } from './drill-fuses.ts';
import { nudgeDeliverer } from '../site/webhooks.ts';
import { operation } from '../operation.ts';
import { pick } from '../audit.ts';

export const createFuseRequest = z.strictObject({
  state: z.enum(['LIVE', 'UNSIGNED']).default('LIVE'),
  label: z.string().min(1).max(200).optional(),
});
const listQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(100), starting_after: fuseIdSchema.optional() });

export const fuseResponse = z.object({
  object: z.literal('fuse'),
  fuse_id: z.string(),
  state: z.enum(FUSE_STATES),
  label: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export function fuseObject(f: Fuse) {
  return { object: 'fuse', fuse_id: f.id, state: f.state, label: f.label, created_at: f.created_at, updated_at: f.updated_at };
}

export function registerFuseRoutes(router: Router, ctx: AppContext): void {
  router.job(drillFuseRestore(ctx));
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/fuses',
      audit: { action: 'fuse.created', detail: (a) => pick(a, ['label', 'state']) },
      auth: 'key',
      tool: 'fuse_create',
      summary: 'Create a fuse owned by the calling key (our extension)',
      role: 'operator',
      tag: 'fuses',
      body: createFuseRequest,
      optionalBody: true,
      response: fuseResponse.extend({ receipt_id: z.string() }),
      responses: {
        201: {
          description: 'The fuse, created, with the receipt of its creation',
          schema: fuseResponse.extend({ receipt_id: z.string() }),
        },
      },
      example: { state: 'LIVE', label: 'payments agent' },
      act: {},
    },
    async ({ input: body, key, event }) => {
      const id = newId('fuse');
      return commitAct(event, ctx, key, {
        run: async (tx, state) => {
          const receipt = state.receipt(ctx, { kind: 'fuse_create', decision: body.state, subject: id, key_id: key.id });
          const fuse = await createFuse(tx, { id, keyId: ownerId(key), state: body.state, label: body.label ?? null, now: nowIso() });
          return { writes: { receipt }, reply: reply({ ...fuseObject(fuse), receipt_id: receipt.receipt_id }, 201) };
        },
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/fuses',
      tool: 'fuses_list',
      summary: "List the calling key's fuses",
      auth: 'key',
      tag: 'fuses',
      query: listQuery,
    },
    async ({ key, input: q }) => {
      const fuses = await listFuses(ctx.ledger.read, ownerId(key), q.limit + 1, q.starting_after);
      return reply({ object: 'list', data: fuses.slice(0, q.limit).map(fuseObject), has_more: fuses.length > q.limit });
    },
  );

  const transition = (path: string, to: FuseState, from: readonly FuseState[], verb: string, summary: string, role: 'agent' | 'operator') =>
    operation(
      router,
      ctx,
      {
        method: 'POST',
        path,
        audit: { action: verb === 'dead' ? 'fuse.blown' : 'fuse.charged', target: 'fuse_id' },
        auth: 'key',
        tool: verb === 'dead' ? 'fuse_blow' : 'fuse_charge',
        summary,
        role,
        tag: 'fuses',
        response: fuseResponse.extend({ previous_state: z.string(), receipt_id: z.string() }),
        problems: role === 'operator' ? [403, 404, 409] : [404, 409],
        precheck: async (event, key) => {
          const id = fuseIdSchema.safeParse(event.context.params?.fuse_id);
          const fuseId = id.success ? id.data : '';
          await changeableFuse(ctx.ledger.read, callerOf(key), fuseId);
          return fuseId;
        },
        act: {},
      },
      async ({ key, event, checked: fuseId }) => {
        const caller = callerOf(key);
        const answer = await commitAct(event, ctx, key, {
          needs: { fuseId },
          // Read, checked and moved under the write lock: of two concurrent transitions, one wins.
          run: async (tx, state) => {
            const fuse = changeableIn(caller, fuseId, state.fuse);
            const now = nowIso();
            if (!from.includes(fuse.state) || !(await transitionFuse(tx, fuse.id, from, to, now))) {
              throw new Problem({
                status: 409,
                code: 'invalid_transition',
                title: 'Conflict',
                detail: `cannot ${verb} a fuse that is ${fuse.state}: only ${from.join(' or ')} can be ${verb === 'dead' ? 'blown' : 'charged'}`,
                extra: { state: fuse.state },
              });
            }
            const receipt = state.receipt(ctx, {
              kind: `fuse_${verb}`,
              decision: to,
              subject: fuse.id,
              key_id: key.id,
              data: { from: fuse.state },
            });
            const after: Fuse = { ...fuse, state: to, updated_at: now };
            const records = [fuseChangedAlert(ownerId(key), after, fuse.state, receipt, key.id)];
            return {
              writes: { receipt, fuse: after, records },
              reply: reply({ ...fuseObject(after), previous_state: fuse.state, receipt_id: receipt.receipt_id }),
            };
          },
        });
        nudgeDeliverer();
        return answer;
      },
    );

  transition(
    '/v1/fuses/:fuse_id/dead',
    'DEAD',
    FUSE_STATES.filter((s) => s !== 'DEAD'),
    'dead',
    'Blow a fuse: it becomes DEAD and fails closed',
    'agent',
  );
  transition('/v1/fuses/:fuse_id/charge', 'LIVE', CHARGEABLE_STATES, 'charge', 'Charge an UNSIGNED or DEAD fuse back to LIVE', 'operator');
}
