/**
 * Vitest globalSetup of the `postgres` project: one throw-away PostgreSQL
 * cluster per run (test/support/postgres-cluster.ts), and in it a template
 * database already migrated, which every test's fresh database is copied from
 * (CREATE DATABASE ... TEMPLATE, test/support/server.ts testEnv).
 */
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../../src/config.ts';
import { openLedger } from '../../src/ledger/db.ts';
import { removeCluster, startCluster } from './postgres-cluster.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The test cluster: psql reaches it at 127.0.0.1:port as `postgres`. */
    postgresPort: number;
  }
}

export const TEMPLATE_DB = 'fusegate_template';

export default async function setup(project: TestProject): Promise<() => void> {
  // Durability is not under test here: fsync off lets a busy machine run both engines' suites.
  const cluster = await startCluster({ settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' } });
  cluster.psql(`CREATE DATABASE ${TEMPLATE_DB}`);
  const ledger = await openLedger(loadConfig({ DATABASE_URL: cluster.url(TEMPLATE_DB), LOG_LEVEL: 'silent' }));
  await ledger.close();
  project.provide('postgresPort', cluster.port);
  // TEST_KEEP_POSTGRES=1 leaves the cluster's folder (and its server log, which names every failed statement) for a look.
  return () => (process.env.TEST_KEEP_POSTGRES ? cluster.stop() : removeCluster(cluster));
}
