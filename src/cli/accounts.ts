/** Site account commands. No mail leaves the machine: the operator hands the link over. */
import { createHash, randomBytes } from 'node:crypto';
import { nowIso } from '../ids.ts';
import { insertPasswordReset, loginByEmail } from '../ledger/accounts.ts';
import { type Command, requireFlag } from './shared.ts';

export const accountCommands: Record<string, Command> = {
  'accounts reset-link': {
    usage: 'accounts reset-link --email EMAIL',
    summary: 'print a one-time password-reset link for a site account (PASSWORD_RESET_TTL_SECONDS)',
    async run(ctx) {
      const email = requireFlag(ctx, 'email').trim().toLowerCase();
      const ledger = await ctx.ledger();
      const login = await loginByEmail(ledger.read, email);
      if (!login) {
        ctx.out(`no account signs in as ${email}`, { error: 'not_found', email });
        return 1;
      }
      const token = randomBytes(32).toString('base64url');
      const expiresAt = nowIso(new Date(Date.now() + ctx.config.PASSWORD_RESET_TTL_SECONDS * 1000));
      // Stored as SHA-256 (base64url), as the web side looks it up.
      await ledger.write((tx) =>
        insertPasswordReset(tx, {
          tokenHash: createHash('sha256').update(token, 'utf8').digest('base64url'),
          accountId: login.account_id,
          expiresAt,
        }),
      );
      const url = `${ctx.config.BASE_URL}/reset/${token}`;
      ctx.out(`${url}\nUsable once, until ${expiresAt}. Hand it to the account holder yourself; it signs every session out.`, {
        url,
        expires_at: expiresAt,
        account_id: login.account_id,
      });
    },
  },
};
