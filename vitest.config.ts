import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Every test file: temporary folders removed after it, and no connection beyond loopback (test/support/*.ts).
    setupFiles: ['test/support/cleanup.ts', 'test/support/loopback-only.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more workers only contend.
    maxWorkers: 2,
  },
});
