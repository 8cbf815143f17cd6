/** Clearing commands: seal a checkpoint now (the same job the server's timer runs). */
import { sealNow } from '../api/site/clearing.ts';
import type { Command } from './shared.ts';

export const clearingCommands: Record<string, Command> = {
  'clearing seal': {
    usage: 'clearing seal',
    summary: 'seal a clearing checkpoint over the receipts since the last one',
    async run(ctx) {
      const { attestation, index } = await sealNow(await ctx.ledger());
      const r = attestation.receipts;
      ctx.out(
        `sealed ${attestation.checkpoint_id} at clearing index ${index}: receipts [${r.from}, ${r.to}), total ${attestation.total_usd} USD`,
        { index, attestation },
      );
    },
  },
};
