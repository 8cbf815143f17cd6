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
import type { Client, Transaction } from '@libsql/client';

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

export async function migrate(client: Client): Promise<string[]> {
  await client.execute(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at TEXT NOT NULL)',
  );
  const applied: string[] = [];
  for (const file of migrationFiles()) {
    const version = file.replace(/\.(sql|ts)$/, '');
    const tx = await client.transaction('write');
    try {
      const seen = await tx.execute({ sql: 'SELECT 1 FROM schema_migrations WHERE version = ?', args: [version] });
      if (seen.rows.length === 0) {
        if (file.endsWith('.ts')) {
          const step = (await import(pathToFileURL(dir + file).href)) as { up(tx: Transaction): Promise<void> };
          await step.up(tx);
        } else {
          for (const stmt of statements(readFileSync(dir + file, 'utf8'))) await tx.execute(stmt);
        }
        await tx.execute({
          sql: 'INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)',
          args: [version, new Date().toISOString()],
        });
        applied.push(version);
      }
      await tx.commit();
    } finally {
      tx.close();
    }
  }
  return applied;
}
