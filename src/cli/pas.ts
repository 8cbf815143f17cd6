/** Delegated-authority grants (MGA), per API key: what POST /v1/pas/mga-authority checks against. */
import { MoneyError, formatUsd, usdToMicros } from '../catalog/money.ts';
import { newId, nowIso } from '../ids.ts';
import { getApiKey } from '../ledger/api-keys.ts';
import { ownerId } from '../ledger/accounts.ts';
import { insertGrant, listGrants, revokeGrant, type StoredGrant } from '../ledger/pas.ts';
import { type Command, UsageError, requireFlag } from './shared.ts';

function listFlag(value: string, name: string, pattern: RegExp, example: string): string[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (items.length === 0 || items.some((s) => !pattern.test(s))) throw new UsageError(`--${name} must list values such as ${example}`);
  return [...new Set(items)];
}

const grantJson = (g: StoredGrant) => ({
  grant_id: g.id,
  key_id: g.key_id,
  name: g.name,
  lines: g.lines,
  states: g.states,
  max_premium: formatUsd(g.max_premium_micros),
  created_at: g.created_at,
  revoked_at: g.revoked_at,
});

export const pasCommands: Record<string, Command> = {
  'grants create': {
    usage: 'grants create --key KEY_ID --lines a,b --states CA,NY --max-premium USD [--name TEXT]',
    summary: 'grant delegated (MGA) authority to a key: premium, line and state limits',
    async run(ctx) {
      const keyId = requireFlag(ctx, 'key');
      const lines = listFlag(requireFlag(ctx, 'lines'), 'lines', /^[a-z0-9_]{1,64}$/, 'cyber,e_and_o');
      const states = listFlag(requireFlag(ctx, 'states'), 'states', /^[A-Z]{2}$/, 'CA,NY');
      let max: number;
      try {
        max = usdToMicros(requireFlag(ctx, 'max-premium'));
      } catch (e) {
        if (e instanceof MoneyError) throw new UsageError(`--max-premium: ${e.message}`);
        throw e;
      }
      const ledger = await ctx.ledger();
      const key = await getApiKey(ledger.read, keyId);
      if (!key) throw new UsageError(`no key ${keyId}`);
      const g: StoredGrant = {
        id: newId('auth'),
        key_id: ownerId(key),
        name: typeof ctx.flags.name === 'string' ? ctx.flags.name : null,
        lines,
        states,
        max_premium_micros: max,
        created_at: nowIso(),
        revoked_at: null,
      };
      await ledger.write((tx) => insertGrant(tx, g));
      ctx.out(`created ${g.id}: up to ${formatUsd(max)} USD, lines ${lines.join(',')}, states ${states.join(',')}`, grantJson(g));
    },
  },
  'grants list': {
    usage: 'grants list --key KEY_ID',
    summary: "list a key's authority grants",
    async run(ctx) {
      const ledger = await ctx.ledger();
      const key = await getApiKey(ledger.read, requireFlag(ctx, 'key'));
      if (!key) throw new UsageError(`no key ${String(ctx.flags.key)}`);
      const grants = await listGrants(ledger.read, ownerId(key));
      ctx.out(
        grants
          .map(
            (g) =>
              `${g.id}  ${formatUsd(g.max_premium_micros)}  ${g.lines.join(',')}  ${g.states.join(',')}${g.revoked_at ? '  revoked' : ''}`,
          )
          .join('\n') || 'no grants',
        { grants: grants.map(grantJson) },
      );
    },
  },
  'grants revoke': {
    usage: 'grants revoke GRANT_ID',
    summary: 'revoke an authority grant (checks against it answer 404 from then on)',
    async run(ctx) {
      const id = ctx.args[0];
      if (!id) throw new UsageError('the grant ID is required');
      if (!(await (await ctx.ledger()).write((tx) => revokeGrant(tx, id, nowIso())))) {
        ctx.out(`no active grant ${id}`, { error: 'not_found', id });
        return 1;
      }
      ctx.out(`revoked ${id}`, { id, revoked: true });
    },
  },
};
