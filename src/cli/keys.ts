/** API key and signing key commands. */
import { capMicros } from '../api/spend-cap.ts';
import { rotateSigningKey } from '../crypto/keys.ts';
import { HOP_PERIODS } from '../domain/quota.ts';
import { KEY_ROLES, createApiKey, listApiKeys, revokeApiKey, rotateApiKey, setHopLimit } from '../ledger/api-keys.ts';
import { type Command, UsageError, enumFlag, intFlag, requireFlag } from './shared.ts';

export const keyCommands: Record<string, Command> = {
  'keys create': {
    usage: 'keys create --name NAME [--role agent|operator] [--hop-limit N] [--test]',
    summary:
      'create an API key (operator unless --role agent; live unless --test: a fg_test_ key, logged in the test log and billed nothing); the secret is printed once and stored only as a hash',
    async run(ctx) {
      if (ctx.args.length) throw new UsageError(`unexpected argument ${ctx.args[0]}`);
      const name = requireFlag(ctx, 'name');
      const role = enumFlag(ctx, 'role', KEY_ROLES) ?? 'operator';
      const hopLimit = intFlag(ctx, 'hop-limit') ?? ctx.config.HOP_LIMIT_DEFAULT;
      const mode = ctx.flags.test === true ? 'test' : 'live';
      const { key, secret } = await createApiKey(await ctx.ledger(), {
        name,
        hopLimit,
        role,
        mode,
        hopPeriod: ctx.config.HOP_LIMIT_PERIOD,
        accountSpendCapMicros: capMicros(ctx.config.SPEND_CAP_ACCOUNT_DEFAULT_USD ?? null),
      });
      ctx.out(
        `created ${mode === 'test' ? 'test ' : ''}${key.role} key ${key.id} (${key.name}, hop limit ${key.hop_limit})\nkey: ${secret}\nStore it now: it is not shown again.`,
        { id: key.id, key: secret, name: key.name, role: key.role, mode, hop_limit: key.hop_limit, created_at: key.created_at },
      );
    },
  },
  'keys list': {
    usage: 'keys list',
    summary: 'list API keys (never their secrets)',
    async run(ctx) {
      const keys = await listApiKeys((await ctx.ledger()).read);
      const lines = keys.map(
        (k) =>
          `${k.id}  ${k.role.padEnd(8)}  ${(k.mode ?? 'live').padEnd(4)}  ${k.prefix}…  ${k.name}  hops ${k.hops_used}/${k.hop_limit}  ${k.revoked_at ? 'revoked ' + k.revoked_at : 'active'}`,
      );
      ctx.out(lines.length ? lines.join('\n') : 'no keys', { keys });
    },
  },
  'keys revoke': {
    usage: 'keys revoke ID',
    summary: 'revoke an API key; it answers 401 from then on',
    async run(ctx) {
      const id = ctx.args[0];
      if (!id) throw new UsageError('the key ID is required');
      if (!(await revokeApiKey(await ctx.ledger(), id))) {
        ctx.out(`no key ${id}`, { error: 'not_found', id });
        return 1;
      }
      ctx.out(`revoked ${id}`, { id, revoked: true });
    },
  },
  'keys rotate': {
    usage: 'keys rotate ID [--grace-seconds N]',
    summary: 'give a key a new secret (printed once); the old one works for the grace period (KEY_ROTATION_GRACE_SECONDS)',
    async run(ctx) {
      const id = ctx.args[0];
      if (!id) throw new UsageError('the key ID is required');
      const raw = ctx.flags['grace-seconds'];
      const grace = raw === undefined ? ctx.config.KEY_ROTATION_GRACE_SECONDS : Number(raw);
      if (typeof raw === 'boolean' || !Number.isInteger(grace) || grace < 0)
        throw new UsageError('--grace-seconds must be a whole number of seconds');
      const rotated = await rotateApiKey(await ctx.ledger(), id, grace);
      if (!rotated) {
        ctx.out(`no active key ${id}`, { error: 'not_found', id });
        return 1;
      }
      ctx.out(
        `rotated ${id}; the previous secret works until ${rotated.key.previous_expires_at}\nkey: ${rotated.secret}\nStore it now: it is not shown again.`,
        { id, key: rotated.secret, previous_secret_expires_at: rotated.key.previous_expires_at },
      );
    },
  },
  'keys set-limit': {
    usage: 'keys set-limit ID --hop-limit N [--period day|week|month|none]',
    summary: "change a key's hop limit (per period)",
    async run(ctx) {
      const id = ctx.args[0];
      if (!id) throw new UsageError('the key ID is required');
      const limit = intFlag(ctx, 'hop-limit');
      if (limit === undefined) throw new UsageError('--hop-limit is required');
      if (!(await setHopLimit(await ctx.ledger(), id, limit, enumFlag(ctx, 'period', HOP_PERIODS)))) {
        ctx.out(`no key ${id}`, { error: 'not_found', id });
        return 1;
      }
      ctx.out(`${id} hop limit is now ${limit}`, { id, hop_limit: limit });
    },
  },
  'signing-key rotate': {
    usage: 'signing-key rotate',
    summary: 'make a new Ed25519 signing key; the old one stays published (send SIGHUP or restart the server)',
    async run(ctx) {
      if (ctx.config.SIGNING_KEY_JWK) throw new UsageError('SIGNING_KEY_JWK is set: rotate the key where it is managed');
      const ring = await rotateSigningKey(ctx.config.SIGNING_KEY_FILE, ctx.config.WEBHOOK_KEY_OVERLAP_HOURS * 3_600_000);
      ctx.out(`new signing key ${ring.current.kid}; ${ring.all.length - 1} retired key(s) stay published`, {
        kid: ring.current.kid,
        retired: ring.all.slice(1).map((k) => k.kid),
      });
    },
  },
};
