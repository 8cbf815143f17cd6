/**
 * `fusegate members list|invite|role|remove`: the account's people
 * (docs/accounts.md#team-accounts) from a terminal, through the running gate
 * (FUSEGATE_URL) with an operator key (FUSEGATE_KEY): the service keeps the
 * rules (an account always keeps an owner) and writes each change to the
 * audit log, as the key.
 */
import { TEAM_ROLES } from '../domain/team-roles.ts';
import { callGate } from './gate-client.ts';
import { type CliContext, type Command, UsageError, enumFlag } from './shared.ts';

type Row = Record<string, unknown>;

/** A person of the account named by id or by email, as `members list` shows them. */
async function personId(ctx: CliContext, who: string): Promise<string | undefined> {
  if (!who.includes('@')) return who;
  const list = await callGate(ctx, `cannot find ${who}`, 'members_list', {});
  if (!list) return undefined;
  const m = (list.data as Row[]).find((x) => x.email === who.toLowerCase());
  if (!m) ctx.out(`no person ${who} in this account`, { error: 'not_a_member', email: who });
  return m ? String(m.id) : undefined;
}

const roleFlag = (ctx: CliContext) => {
  const role = enumFlag(ctx, 'role', TEAM_ROLES);
  if (!role) throw new UsageError(`--role is required: ${TEAM_ROLES.join(', ')}`);
  return role;
};

const whoArg = (ctx: CliContext) => {
  const who = ctx.args[0];
  if (!who) throw new UsageError('the person (their id or email) is required');
  return who;
};

export const memberCommands: Record<string, Command> = {
  'members list': {
    usage: 'members list',
    summary: "the account's people with their roles, and its open invitations (FUSEGATE_URL, FUSEGATE_KEY)",
    async run(ctx) {
      const list = await callGate(ctx, 'cannot list', 'members_list', {});
      if (!list) return 1;
      const people = (list.data as Row[]).map(
        (m) => `${m.id}  ${String(m.role).padEnd(8)}  ${m.email}${m.own ? '  (their own account)' : ''}`,
      );
      const invited = (list.invitations as Row[]).map(
        (i) => `${i.id}  ${String(i.role).padEnd(8)}  ${i.email}  invited, until ${i.expires_at}`,
      );
      ctx.out([...people, ...invited].join('\n') || 'nobody', list);
    },
  },
  'members invite': {
    usage: 'members invite EMAIL --role owner|operator|viewer',
    summary: 'invite someone with a role: the link is mailed, or printed once when the service sends no mail',
    async run(ctx) {
      const email = ctx.args[0];
      if (!email) throw new UsageError('the EMAIL to invite is required');
      const inv = await callGate(ctx, `cannot invite ${email}`, 'member_invite', { email, role: roleFlag(ctx) });
      if (!inv) return 1;
      ctx.out(
        inv.mailed
          ? `invited ${inv.email} as ${inv.role}: the link is in their mailbox (until ${inv.expires_at})`
          : `invited ${inv.email} as ${inv.role}; pass on this link, shown once (until ${inv.expires_at}):\n${inv.link}`,
        inv,
      );
    },
  },
  'members role': {
    usage: 'members role PERSON --role owner|operator|viewer',
    summary: 'give one of the account’s people (id or email) another role; the last owner keeps theirs',
    async run(ctx) {
      const role = roleFlag(ctx);
      const id = await personId(ctx, whoArg(ctx));
      if (!id) return 1;
      const m = await callGate(ctx, `cannot change the role of ${whoArg(ctx)}`, 'member_role', { person_id: id, role });
      if (!m) return 1;
      ctx.out(`${m.email} is now ${m.role} (was ${m.previous_role})`, m);
    },
  },
  'members remove': {
    usage: 'members remove PERSON',
    summary: 'remove one of the account’s people (id or email); never the last owner, nor anyone from their own account',
    async run(ctx) {
      const id = await personId(ctx, whoArg(ctx));
      if (!id) return 1;
      const m = await callGate(ctx, `cannot remove ${whoArg(ctx)}`, 'member_remove', { person_id: id });
      if (!m) return 1;
      ctx.out(`removed ${m.email} (${m.role})`, m);
    },
  },
};
