/**
 * Team accounts (issue 49, docs/accounts.md#team-accounts), as plain forms:
 *   GET      /dashboard/members                      the account's people and open invitations; your accounts
 *   POST     /dashboard/members/invite               {email, role}: an invitation link (owner)
 *   POST     /dashboard/members/invitations/revoke   {invitation}: the link stops working (owner)
 *   POST     /dashboard/members/role                 {person, role}: another role (owner)
 *   GET/POST /dashboard/members/remove               {person}: asks first, then removes (owner)
 *   POST     /dashboard/switch                       {account}: act in another of your accounts
 *   GET/POST /invite/{token}                         the invitation: sign up or in, then join
 * An invitation is single-use and expires (INVITATION_TTL_SECONDS); only the
 * SHA-256 of its token is stored. With MAIL_URL set the link is mailed to the
 * email invited; without, it is shown once to the inviter to pass on. It is
 * accepted by the person who signs in with that email. No change leaves an
 * account without an owner (ledger/members.ts).
 */
import type { H3Event } from 'h3';
import { mailTransport } from '../../accounts/mail.ts';
import { inviteToAccount } from '../../accounts/invitations.ts';
import { isTeamRole, ROLE_MEANING, TEAM_ROLES, type TeamRole } from '../../domain/team-roles.ts';
import { nowIso } from '../../ids.ts';
import { insertAuditEntry } from '../../ledger/audit-log.ts';
import {
  acceptInvitation,
  insertMember,
  memberRole,
  membersOf,
  openInvitation,
  openInvitationsOf,
  removeMember,
  revokeInvitation,
  setMemberRole,
  setSessionAccount,
  type MemberRefusal,
} from '../../ledger/members.ts';
import { auditEntry } from '../audit.ts';
import type { AppContext } from '../context.ts';
import { escapeHtml as e, htmlPage } from '../html.ts';
import type { Router } from '../router.ts';
import { EMAIL } from './signin.ts';
import { timeTag } from './when.ts';
import {
  DASHBOARD_CSS,
  accountHeader,
  csrfField,
  dashboardPage,
  doneNotice,
  flashCookie,
  page,
  readSession,
  readSignedInForm,
  redirect,
  requireRole,
  sessionSecretOf,
  sha256,
  takeFlash,
  toSignin,
  type Session,
} from './web.ts';

const DONE = {
  invited: 'Invitation sent: the link is in their mailbox. It works once, for the person who signs in with that email.',
  revoked: 'Revoked the invitation: its link no longer works.',
  role: 'Saved the role.',
  removed: 'Removed them from the account: they can no longer act in it.',
  joined: 'You joined the account: you act in it now. Switch accounts at the bottom of this page.',
  switched: 'You act in this account now.',
};

const REFUSED: Record<MemberRefusal, string> = {
  not_a_member: 'That person is not one of this account’s people (any more).',
  last_owner: 'An account always keeps an owner: make someone else an owner first.',
  own_account: 'This is their own account (the one they signed up with): they can be given another role, not removed.',
};

/** The invitation link shown once to its inviter when no mail goes out (a sealed flash, never stored). */
interface NewInvitation {
  id: string;
  email: string;
  role: TeamRole;
  link: string;
}

const roleSelect = (id: string, chosen: TeamRole | undefined, label: string) =>
  `<label for="${id}">${label}</label><select id="${id}" name="role">${TEAM_ROLES.map((r) => `<option value="${r}"${r === chosen ? ' selected' : ''}>${r}: ${e(ROLE_MEANING[r])}</option>`).join('')}</select>`;

export function registerMembersPage(router: Router, ctx: AppContext): void {
  const app = router.app;
  const sendMail = mailTransport(ctx.config, ctx.log);
  const error = (text: string) => `<p class="error" role="alert">${e(text)}</p>`;

  const membersPage = async (event: H3Event, s: Session, note = '', status = 200) => {
    const owner = s.role === 'owner';
    const [members, invitations] = await Promise.all([
      membersOf(ctx.ledger.read, s.accountId),
      owner ? openInvitationsOf(ctx.ledger.read, s.accountId, nowIso()) : [],
    ]);
    const flash = takeFlash<NewInvitation>(event, ctx);
    const shown = event.url.searchParams.get('invited');
    if (flash.data && flash.data.id === shown) {
      note += `<section class="notice" role="status" aria-labelledby="link-h"><h2 id="link-h">Pass this link on to ${e(flash.data.email)}</h2>
<p>No mail is sent from this service, so send it yourself. It is shown once, works once, for ${e(flash.data.email)} signed in, until ${Math.round(ctx.config.INVITATION_TTL_SECONDS / 86_400)} day(s) from now.</p>
<p class="secret"><code id="invite-link" tabindex="-1">${e(flash.data.link)}</code></p></section><script>document.getElementById('invite-link')?.focus()</script>`;
    } else if (shown)
      note += '<p class="muted" role="status">The invitation link was shown once. Lost it? Revoke the invitation and invite again.</p>';
    note += doneNotice(event, DONE);
    const rows = members
      .map((m) => {
        // Only an owner has actions here: anyone else sees whose account it is beside the name.
        const who = `${e(m.email)}${m.person_id === s.personId ? ' <strong>(you)</strong>' : ''}${!owner && m.own ? ' <span class="muted">(their own account)</span>' : ''}`;
        const role = owner
          ? `<form method="post" action="/dashboard/members/role" class="row">${csrfField(s.csrf)}<input type="hidden" name="person" value="${e(m.person_id)}"><select name="role" aria-label="Role of ${e(m.email)}">${TEAM_ROLES.map((r) => `<option value="${r}"${r === m.role ? ' selected' : ''}>${r}</option>`).join('')}</select><button type="submit" aria-label="Save the role of ${e(m.email)}">Save</button></form>`
          : e(m.role);
        const actions = !owner
          ? ''
          : `<td data-label="Actions">${
              m.own
                ? '<span class="muted">their own account</span>'
                : `<a href="/dashboard/members/remove?person=${encodeURIComponent(m.person_id)}" aria-label="Remove ${e(m.email)}">Remove…</a>`
            }</td>`;
        return `<tr><td data-label="Person">${who}</td><td data-label="Role">${role}</td><td data-label="Since">${timeTag(m.created_at)}</td>${actions}</tr>`;
      })
      .join('');
    const pending = invitations
      .map(
        (i) =>
          `<tr><td data-label="Email">${e(i.email)}</td><td data-label="Role">${e(i.role)}</td><td data-label="Invited by">${e(i.invited_by_email)}</td><td data-label="Expires">${timeTag(i.expires_at)}</td><td data-label="Actions"><form method="post" action="/dashboard/members/invitations/revoke">${csrfField(s.csrf)}<input type="hidden" name="invitation" value="${e(i.id)}"><button type="submit" class="secondary" aria-label="Revoke the invitation of ${e(i.email)}">Revoke</button></form></td></tr>`,
      )
      .join('');
    const others = s.accounts.filter((m) => m.account_id !== s.accountId);
    const switcher = others.length
      ? `<form method="post" action="/dashboard/switch" class="row">${csrfField(s.csrf)}<p><label for="switch-to">Act in another account</label><select id="switch-to" name="account">${others.map((m) => `<option value="${e(m.account_id)}">${e(m.account_name)}${m.account_id === s.personId ? ' (your own)' : ''}: ${e(m.role)}</option>`).join('')}</select></p><p><button type="submit">Switch</button></p></form>`
      : '<p class="muted">You belong to this account only. When someone invites you to theirs, it is listed here.</p>';
    return page(
      dashboardPage(
        s,
        '/dashboard/members',
        'Members',
        `${note}<p>The people who may act in this account, and what each may do: an <strong>owner</strong> ${e(ROLE_MEANING.owner)}; an <strong>operator</strong> ${e(ROLE_MEANING.operator)}; a <strong>viewer</strong> ${e(ROLE_MEANING.viewer)}. You are ${s.role === 'operator' ? 'an' : 'a'} <strong>${e(s.role)}</strong> here. Every change is in the <a href="/dashboard/audit">audit log</a>.</p>
<table class="cards-sm members"><thead><tr><th scope="col">Person</th><th scope="col">Role</th><th scope="col">Since</th>${owner ? '<th scope="col">Actions</th>' : ''}</tr></thead><tbody>${rows}</tbody></table>
${
  owner
    ? `<h2 id="invite-h">Invite someone</h2><form method="post" action="/dashboard/members/invite" aria-labelledby="invite-h">${csrfField(s.csrf)}
<label for="invite-email">Email</label><input id="invite-email" name="email" type="email" autocomplete="off" required>
${roleSelect('invite-role', 'viewer', 'Role')}
<p><button type="submit">Invite</button></p></form>
<p class="muted">${ctx.config.MAIL_URL ? 'The link is mailed to them.' : 'This service sends no mail: the link is shown to you once, to pass on.'} It works once, for ${Math.round(ctx.config.INVITATION_TTL_SECONDS / 86_400)} day(s), and only for the person who signs in (or signs up) with that email.</p>
<h2>Open invitations</h2>${pending ? `<table class="cards-sm"><thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Invited by</th><th scope="col">Expires</th><th scope="col">Actions</th></tr></thead><tbody>${pending}</tbody></table>` : '<p class="muted">None.</p>'}`
    : '<p class="muted">Only an owner invites people and changes their roles.</p>'
}
<h2 id="accounts-h">Your accounts</h2>${switcher}`,
      ),
      status,
      flash.clear,
    );
  };

  app.get('/dashboard/members', async (event) => {
    const s = await readSession(event, ctx);
    return s ? membersPage(event, s) : toSignin(event);
  });

  app.post('/dashboard/members/invite', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const s = p.session;
    requireRole(s, 'owner', 'Inviting people');
    const email = (p.form.get('email') ?? '').trim().toLowerCase();
    const role = p.form.get('role');
    if (!EMAIL.test(email)) return membersPage(event, s, error('Enter an email address such as you@example.com.'), 400);
    if (!isTeamRole(role)) return membersPage(event, s, error('Choose a role: owner, operator or viewer.'), 400);
    const account = s.accounts.find((m) => m.account_id === s.accountId)?.account_name ?? 'an account';
    const invited = await inviteToAccount(
      ctx,
      sendMail,
      { accountId: s.accountId, accountName: account, email, role, invitedBy: s.personId, inviterLabel: s.email },
      (tx, id) => insertAuditEntry(tx, auditEntry(s, 'member.invited', email, { role, invitation_id: id })),
    );
    if ('refused' in invited) {
      if (invited.refused === 'already_member')
        return membersPage(
          event,
          s,
          error(`${email} is already one of this account’s people: change their role in the list instead.`),
          409,
        );
      return membersPage(
        event,
        s,
        error(`Too many invitations from this account. Try again in ${Math.ceil(invited.retryAfter / 60)} minute(s).`),
        429,
      );
    }
    if (invited.mailed) return redirect('/dashboard/members?done=invited');
    const flash: NewInvitation = { id: invited.id, email, role, link: invited.link };
    return redirect(`/dashboard/members?invited=${encodeURIComponent(invited.id)}`, [flashCookie(event, ctx, flash)]);
  });

  app.post('/dashboard/members/invitations/revoke', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const s = p.session;
    requireRole(s, 'owner', 'Revoking an invitation');
    const id = p.form.get('invitation') ?? '';
    const revoked = await ctx.ledger.write(async (tx) => {
      const email = await revokeInvitation(tx, s.accountId, id, nowIso());
      if (email) await insertAuditEntry(tx, auditEntry(s, 'member.invitation_revoked', email, { invitation_id: id }));
      return email;
    });
    return revoked
      ? redirect('/dashboard/members?done=revoked')
      : membersPage(event, s, error('No open invitation of this account has that id (it may have been accepted or revoked already).'), 404);
  });

  app.post('/dashboard/members/role', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const s = p.session;
    requireRole(s, 'owner', 'Changing a role');
    const person = p.form.get('person') ?? '';
    const role = p.form.get('role');
    if (!isTeamRole(role)) return membersPage(event, s, error('Choose a role: owner, operator or viewer.'), 400);
    const email = (await membersOf(ctx.ledger.read, s.accountId)).find((m) => m.person_id === person)?.email ?? person;
    const changed = await ctx.ledger.write(async (tx) => {
      const r = await setMemberRole(tx, s.accountId, person, role);
      if ('from' in r && r.from !== role)
        await insertAuditEntry(tx, auditEntry(s, 'member.role_changed', email, { from: r.from, to: role }));
      return r;
    });
    if ('refused' in changed) return membersPage(event, s, error(REFUSED[changed.refused]), changed.refused === 'not_a_member' ? 404 : 409);
    return redirect('/dashboard/members?done=role');
  });

  app.get('/dashboard/members/remove', async (event) => {
    const s = await readSession(event, ctx);
    if (!s) return toSignin(event);
    requireRole(s, 'owner', 'Removing someone');
    const m = (await membersOf(ctx.ledger.read, s.accountId)).find((x) => x.person_id === event.url.searchParams.get('person'));
    if (!m) return membersPage(event, s, error(REFUSED.not_a_member), 404);
    return page(
      dashboardPage(
        s,
        '/dashboard/members',
        'Remove this person?',
        `<p>Removing <strong>${e(m.email)}</strong> (${e(m.role)}) ends what they may do in this account at once: the next page they open shows their own account. Their own sign-in and account stay. The account’s keys, fuses and receipts are untouched.</p>
<form method="post" action="/dashboard/members/remove">${csrfField(s.csrf)}<input type="hidden" name="person" value="${e(m.person_id)}"><input type="hidden" name="confirm" value="yes">
<p><button type="submit" class="danger">Yes, remove ${e(m.email)}</button> <a href="/dashboard/members">Cancel</a></p></form>`,
      ),
    );
  });
  app.post('/dashboard/members/remove', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const s = p.session;
    requireRole(s, 'owner', 'Removing someone');
    const person = p.form.get('person') ?? '';
    if (p.form.get('confirm') !== 'yes') return redirect(`/dashboard/members/remove?person=${encodeURIComponent(person)}`);
    const email = (await membersOf(ctx.ledger.read, s.accountId)).find((m) => m.person_id === person)?.email ?? person;
    const removed = await ctx.ledger.write(async (tx) => {
      const r = await removeMember(tx, s.accountId, person);
      if ('role' in r) await insertAuditEntry(tx, auditEntry(s, 'member.removed', email, { role: r.role }));
      return r;
    });
    if ('refused' in removed) return membersPage(event, s, error(REFUSED[removed.refused]), removed.refused === 'not_a_member' ? 404 : 409);
    return redirect('/dashboard/members?done=removed');
  });

  app.post('/dashboard/switch', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const account = p.form.get('account') ?? '';
    if (!p.session.accounts.some((m) => m.account_id === account))
      return membersPage(event, p.session, error('You are not one of that account’s people.'), 403);
    await ctx.ledger.write((tx) => setSessionAccount(tx, sha256(sessionSecretOf(event, ctx)!), account));
    return redirect('/dashboard/members?done=switched');
  });

  // ------------------------------------------------------------ accepting an invitation
  // The token is in the URL: no request to another origin may carry it in a Referer (as /reset/{token}).
  const NO_REFERRER = { 'referrer-policy': 'same-origin' };
  const tokenOf = (event: H3Event) => String(event.context.params?.token ?? '');
  const gone = () =>
    page(
      htmlPage(
        'Invitation',
        '<h1>This invitation cannot be used</h1><p>It is unknown, used, revoked or expired. Ask the person who invited you for a new one.</p><p><a href="/">Home</a></p>',
        DASHBOARD_CSS,
      ),
      410,
      [],
      NO_REFERRER,
    );

  app.get('/invite/:token', async (event) => {
    const token = tokenOf(event);
    const inv = await openInvitation(ctx.ledger.read, sha256(token), nowIso());
    if (!inv) return gone();
    const s = await readSession(event, ctx);
    const here = `/invite/${encodeURIComponent(token)}`;
    const what = `<p><strong>${e(inv.invited_by_email || 'Someone')}</strong> invited <strong>${e(inv.email)}</strong> to act in the Fuse Gate account <strong>${e(inv.account_name)}</strong> as <strong>${e(inv.role)}</strong>: ${e(ROLE_MEANING[inv.role])}. The invitation works once, until ${timeTag(inv.expires_at)}.</p>`;
    let body: string;
    if (!s) {
      body = `${what}<p>Sign in as ${e(inv.email)} to accept it, or create your account with that email first.</p>
<p class="actions"><a href="/signin?next=${encodeURIComponent(here)}">Sign in</a> <a href="/signup?next=${encodeURIComponent(here)}">Create an account</a></p>`;
    } else if (s.email !== inv.email) {
      body = `${what}<p class="error" role="alert">You are signed in as ${e(s.email)}, and this invitation is for ${e(inv.email)}: sign out, then sign in (or sign up) as ${e(inv.email)} and open this link again.</p>`;
    } else {
      body = `${what}<form method="post" action="${e(here)}">${csrfField(s.csrf)}<p><button type="submit">Join ${e(inv.account_name)} as ${e(inv.role)}</button></p></form>`;
    }
    return page(
      htmlPage('Invitation', `<h1>Join an account</h1>${body}`, DASHBOARD_CSS, s ? accountHeader(s) : undefined),
      200,
      [],
      NO_REFERRER,
    );
  });

  app.post('/invite/:token', async (event) => {
    const token = tokenOf(event);
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect(`/signin?next=${encodeURIComponent(`/invite/${token}`)}`);
    const s = p.session;
    const secretHash = sha256(sessionSecretOf(event, ctx)!);
    const joined = await ctx.ledger.write(async (tx) => {
      const now = nowIso();
      const inv = await openInvitation(tx, sha256(token), now);
      if (!inv) return 'gone' as const;
      if (inv.email !== s.email) return 'other_person' as const;
      // Used by the conditional update alone: of two accepts racing on two nodes, one wins.
      if (!(await acceptInvitation(tx, sha256(token), s.personId, now))) return 'gone' as const;
      // Already one of its people: the invitation is used, and their role stays.
      const already = await memberRole(tx, inv.account_id, s.personId);
      if (!already) await insertMember(tx, { accountId: inv.account_id, personId: s.personId, role: inv.role, now });
      await setSessionAccount(tx, secretHash, inv.account_id);
      await insertAuditEntry(
        tx,
        auditEntry({ ...s, accountId: inv.account_id }, 'member.joined', s.email, { role: already ?? inv.role, invitation_id: inv.id }),
      );
      return 'joined' as const;
    });
    if (joined === 'gone') return gone();
    if (joined === 'other_person')
      return page(
        htmlPage(
          'Invitation',
          `<h1>Join an account</h1><p class="error" role="alert">This invitation is for another email than ${e(s.email)}.</p>`,
          DASHBOARD_CSS,
          accountHeader(s),
        ),
        403,
        [],
        NO_REFERRER,
      );
    return redirect('/dashboard/members?done=joined');
  });
}
