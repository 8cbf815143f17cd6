/** Database commands: moving up from the embedded file to PostgreSQL (docs/postgresql.md#moving-up-from-the-embedded-file). */
import { describeDatabase, openLedger } from '../ledger/db.ts';
import { copyEmbeddedToPostgres, type CopyProgress } from '../ledger/drivers/postgres/copy-from-embedded.ts';
import { isPostgresUrl } from '../ledger/drivers/postgres/open.ts';
import { startupStep } from '../startup-error.ts';
import { requireFlag, UsageError, type Command } from './shared.ts';

/** For a long table, at most one progress line a second, and its last. */
function progressLines(write: (line: string) => void): CopyProgress {
  let shown = 0;
  return (table, copied, total) => {
    const now = Date.now();
    if (copied < total && now - shown < 1000) return;
    shown = now;
    write(`copying ${table}: ${copied} of ${total} rows\n`);
  };
}

export const databaseCommands: Record<string, Command> = {
  'database copy': {
    usage: 'database copy --to POSTGRES_URL',
    summary: 'copy the embedded database (DATABASE_URL) into an empty PostgreSQL one, and prove the copy',
    async run(ctx) {
      const to = requireFlag(ctx, 'to');
      if (!isPostgresUrl(to)) throw new UsageError('--to must be a postgres:// or postgresql:// URL');
      if (isPostgresUrl(ctx.config.DATABASE_URL)) throw new UsageError('DATABASE_URL must name the embedded file to copy from');
      const source = await ctx.ledger();
      const target = await startupStep(`cannot open the database ${describeDatabase(to)}`, () =>
        openLedger({ ...ctx.config, DATABASE_URL: to }),
      );
      try {
        const report = await copyEmbeddedToPostgres(
          source,
          target,
          progressLines((line) => process.stderr.write(line)),
        );
        const rows = report.tables.reduce((n, t) => n + t.rows, 0);
        const lines = [
          `copied ${rows} rows of ${report.tables.length} tables into ${describeDatabase(to)}`,
          ...report.logs.map(
            (l) => `log ${l.name}: size ${l.size}, root ${l.root} on both sides; ${l.consistentSizes.length} earlier tree heads consistent`,
          ),
        ];
        ctx.out(lines.join('\n'), { target: describeDatabase(to), ...report });
      } finally {
        await target.close();
      }
    },
  },
};
