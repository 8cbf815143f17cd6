/**
 * Policy administration (SPEC 2.3, 3, 4.1 /v1/pas/*, /demo/pas/*, 7): licence
 * parents, bind tickets (issued by PAS-A pre-bind, consumed by redeem),
 * exclusion proofs, bind check and appendix, PAS-B pre-bind, delegated
 * authority, and the public demos on drill data.
 *
 * Every decision is a receipt in the receipts log, committed in ONE
 * transaction with its state change, its meter row and its idempotent answer.
 * Decisions are answered with their body, never as problems: ALLOW 200;
 * BLOCK 403; HALT 409; HOLD 409 (a raised manual-underwriting issue, and the
 * review that answers it: docs/reviews.md).
 *
 * This module declares the operations; their requests and answers are
 * pas-schemas.ts, and the governed decisions pas-governed.ts (as the hop's
 * declarations in hop.ts call the rules of governed.ts).
 */
import type { H3Event } from 'h3';
import { exclusionProofJson } from '../../crypto/exclusion.ts';
import { verifierKey } from '../../crypto/note.ts';
import { CHARGEABLE_LICENSE_STATES, HALT_REASONS, type LicenseState } from '../../domain/pas.ts';
import { nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { DRILL_FUSES } from '../../ledger/fuses.ts';
import { signedExclusionProof } from '../../ledger/pas-exclusion.ts';
import { jobReceipts, licenseSnapshot, licenseStateOf, transitionLicense } from '../../ledger/pas.ts';
import { verifyUrl } from '../../ledger/receipts.ts';
import type { AppContext } from '../context.ts';
import { Problem, badRequest, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { callerOf, UNCHARGED } from './governed.ts';
import { commitAct } from '../act.ts';
import {
  appendixResponse,
  authorityRequest,
  bindCheckRequest,
  decisionResponse,
  demoAuthorityRequest,
  demoBindCheckRequest,
  demoPreBindARequest,
  exclusionResponse,
  jobQuery,
  licenseIdSchema,
  preBindARequest,
  preBindBRequest,
  redeemRequest,
  snapshotResponse,
  transitionResponse,
} from './pas-schemas.ts';
import { authority, bindCheck, preBindA, preBindB, receiptBody, redeem } from './pas-governed.ts';
import { operation } from '../operation.ts';

export function registerPasRoutes(router: Router, ctx: AppContext): void {
  // The demo's rate limit is the router's (route-guard.ts): a demo route declares auth: 'demo'.
  const publicCaller = async (_event: H3Event) => callerOf(undefined);
  const licenseParam = (event: H3Event) => {
    const id = licenseIdSchema.safeParse(event.context.params?.license_id);
    if (!id.success)
      throw badRequest('invalid_path', `license_id: ${id.error.issues[0]!.message}`, {
        errors: [{ field: 'license_id', message: id.error.issues[0]!.message }],
      });
    return id.data;
  };

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/pas/licenses/:license_id',
      tool: 'pas_license',
      summary:
        'Licence parent snapshot: UNSIGNED until charge, ARMED when LIVE with unredeemed children; children counts and state history',
      auth: 'key',
      tag: 'pas',
      response: snapshotResponse,
    },
    async ({ key, event }) => {
      return reply(await licenseSnapshot(ctx.ledger.read, ownerId(key), licenseParam(event), nowIso()));
    },
  );

  const transition = (verb: 'charge' | 'dead', to: 'LIVE' | 'DEAD', from: readonly LicenseState[]) =>
    operation(
      router,
      ctx,
      {
        method: 'POST',
        path: `/v1/pas/licenses/:license_id/${verb}`,
        audit: { action: verb === 'dead' ? 'licence.blown' : 'licence.charged', target: 'license_id' },
        auth: 'key',
        ...(verb === 'charge'
          ? {
              tool: 'pas_license_charge',
              summary: 'Charge-only resurrection: UNSIGNED or DEAD to LIVE (no bind-only write is made); 409 when already LIVE',
              role: 'operator' as const,
              tag: 'pas',
              response: transitionResponse,
              problems: [403, 409, 422],
            }
          : {
              tool: 'pas_license_blow',
              summary: 'Blow the licence parent (stored and reported as DEAD); outstanding tickets cannot redeem until a charge',
              tag: 'pas',
              response: transitionResponse,
              problems: [422],
            }),
        precheck: (event) => licenseParam(event),
        act: {},
      },
      async ({ key, event, checked: licenseId }) =>
        commitAct(event, ctx, key, {
          run: async (tx, act) => {
            const receipt = act.receipt(ctx, { kind: `pas_license_${verb}`, decision: to, subject: licenseId, key_id: key.id });
            const now = nowIso();
            const previous = await transitionLicense(tx, { keyId: ownerId(key), licenseId, from, to, receiptId: receipt.receipt_id, now });
            if (previous === null) {
              throw new Problem({
                status: 409,
                code: 'invalid_transition',
                title: 'Conflict',
                detail: `licence ${licenseId} is already LIVE: charge resurrects only an UNSIGNED or DEAD parent`,
                extra: { license_id: licenseId, state: await licenseStateOf(act, ownerId(key), licenseId) },
              });
            }
            const state = await licenseStateOf(act, ownerId(key), licenseId);
            return {
              writes: { receipt },
              reply: reply({
                object: 'license_transition',
                license_id: licenseId,
                action: verb,
                previous_state: previous,
                state,
                at: now,
                ...receiptBody(receipt),
              }),
            };
          },
        }),
    );
  transition('charge', 'LIVE', CHARGEABLE_LICENSE_STATES);
  transition('dead', 'DEAD', ['UNSIGNED', 'LIVE', 'ARMED', 'DEAD']);

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/pas/pas-a/pre-bind',
      auth: 'key',
      tool: 'pas_a_pre_bind',
      summary:
        'PAS-A pre-bind: hop, then a bind-only ticket (200), a raised manual-underwriting issue (HOLD 409) or BLOCK (403) for a job already bound; bind-and-issue is never granted',
      tag: 'pas',
      body: preBindARequest,
      response: decisionResponse,
      responses: {
        200: { description: 'A bind-only ticket', schema: decisionResponse },
        409: { description: 'HOLD: a manual-underwriting issue was raised; no ticket, do not bind', schema: decisionResponse },
        403: { description: 'BLOCK: the job is already bound; no ticket, do not bind', schema: decisionResponse },
      },
      problems: [402, 404, 409, 422],
      charges: ['execute_gate', 'hold'],
      example: {
        fuse_id: 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd',
        license_id: 'lic_acme_2026',
        job_id: 'job_1042',
        write: { op: 'bind', policy: 'P-1042', premium: '12500.00' },
      },
      act: { lane: true },
    },
    ({ input: b, key, event, bill }) => preBindA(event, ctx, callerOf(key), bill, b),
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/pas/bind-ticket/redeem',
      auth: 'key',
      tool: 'pas_ticket_redeem',
      summary: `Consume a single-use bind ticket for the write it is bound to; HALT (409) with reason ${HALT_REASONS.join(', ')}`,
      tag: 'pas',
      body: redeemRequest,
      response: decisionResponse,
      responses: { 409: { description: 'HALT: the ticket was not consumed; do not forward the write', schema: decisionResponse } },
      problems: [404, 409, 422],
      charges: ['execute_gate', 'hold'],
      example: {
        ticket_id: 'bt_9Wm3Qx7LzT2vN8kR4sPc5D',
        write: { op: 'bind', policy: 'P-1042', premium: '12500.00' },
        now: '2026-11-22T10:00:00Z',
      },
      act: { lane: true },
    },
    ({ input: b, key, event, bill }) => redeem(event, ctx, key, bill, b),
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/pas/exclusion',
      tool: 'pas_exclusion',
      summary:
        'Exclusion proof (our extension): the job has no redeemed spend leaf, or has one, by a sparse Merkle path (bitmap and non-empty siblings) against a signed tree head',
      auth: 'key',
      tag: 'pas',
      query: jobQuery,
      response: exclusionResponse,
    },
    async ({ key, input }) => {
      const { job_id } = input;
      const p = await signedExclusionProof(ctx, ownerId(key), job_id);
      const head = { origin: p.origin, tree_size: p.head.size, root_hash: Buffer.from(p.head.root).toString('base64'), note: p.note };
      return reply({
        ...exclusionProofJson(job_id, p.proof, head),
        verifier_key: verifierKey(p.origin, ctx.keyring.current.raw),
        public_key_url: `${ctx.config.BASE_URL}/crypto/public-key`,
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/pas/bind-check',
      auth: 'key',
      tool: 'pas_bind_check',
      summary: 'Bind check: ALLOW (200) or BLOCK (403) with a receipt; fuse_id and job identifiers only',
      tag: 'pas',
      body: bindCheckRequest,
      response: decisionResponse,
      responses: { 403: { description: 'BLOCK: do not bind', schema: decisionResponse } },
      problems: [402, 404, 422],
      charges: ['execute_gate', 'hold'],
      example: { fuse_id: 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd', job_id: 'job_1042' },
      act: { lane: true },
    },
    ({ input: b, key, event, bill }) => bindCheck(event, ctx, callerOf(key), bill, b),
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/pas/bind-appendix',
      tool: 'pas_bind_appendix',
      summary: 'On-request examiner appendix: job_id, verify_url and the receipts of the job; not the regulatory filing',
      auth: 'key',
      tag: 'pas',
      query: jobQuery,
      response: appendixResponse,
      problems: [404],
    },
    async ({ key, input }) => {
      const { job_id } = input;
      const rows = await jobReceipts(ctx.ledger.read, ownerId(key), job_id);
      if (rows.length === 0) throw notFound(`no receipts for job ${job_id}`, 'unknown_job');
      const receipts = rows.map((r) => ({ ...r, verify_url: verifyUrl(ctx, r.receipt_id) }));
      return reply({
        object: 'bind_appendix',
        job_id,
        verify_url: receipts.at(-1)!.verify_url,
        receipts,
        exclusion_url: `${ctx.config.BASE_URL}/v1/pas/exclusion?job_id=${encodeURIComponent(job_id)}`,
        notice: 'On-request examiner appendix. It is not the regulatory filing.',
        generated_at: nowIso(),
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/pas/pas-b/pre-bind',
      auth: 'key',
      tool: 'pas_b_pre_bind',
      summary: 'PAS-B pre-bind, the issue wrap: proceed (200) or halt (409; the caller must not call issue)',
      tag: 'pas',
      body: preBindBRequest,
      response: decisionResponse,
      responses: { 409: { description: 'halt: do not call issue', schema: decisionResponse } },
      problems: [402, 404, 422],
      charges: ['execute_gate', 'hold'],
      example: { fuse_id: 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd', license_id: 'lic_acme_2026', job_id: 'job_1042' },
      act: { lane: true },
    },
    ({ input: b, key, event, bill }) => preBindB(event, ctx, callerOf(key), bill, b),
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/pas/mga-authority',
      auth: 'key',
      tool: 'pas_mga_authority',
      summary:
        'Delegated-authority check: hop plus the premium, line and state limits of a grant; ALLOW (200) or BLOCK (403) naming the failed limits',
      tag: 'pas',
      body: authorityRequest,
      response: decisionResponse,
      responses: { 403: { description: 'BLOCK naming the failed limits', schema: decisionResponse } },
      problems: [402, 404, 422],
      charges: ['execute_gate', 'hold'],
      example: {
        fuse_id: 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd',
        grant_id: 'auth_4Lq9Xz2BvN7tKp3WmR8sYd',
        premium: '12500.00',
        line: 'cyber',
        state: 'CA',
      },
      act: { lane: true },
    },
    ({ input: b, key, event, bill }) => authority(event, ctx, callerOf(key), bill, b),
  );

  // Public demos on drill data (fuse_drill_live/dead, lic_drill_live/dead, auth_drill): never charged, rate limited.
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/demo/pas/bind-check',
      tool: 'demo_pas_bind_check',
      summary: 'Public bind ALLOW/BLOCK demo on the drill fuses',
      auth: 'demo',
      tag: 'pas',
      body: demoBindCheckRequest,
      response: decisionResponse,
      responses: { 403: { description: 'BLOCK: do not bind', schema: decisionResponse } },
      problems: [404, 429],
      example: { fuse_id: DRILL_FUSES.dead, job_id: 'job_demo' },
    },
    async ({ input, event }) => {
      const caller = await publicCaller(event);
      return await bindCheck(event, ctx, caller, UNCHARGED, input);
    },
  );
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/demo/pas/mga-authority',
      tool: 'demo_pas_mga_authority',
      summary: 'Public delegated-authority check on the drill grant (auth_drill)',
      auth: 'demo',
      tag: 'pas',
      body: demoAuthorityRequest,
      response: decisionResponse,
      responses: { 403: { description: 'BLOCK naming the failed limits', schema: decisionResponse } },
      problems: [404, 429],
      example: { premium: '300000.00', line: 'cyber', state: 'CA' },
    },
    async ({ input, event }) => {
      const caller = await publicCaller(event);
      return await authority(event, ctx, caller, UNCHARGED, input);
    },
  );
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/demo/pas/pas-a/pre-bind',
      tool: 'demo_pas_a_pre_bind',
      summary: 'Public pre-bind weld on drill data: a demo ticket (never redeemable) or a manual-underwriting issue',
      auth: 'demo',
      tag: 'pas',
      body: demoPreBindARequest,
      response: decisionResponse,
      responses: {
        200: { description: 'A bind-only ticket', schema: decisionResponse },
        409: { description: 'HOLD: a manual-underwriting issue was raised; no ticket, do not bind', schema: decisionResponse },
        403: { description: 'BLOCK: the job is already bound; no ticket, do not bind', schema: decisionResponse },
      },
      problems: [404, 429],
      example: { license_id: 'lic_drill_dead', job_id: 'job_demo' },
    },
    async ({ input, event }) => {
      const caller = await publicCaller(event);
      return await preBindA(event, ctx, caller, UNCHARGED, input);
    },
  );
}
