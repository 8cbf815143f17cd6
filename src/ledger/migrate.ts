/**
 * Versioned migrations: every `NNNN_name.sql` file in ./migrations, applied in
 * name order, each once, each in its own transaction, recorded in
 * `schema_migrations`. Safe to run on every start and from several processes.
 *
 * A data migration that SQL cannot express (one that hashes, say) is a
 * `NNNN_name.ts` module exporting `up(tx)`, run the same way.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Client as RemoteClient } from '@libsql/client';
import type { Sql } from './sql.ts';

/** Runs a job in one write transaction (the ledger's write queue, or a client's own transaction). */
export type InTransaction = <T>(job: (tx: Sql) => Promise<T>) => Promise<T>;

const dir = fileURLToPath(new URL('./migrations/', import.meta.url));

export function migrationFiles(): string[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_-]+\.(sql|ts)$/.test(f))
    .sort();
}

/** Splits a migration file into statements (no semicolons inside our DDL strings). */
function statements(sql: string): string[] {
  return sql
    .replace(/--[^\n]*/g, '')
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean);
}

export async function migrate(db: RemoteClient | InTransaction): Promise<string[]> {
  const inTx: InTransaction =
    typeof db === 'function'
      ? db
      : async (job) => {
          const tx = await db.transaction('write');
          try {
            const value = await job(tx);
            await tx.commit();
            return value;
          } finally {
            tx.close();
          }
        };
  await inTx((tx) => tx.execute('CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at TEXT NOT NULL)'));
  const applied: string[] = [];
  for (const file of migrationFiles()) {
    const version = file.replace(/\.(sql|ts)$/, '');
    await inTx(async (tx) => {
      const seen = await tx.execute({ sql: 'SELECT 1 FROM schema_migrations WHERE version = ?', args: [version] });
      if (seen.rows.length > 0) return;
      if (file.endsWith('.ts')) {
        const step = (await import(pathToFileURL(dir + file).href)) as { up(tx: Sql): Promise<void> };
        await step.up(tx);
      } else {
        for (const stmt of statements(readFileSync(dir + file, 'utf8'))) await tx.execute(stmt);
      }
      await tx.execute({
        sql: 'INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)',
        args: [version, new Date().toISOString()],
      });
      applied.push(version);
    });
  }
  return applied;
}
