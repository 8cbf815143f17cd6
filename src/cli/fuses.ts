/** Fuse commands: the same operations as POST /v1/fuses*, for operators. */
import { CHARGEABLE_STATES } from '../domain/fuse.ts';
import { newId, nowIso } from '../ids.ts';
import { getApiKey, setKeySurface } from '../ledger/api-keys.ts';
import { ownerId } from '../ledger/accounts.ts';
import { FUSE_STATES, createFuse, getFuse, listFuses, transitionFuse, type FuseState } from '../ledger/fuses.ts';
import { ACT_KIND_RULE, actKindSchema, SURFACE_PRESETS } from '../catalog/surfaces.ts';
import { type CliContext, type Command, UsageError, requireFlag } from './shared.ts';

async function ownedFuse(ctx: CliContext) {
  const id = ctx.args[0];
  if (!id) throw new UsageError('the fuse ID is required');
  const fuse = await getFuse((await ctx.ledger()).read, id);
  if (!fuse) throw new UsageError(`no fuse ${id}`);
  return fuse;
}

function transition(to: FuseState, from: readonly FuseState[], verb: string): Command['run'] {
  return async (ctx) => {
    const fuse = await ownedFuse(ctx);
    const moved = await (await ctx.ledger()).write((tx) => transitionFuse(tx, fuse.id, from, to, nowIso()));
    if (!moved) {
      ctx.out(`cannot ${verb} ${fuse.id}: it is ${fuse.state}`, { error: 'invalid_transition', fuse_id: fuse.id, state: fuse.state });
      return 1;
    }
    ctx.out(`${fuse.id}: ${fuse.state} -> ${to}`, { fuse_id: fuse.id, previous_state: fuse.state, state: to });
  };
}

export const fuseCommands: Record<string, Command> = {
  'fuses create': {
    usage: 'fuses create --key KEY_ID [--state LIVE|UNSIGNED] [--label TEXT]',
    summary: 'create a fuse owned by an API key',
    async run(ctx) {
      const keyId = requireFlag(ctx, 'key');
      const state = (ctx.flags.state ?? 'LIVE') as FuseState;
      if (state !== 'LIVE' && state !== 'UNSIGNED') throw new UsageError('--state must be LIVE or UNSIGNED');
      const ledger = await ctx.ledger();
      const key = await getApiKey(ledger.read, keyId);
      if (!key) throw new UsageError(`no key ${keyId}`);
      const label = typeof ctx.flags.label === 'string' ? ctx.flags.label : null;
      const fuse = await ledger.write((tx) => createFuse(tx, { id: newId('fuse'), keyId: ownerId(key), state, label, now: nowIso() }));
      ctx.out(`created ${fuse.id} (${fuse.state})`, { fuse_id: fuse.id, state: fuse.state, key_id: keyId });
    },
  },
  'fuses list': {
    usage: 'fuses list --key KEY_ID',
    summary: "list the fuses of a key's account",
    async run(ctx) {
      const ledger = await ctx.ledger();
      const key = await getApiKey(ledger.read, requireFlag(ctx, 'key'));
      if (!key) throw new UsageError(`no key ${String(ctx.flags.key)}`);
      const fuses = await listFuses(ledger.read, ownerId(key));
      ctx.out(fuses.map((f) => `${f.id}  ${f.state}  ${f.label ?? ''}`).join('\n') || 'no fuses', { fuses });
    },
  },
  'fuses dead': {
    usage: 'fuses dead FUSE_ID',
    summary: 'blow a fuse (-> DEAD)',
    run: transition(
      'DEAD',
      FUSE_STATES.filter((s) => s !== 'DEAD'),
      'blow',
    ),
  },
  'fuses charge': {
    usage: 'fuses charge FUSE_ID',
    summary: 'charge a fuse: UNSIGNED or DEAD -> LIVE',
    run: transition('LIVE', CHARGEABLE_STATES, 'charge'),
  },
  'keys surface': {
    usage: 'keys surface KEY_ID (--preset agentic|hiring|insurance | --acts a,b,c | --default)',
    summary: "declare the act kinds a key's welded acts may use (closed world)",
    async run(ctx) {
      const id = ctx.args[0];
      if (!id) throw new UsageError('the key ID is required');
      let surface: string[] | null;
      if (ctx.flags.default === true) surface = null;
      else if (typeof ctx.flags.preset === 'string') {
        const preset = SURFACE_PRESETS[ctx.flags.preset];
        if (!preset) throw new UsageError(`--preset must be one of ${Object.keys(SURFACE_PRESETS).join(', ')}`);
        surface = [...preset];
      } else if (typeof ctx.flags.acts === 'string') {
        const kinds = ctx.flags.acts.split(',').map((a) => actKindSchema.safeParse(a.trim()));
        if (kinds.length === 0 || kinds.some((k) => !k.success))
          throw new UsageError(`--acts must list act kinds such as pay,wire (${ACT_KIND_RULE})`);
        surface = [...new Set(kinds.map((k) => k.data!))];
      } else throw new UsageError('give --preset, --acts or --default');
      if (!(await setKeySurface(await ctx.ledger(), id, surface))) {
        ctx.out(`no key ${id}`, { error: 'not_found', id });
        return 1;
      }
      ctx.out(`${id} surface: ${surface ? surface.join(', ') : 'default (every preset)'}`, { id, surface });
    },
  },
};
