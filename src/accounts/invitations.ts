/**
 * Inviting someone to an account (docs/accounts.md#team-accounts), the same
 * from the dashboard's members page and from POST /v1/members/invitations:
 * refused for a person already in it and past INVITATIONS_PER_WINDOW; the
 * token is 256 random bits of which only the SHA-256 is stored; the link is
 * mailed when MAIL_URL is set, else handed back once to show the inviter.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ROLE_MEANING, type TeamRole } from '../domain/team-roles.ts';
import { nowIso } from '../ids.ts';
import type { AppContext } from '../api/context.ts';
import { insertInvitation, membersOf } from '../ledger/members.ts';
import type { Transaction } from '../ledger/sql.ts';
import type { SendMail } from './mail.ts';
import { countAttempt } from './throttle.ts';

/** Invitations an account may send per SIGNIN_WINDOW_SECONDS (docs/choices-of-ours.md). */
export const INVITATIONS_PER_WINDOW = 20;

export interface NewInvitation {
  accountId: string;
  /** The account's name, for the mail. */
  accountName: string;
  email: string;
  role: TeamRole;
  /** Who invites: a person's id, or the key's id through the API. */
  invitedBy: string;
  /** How the mail names the inviter: their email, or the key's name. */
  inviterLabel: string;
}

export type Invited =
  | { id: string; email: string; role: TeamRole; expires_at: string; mailed: boolean; link: string }
  | { refused: 'already_member' }
  | { refused: 'too_many_invitations'; retryAfter: number };

/** Makes an invitation (and, in the same transaction, whatever `alsoWrite` writes: the dashboard's audit entry), then mails its link. */
export async function inviteToAccount(
  ctx: AppContext,
  sendMail: SendMail,
  inv: NewInvitation,
  alsoWrite?: (tx: Transaction, invitationId: string) => Promise<unknown>,
): Promise<Invited> {
  if ((await membersOf(ctx.ledger.read, inv.accountId)).some((m) => m.email === inv.email)) return { refused: 'already_member' };
  // Each invitation may be a mail to a stranger's address: an account sends a bounded number per window.
  const sent = await countAttempt(ctx.ledger, `invite:${inv.accountId}`, ctx.config.SIGNIN_WINDOW_SECONDS);
  if (sent.count > INVITATIONS_PER_WINDOW) return { refused: 'too_many_invitations', retryAfter: sent.retryAfter };
  const token = randomBytes(32).toString('base64url');
  const now = new Date();
  const expiresAt = nowIso(new Date(now.getTime() + ctx.config.INVITATION_TTL_SECONDS * 1000));
  const id = await ctx.ledger.write(async (tx) => {
    const made = await insertInvitation(tx, {
      tokenHash: createHash('sha256').update(token, 'utf8').digest('base64url'),
      accountId: inv.accountId,
      email: inv.email,
      role: inv.role,
      invitedBy: inv.invitedBy,
      now: nowIso(now),
      expiresAt,
    });
    await alsoWrite?.(tx, made);
    return made;
  });
  const link = `${ctx.config.BASE_URL}/invite/${token}`;
  const mailed = Boolean(ctx.config.MAIL_URL);
  if (mailed)
    await sendMail({
      to: inv.email,
      subject: `${inv.inviterLabel} invited you to ${inv.accountName} on Fuse Gate`,
      text: `${inv.inviterLabel} invited you to act in the Fuse Gate account ${inv.accountName} as ${inv.role} (${ROLE_MEANING[inv.role]}).\n\nAccept, signed in (or signed up) as ${inv.email}, within ${Math.round(ctx.config.INVITATION_TTL_SECONDS / 86_400)} day(s):\n${link}\n\nThe link works once. If you did not expect this, ignore it.\n`,
    });
  return { id, email: inv.email, role: inv.role, expires_at: expiresAt, mailed, link };
}
