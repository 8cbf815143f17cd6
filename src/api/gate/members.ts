/**
 * The account's people through the API (docs/accounts.md#team-accounts), for
 * operator keys, as the dashboard's members page has them:
 *   GET  /v1/members                      its people, and its open invitations
 *   POST /v1/members/invitations          {email, role}: an invitation, mailed (MAIL_URL) or its link answered once
 *   POST /v1/members/{person_id}/role     {role}: another role
 *   POST /v1/members/{person_id}/remove   they no longer act in the account
 * The same rules as the page's (ledger/members.ts): no change leaves the
 * account without an owner, and nobody is removed from their own account. A
 * test key reads them but changes nothing: they are the live account's people.
 * `fusegate members` (cli/members.ts) is built on these.
 */
import { z } from 'zod';
import { mailTransport } from '../../accounts/mail.ts';
import { inviteToAccount } from '../../accounts/invitations.ts';
import { TEAM_ROLES } from '../../domain/team-roles.ts';
import { nowIso } from '../../ids.ts';
import { accountName } from '../../ledger/accounts.ts';
import { membersOf, openInvitationsOf, removeMember, setMemberRole, type Member, type MemberRefusal } from '../../ledger/members.ts';
import type { AppContext } from '../context.ts';
import { notFound, Problem } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';
import { liveKeyOnly } from '../auth.ts';

const memberObject = z.object({
  object: z.literal('member'),
  id: z.string().describe("the person's id"),
  email: z.string(),
  role: z.enum(TEAM_ROLES),
  own: z.boolean().describe('whether this is their own account (the one they signed up with): they may not be removed from it'),
  joined_at: z.string(),
});
const invitationObject = z.object({
  object: z.literal('invitation'),
  id: z.string(),
  email: z.string(),
  role: z.enum(TEAM_ROLES),
  expires_at: z.string(),
});
const inviteRequest = z.strictObject({
  email: z.string().trim().toLowerCase().pipe(z.email()).describe('the email of the person invited'),
  role: z.enum(TEAM_ROLES),
});
const roleRequest = z.strictObject({ role: z.enum(TEAM_ROLES) });

const memberView = (m: Member) => ({
  object: 'member' as const,
  id: m.person_id,
  email: m.email,
  role: m.role,
  own: m.own,
  joined_at: m.created_at,
});

const REFUSALS: Record<MemberRefusal, { status: number; detail: string }> = {
  not_a_member: { status: 404, detail: 'that person is not one of this account’s people' },
  last_owner: { status: 409, detail: 'an account always keeps an owner: make someone else an owner first' },
  own_account: { status: 409, detail: 'this is their own account: they may be given another role (viewer), not removed' },
};

function refused(r: MemberRefusal): Problem {
  const { status, detail } = REFUSALS[r];
  return status === 404 ? notFound(detail, r) : new Problem({ status, code: r, title: 'Conflict', detail });
}

export function registerMemberRoutes(router: Router, ctx: AppContext): void {
  const doc = { auth: 'key', role: 'operator', tag: 'keys' } as const;
  const sendMail = mailTransport(ctx.config, ctx.log);
  const personOf = async (accountId: string, personId: string) => {
    const m = (await membersOf(ctx.ledger.read, accountId)).find((x) => x.person_id === personId);
    if (!m) throw refused('not_a_member');
    return m;
  };

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/members',
      ...doc,
      tool: 'members_list',
      summary: "The account's people (owners first) with their roles, and its open invitations",
      response: z.object({ object: z.literal('list'), data: z.array(memberObject), invitations: z.array(invitationObject) }),
      problems: [403],
    },
    async ({ key }) => {
      const { account_id } = key;
      const [members, invitations] = await Promise.all([
        membersOf(ctx.ledger.read, account_id),
        openInvitationsOf(ctx.ledger.read, account_id, nowIso()),
      ]);
      return reply({
        object: 'list',
        data: members.map(memberView),
        invitations: invitations.map((i) => ({ object: 'invitation', id: i.id, email: i.email, role: i.role, expires_at: i.expires_at })),
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/members/invitations',
      ...doc,
      audit: { action: 'member.invited', target: (a) => a.email as string, detail: (a) => ({ role: a.role, invitation_id: a.id }) },
      tool: 'member_invite',
      summary:
        'Invite someone to the account with a role: the link (single use, INVITATION_TTL_SECONDS) is mailed when the service sends mail, else answered this once in `link`',
      body: inviteRequest,
      responses: {
        201: {
          description: 'The invitation',
          schema: invitationObject.extend({ mailed: z.boolean(), link: z.string().nullable() }),
        },
      },
      problems: [403, 409, 429],
      example: { email: 'ops@example.invalid', role: 'operator' },
    },
    async ({ key, input: b }) => {
      liveKeyOnly(key, "the account's people");
      const invited = await inviteToAccount(ctx, sendMail, {
        accountId: key.account_id,
        accountName: (await accountName(ctx.ledger.read, key.account_id)) ?? 'an account',
        email: b.email,
        role: b.role,
        invitedBy: key.id,
        inviterLabel: `The key ${key.name}`,
      });
      if ('refused' in invited) {
        if (invited.refused === 'already_member')
          throw new Problem({
            status: 409,
            code: 'already_member',
            title: 'Conflict',
            detail: `${b.email} is already one of this account’s people: change their role instead`,
          });
        throw new Problem({
          status: 429,
          code: 'too_many_invitations',
          title: 'Too many requests',
          detail: `too many invitations from this account: try again in ${Math.ceil(invited.retryAfter / 60)} minute(s)`,
          headers: { 'retry-after': String(invited.retryAfter) },
        });
      }
      return reply(
        {
          object: 'invitation',
          id: invited.id,
          email: invited.email,
          role: invited.role,
          expires_at: invited.expires_at,
          mailed: invited.mailed,
          // Without mail the link is answered this once, to pass on; only its hash is kept.
          link: invited.mailed ? null : invited.link,
        },
        201,
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/members/:person_id/role',
      ...doc,
      audit: { action: 'member.role_changed', target: (a) => a.email as string, detail: (a) => ({ from: a.previous_role, to: a.role }) },
      tool: 'member_role',
      summary: 'Give one of the account’s people another role; refused (409 last_owner) when it would leave the account without an owner',
      body: roleRequest,
      response: memberObject.extend({ previous_role: z.enum(TEAM_ROLES) }),
      problems: [403, 404, 409],
      example: { role: 'viewer' },
    },
    async ({ key, input: b, params }) => {
      liveKeyOnly(key, "the account's people");
      const m = await personOf(key.account_id, String(params.person_id));
      const r = await ctx.ledger.write((tx) => setMemberRole(tx, key.account_id, m.person_id, b.role));
      if ('refused' in r) throw refused(r.refused);
      return reply({ ...memberView({ ...m, role: b.role }), previous_role: r.from });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/members/:person_id/remove',
      ...doc,
      audit: { action: 'member.removed', target: (a) => a.email as string, detail: (a) => ({ role: a.role }) },
      tool: 'member_remove',
      summary:
        'Remove one of the account’s people: they no longer act in it. Refused for the last owner (409 last_owner) and for the person whose own account it is (409 own_account)',
      response: memberObject.extend({ removed: z.literal(true) }),
      problems: [403, 404, 409],
    },
    async ({ key, params }) => {
      liveKeyOnly(key, "the account's people");
      const m = await personOf(key.account_id, String(params.person_id));
      const r = await ctx.ledger.write((tx) => removeMember(tx, key.account_id, m.person_id));
      if ('refused' in r) throw refused(r.refused);
      return reply({ ...memberView(m), removed: true });
    },
  );
}
