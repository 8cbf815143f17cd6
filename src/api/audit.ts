/**
 * The audit log (docs/accounts.md#audit-log): what people did in the
 * dashboard, and what keys changed through the API: who did it and when.
 *
 *   GET /v1/audit   operator key   the account's audit log, newest first, filtered
 *
 * A route that changes what the log records declares it (RouteDoc `audit`),
 * and `routeAuditor` writes its entry after a 2xx answer, whoever called: the
 * person a dashboard call is made for, else the key. The dashboard's own
 * changes (people, passwords, reviews) call `recordAudit`. An entry names
 * objects by id and states non-secret facts: never a key's secret, an
 * invitation's link or a webhook's full URL (only its host).
 */
import { HTTPResponse, type H3Event } from 'h3';
import { z } from 'zod';
import { ownerId } from '../ledger/accounts.ts';
import { insertAuditEntry, listAudit, type AuditEntry, type NewAuditEntry } from '../ledger/audit-log.ts';
import type { AppContext } from './context.ts';
import { validQuery } from './body.ts';
import { reply } from './reply.ts';
import type { RouteRecord, Router } from './router.ts';
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
  actorName: actor.email,
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
export const hostOf = (url: unknown) => (typeof url === 'string' && URL.canParse(url) ? new URL(url).host : null);
/** The named fields of an answer that it has. */
export const pick = (b: Body, names: string[]) => Object.fromEntries(names.filter((n) => b[n] !== undefined).map((n) => [n, b[n]]));

declare module 'h3' {
  interface H3EventContext {
    /** The person a dashboard call is made for (dashboard/pages.ts callApi): the actor of what it changes, in place of the key. */
    auditActor?: Actor;
    /** Set once the call's change is in the audit log (routeAuditor). */
    audited?: boolean;
  }
}

const idIn = (res: Body) =>
  [res.id, res.fuse_id, res.grant_id, res.subscription_id].find((v) => typeof v === 'string') as string | undefined;

/** The JSON body of a route's answer (an object when it is one). */
async function answerBody(answer: unknown): Promise<Body> {
  let body: unknown = answer;
  if (answer instanceof Response) body = await answer.clone().json();
  else if (answer instanceof HTTPResponse) body = typeof answer.body === 'string' ? JSON.parse(answer.body) : {};
  return body !== null && typeof body === 'object' ? (body as Body) : {};
}

const statusOf = (answer: unknown): number => (answer instanceof Response || answer instanceof HTTPResponse ? (answer.status ?? 200) : 200);
const replayed = (answer: unknown): boolean =>
  (answer instanceof Response || answer instanceof HTTPResponse) && answer.headers.get('idempotent-replayed') === 'true';

/**
 * What the router runs after a route that declares an `audit` (RouteDoc):
 * on a 2xx answer that is not an Idempotency-Key replay, the entry, as the
 * person a dashboard call was made for, else as the calling key (its name
 * and id). The one place an entry of a route's change is written.
 */
export function routeAuditor(ctx: AppContext, route: RouteRecord): ((event: H3Event, answer: unknown) => Promise<void>) | undefined {
  const doc = route.doc?.audit;
  if (!doc) return undefined;
  return async (event, answer) => {
    const status = statusOf(answer);
    if (status < 200 || status > 299 || replayed(answer)) return;
    const key = event.context.apiKey;
    const person = event.context.auditActor;
    if (!person && !key) return;
    const body = await answerBody(answer);
    const param = typeof doc.target === 'string' ? event.context.params?.[doc.target] : undefined;
    const target = typeof doc.target === 'function' ? doc.target(body) : param !== undefined ? decodeURIComponent(param) : idIn(body);
    const detail = { ...doc.detail?.(body), ...(!person && key?.mode === 'test' ? { mode: 'test' } : {}) };
    const entry: NewAuditEntry = person
      ? auditEntry(person, doc.action, target ?? null, detail)
      : { accountId: key!.account_id, actorId: key!.id, actorName: key!.name, action: doc.action, target: target ?? null, detail };
    if (Object.keys(detail).length === 0) entry.detail = null;
    try {
      await ctx.ledger.write((tx) => insertAuditEntry(tx, entry));
      event.context.audited = true;
    } catch (e) {
      // The change is made and answered: a lost entry is logged, not turned into a failure of the change.
      ctx.log('error', 'audit entry not written', { action: doc.action, target: target ?? null, error: String(e) });
    }
  };
}

/** After a change the dashboard made through the API succeeded that its route records nothing of: a `dashboard.call` entry, with its path. */
export async function auditUndeclared(ctx: AppContext, actor: Actor, path: string): Promise<void> {
  await recordAudit(ctx, actor, 'dashboard.call', null, { method: 'POST', path: path.split('?')[0]! });
}

const LIST_LIMIT_MAX = 200;
const listQuery = z.strictObject({
  action: z
    .string()
    .regex(/^[a-z_]{1,40}(\.([a-z_]{1,40})?)?$/, 'an action such as key.created, or an area such as key.')
    .optional()
    .describe('an action (key.created), or every action of an area (key.)'),
  actor: z.string().min(1).max(320).optional().describe('who acted: the email of a person (any case), or the name of a key (exactly)'),
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
export const auditQuery = (params: URLSearchParams): AuditQuery => validQuery(listQuery, params);

/** One page of the account's audit log, as the API and the dashboard show it. */
export async function auditPage(ctx: AppContext, accountId: string, q: AuditQuery) {
  const page = await listAudit(
    ctx.ledger.read,
    accountId,
    { action: q.action, actor: q.actor?.includes('@') ? q.actor.toLowerCase() : q.actor, target: q.target, from: q.from, to: q.to },
    q.limit,
    q.before,
  );
  return {
    object: 'list' as const,
    data: page.entries.map((e) => ({
      object: 'audit_entry' as const,
      id: e.id,
      at: e.at,
      actor: actorView(e),
      action: e.action,
      target: e.target,
      detail: e.detail,
    })),
    next: page.next ?? null,
  };
}

/** Who made an entry: a person (their email) or a key (its name then). */
const actorView = (e: AuditEntry) =>
  e.actor_id.startsWith('key_')
    ? { kind: 'key' as const, id: e.actor_id, name: e.actor_name }
    : { kind: 'person' as const, id: e.actor_id, email: e.actor_name };

const entryObject = z.looseObject({
  object: z.literal('audit_entry'),
  id: z.string(),
  at: z.string(),
  actor: z.union([
    z.object({ kind: z.literal('person'), id: z.string(), email: z.string() }),
    z.object({ kind: z.literal('key'), id: z.string(), name: z.string() }),
  ]),
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
        "The account's audit log, newest first: what people did in the dashboard and keys did through the API (keys made, rotated and revoked, caps changed, fuses blown and charged, members invited, removed and given another role, passwords changed), who (a person or a key) and when; never a secret",
      auth: 'key',
      role: 'operator',
      tag: 'system',
      query: listQuery,
      response: z.looseObject({ object: z.literal('list'), data: z.array(entryObject), next: z.string().nullable() }),
      problems: [400, 403],
    },
    async ({ key, input }) => reply(await auditPage(ctx, ownerId(key), input), 200, { 'cache-control': 'private, no-store' }),
  );
}
