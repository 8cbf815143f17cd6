import { defineConfig } from 'vitest/config';

/**
 * The suites that run on both engines: every test of the ledger and of the
 * HTTP API that does not look at the embedded file itself (its WAL, its
 * migrations from older files, its locks). The `postgres` project runs them
 * against a throw-away PostgreSQL cluster the run starts (test/support/postgres-setup.ts);
 * each test's name shows the project it ran in.
 */
export const BOTH_ENGINES = [
  'accounts',
  'acts',
  'alerts',
  'charges',
  'contract-fuzz',
  'exactness',
  'gate',
  'hop-quota',
  'inference-root',
  'key-roles',
  'keys-api',
  'lane',
  'leases',
  'ledger',
  'logs-search',
  'manage-api',
  'mcp',
  'metered-clear',
  'metered-depository',
  'metered-foundry',
  'metered-nap',
  'metered-orn',
  'metered-pdtr',
  'metered-relay',
  'metered-rr1',
  'metered-scale',
  'operations',
  'pas',
  'pas-concurrency',
  'pipeline',
  'prefinality',
  'read-caches',
  'receipt-documents',
  'reviews',
  'reviews-pas',
  'request-log',
  'reviews-operator',
  'site-accounts',
  'team-accounts',
  'spend-caps',
  'storage',
  'test-mode',
  'tiles',
  'trust',
  'truth',
  'truth-edges',
  'truth-premium',
  'webhook-ssrf',
  'witness',
  'witnessing',
  'write-queue',
  'x402',
  'x402-operations',
  'x402-terms',
];

/** Suites that compare the two engines, so need the cluster: the `postgres` project only. */
const POSTGRES_ONLY = ['database-copy', 'postgres-arrays', 'schema-parity', 'postgres-nodes', 'postgres-faults', 'postgres-failover'];

export default defineConfig({
  test: {
    // Every test file: temporary folders removed after it, and no connection beyond loopback (test/support/*.ts).
    setupFiles: ['test/support/cleanup.ts', 'test/support/loopback-only.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more workers only contend.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'embedded', include: ['test/**/*.test.ts'], exclude: POSTGRES_ONLY.map((f) => `test/${f}.test.ts`) } },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: [...BOTH_ENGINES, ...POSTGRES_ONLY].map((f) => `test/${f}.test.ts`),
          globalSetup: ['test/support/postgres-setup.ts'],
          env: { TEST_ENGINE: 'postgres' },
        },
      },
    ],
  },
});
