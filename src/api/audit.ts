/**
 * The audit log (docs/accounts.md#audit-log): what people did in the
 * dashboard, who did it and when.
 *
 *   GET /v1/audit   operator key   the account's audit log, newest first, filtered
 *
 * Every change the dashboard makes through the API (dashboard/pages.ts
 * callApi) is written here by `auditCall`, named by the table below; the
 * dashboard's own changes (people, passwords, reviews) call `recordAudit`.
 * An entry names objects by id and states non-secret facts: never a key's
 * secret, an invitation's link or a webhook's full URL (only its host).
 */
import { z } from 'zod';
import { ownerId } from '../ledger/accounts.ts';
import { insertAuditEntry, listAudit, type AuditEntry, type NewAuditEntry } from '../ledger/audit-log.ts';
import type { AppContext } from './context.ts';
import { badRequest } from './problem.ts';
import { reply } from './reply.ts';
import type { Router } from './router.ts';
import { operation } from './operation.ts';

export const AUDIT_PATH = '/v1/audit';

/** Who acted: a person signed in, acting in an account. */
export interface Actor {
  accountId: string;
  personId: string;
  email: string;
}

/** An entry of the actor's account's log, for a change written in the same transaction (insertAuditEntry). */
export const auditEntry = (
  actor: Actor,
  action: string,
  target?: string | null,
  detail?: Record<string, unknown> | null,
): NewAuditEntry => ({
  accountId: actor.accountId,
  actorId: actor.personId,
  actorEmail: actor.email,
  action,
  target,
  detail,
});

/** The entry of a change to a person's own sign-in (email, password): in their own account's log, whichever account they act in. */
export const personalEntry = (
  p: { personId: string; email: string },
  action: string,
  target: string,
  detail?: Record<string, unknown>,
): NewAuditEntry => auditEntry({ accountId: p.personId, personId: p.personId, email: p.email }, action, target, detail);

/** Writes one entry of the account's audit log, as `actor`, in a write of its own. */
export async function recordAudit(
  ctx: AppContext,
  actor: Actor,
  action: string,
  target?: string | null,
  detail?: Record<string, unknown> | null,
): Promise<AuditEntry> {
  return ctx.ledger.write((tx) => insertAuditEntry(tx, auditEntry(actor, action, target, detail)));
}

type Body = Record<string, unknown>;
/** A webhook or alert URL may carry a token in its path or query: the log keeps its host only. */
const hostOf = (url: unknown) => (typeof url === 'string' && URL.canParse(url) ? new URL(url).host : null);
const pick = (b: Body, names: string[]) => Object.fromEntries(names.filter((n) => b[n] !== undefined).map((n) => [n, b[n]]));

/**
 * The API changes the dashboard makes, by method and path, and what their
 * entry says. `target` is the id in the path, else the id the answer gives.
 */
const AUDITED: Array<{ path: RegExp; action: string; detail?: (req: Body, res: Body) => Body }> = [
  { path: /^\/v1\/keys$/, action: 'key.created', detail: (_q, r) => pick(r, ['name', 'role']) },
  { path: /^\/v1\/keys\/([^/]+)\/rotate$/, action: 'key.rotated' },
  { path: /^\/v1\/keys\/([^/]+)\/revoke$/, action: 'key.revoked' },
  { path: /^\/v1\/keys\/([^/]+)\/limit$/, action: 'key.hop_limit_changed', detail: (q) => pick(q, ['hop_limit', 'hop_period']) },
  { path: /^\/v1\/keys\/([^/]+)\/surface$/, action: 'key.surface_changed', detail: (q) => pick(q, ['kinds', 'default']) },
  {
    path: /^\/v1\/keys\/([^/]+)\/spend-cap$/,
    action: 'key.spend_cap_changed',
    detail: (q) => ({ spend_cap_usd: q.spend_cap_usd ?? null }),
  },
  { path: /^\/v1\/keys\/([^/]+)\/expiry$/, action: 'key.expiry_changed', detail: (_q, r) => ({ expires_at: r.expires_at ?? null }) },
  { path: /^\/v1\/account\/spend-cap$/, action: 'account.spend_cap_changed', detail: (q) => ({ spend_cap_usd: q.spend_cap_usd ?? null }) },
  { path: /^\/v1\/fuses$/, action: 'fuse.created', detail: (_q, r) => pick(r, ['label', 'state']) },
  { path: /^\/v1\/fuses\/([^/]+)\/dead$/, action: 'fuse.blown' },
  { path: /^\/v1\/fuses\/([^/]+)\/charge$/, action: 'fuse.charged' },
  { path: /^\/v1\/pas\/licenses\/([^/]+)\/dead$/, action: 'licence.blown' },
  { path: /^\/v1\/pas\/licenses\/([^/]+)\/charge$/, action: 'licence.charged' },
  { path: /^\/v1\/pas\/grants$/, action: 'grant.created', detail: (q) => pick(q, ['name', 'lines', 'states', 'max_premium']) },
  { path: /^\/v1\/pas\/grants\/([^/]+)\/revoke$/, action: 'grant.revoked' },
  { path: /^\/signal\/trigger\/webhooks$/, action: 'webhook.created', detail: (q) => ({ host: hostOf(q.url) }) },
  { path: /^\/signal\/trigger\/webhooks\/deliveries\/([^/]+)\/retry$/, action: 'webhook.delivery_retried' },
  { path: /^\/v1\/alerts$/, action: 'alert.created', detail: (q) => ({ host: hostOf(q.url), events: q.events ?? null }) },
  { path: /^\/v1\/alerts\/([^/]+)\/test$/, action: 'alert.test_sent' },
  { path: /^\/v1\/alerts\/([^/]+)\/remove$/, action: 'alert.removed' },
];

/** Every action an entry may name, for the dashboard's filter (the API takes any). */
export const AUDIT_ACTIONS = [
  ...AUDITED.map((a) => a.action),
  'review.approved',
  'review.denied',
  'member.invited',
  'member.invitation_revoked',
  'member.joined',
  'member.role_changed',
  'member.removed',
  'person.email_changed',
  'person.password_changed',
  'person.password_reset',
  'dashboard.call',
] as const;

const idIn = (res: Body) =>
  [res.id, res.fuse_id, res.grant_id, res.subscription_id].find((v) => typeof v === 'string') as string | undefined;

/** After a change the dashboard made through the API succeeded: its entry (a change the table does not name is `dashboard.call`, with its path). */
export async function auditCall(ctx: AppContext, actor: Actor, path: string, req: Body, res: Body): Promise<void> {
  const bare = path.split('?')[0]!;
  for (const a of AUDITED) {
    const m = a.path.exec(bare);
    if (!m) continue;
    const target = m[1] !== undefined ? decodeURIComponent(m[1]) : idIn(res);
    await recordAudit(ctx, actor, a.action, target ?? null, a.detail?.(req, res) ?? null);
    return;
  }
  await recordAudit(ctx, actor, 'dashboard.call', null, { method: 'POST', path: bare });
}

const LIST_LIMIT_MAX = 200;
const listQuery = z.strictObject({
  action: z
    .string()
    .regex(/^[a-z_]{1,40}(\.([a-z_]{1,40})?)?$/, 'an action such as key.created, or an area such as key.')
    .optional()
    .describe('an action (key.created), or every action of an area (key.)'),
  actor: z.string().min(3).max(320).optional().describe('the email of the person who acted'),
  target: z.string().min(1).max(200).optional().describe('the object acted on: a key or fuse id, an email'),
  from: z.iso.datetime().optional().describe('from this instant (inclusive)'),
  to: z.iso.datetime().optional().describe('before this instant'),
  limit: z.coerce.number().int().min(1).max(LIST_LIMIT_MAX).default(50),
  before: z
    .string()
    .regex(/^aud_[A-Za-z0-9_-]{1,80}$/, 'the `next` cursor of an earlier page')
    .optional(),
});
export type AuditQuery = z.output<typeof listQuery>;

/** The query of a list request, or a 400 naming the field. */
export function auditQuery(params: URLSearchParams): AuditQuery {
  const q = listQuery.safeParse(Object.fromEntries(params));
  if (q.success) return q.data;
  const issue = q.error.issues[0]!;
  throw badRequest('invalid_query', `${issue.path.join('.') || 'query'}: ${issue.message}`, {
    errors: q.error.issues.map((i) => ({ field: i.path.join('.'), message: i.message })),
  });
}

/** One page of the account's audit log, as the API and the dashboard show it. */
export async function auditPage(ctx: AppContext, accountId: string, q: AuditQuery) {
  const page = await listAudit(
    ctx.ledger.read,
    accountId,
    { action: q.action, actor: q.actor?.toLowerCase(), target: q.target, from: q.from, to: q.to },
    q.limit,
    q.before,
  );
  return {
    object: 'list' as const,
    data: page.entries.map((e) => ({
      object: 'audit_entry' as const,
      id: e.id,
      at: e.at,
      actor: { id: e.actor_id, email: e.actor_email },
      action: e.action,
      target: e.target,
      detail: e.detail,
    })),
    next: page.next ?? null,
  };
}

const entryObject = z.looseObject({
  object: z.literal('audit_entry'),
  id: z.string(),
  at: z.string(),
  actor: z.object({ id: z.string(), email: z.string() }),
  action: z.string(),
  target: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()).nullable(),
});

export function registerAuditRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: AUDIT_PATH,
      summary:
        "The account's audit log, newest first: what people did in the dashboard (keys made and revoked, caps changed, fuses blown and charged, members invited, removed and given another role, passwords changed), who and when; never a secret",
      auth: 'key',
      role: 'operator',
      tag: 'system',
      query: listQuery,
      response: z.looseObject({ object: z.literal('list'), data: z.array(entryObject), next: z.string().nullable() }),
      problems: [400, 403],
    },
    async ({ key, event }) => {
      return reply(await auditPage(ctx, ownerId(key), auditQuery(event.url.searchParams)), 200, {
        'cache-control': 'private, no-store',
      });
    },
  );
}
