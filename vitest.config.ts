import { defineConfig } from 'vitest/config';

/**
 * Workspace packages resolve to their TypeScript sources, not to their build: the `@stampcard/source` export
 * condition (README, "Development"), in test files (the `ssr` environment) and in the global setup (`__vitest__`).
 */
const sources = { resolve: { conditions: ['@stampcard/source'] } };

export default defineConfig({
  environments: { ssr: sources, __vitest__: sources },
  test: {
    include: ['apps/*/test/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // The chaos suite runs on its own, one scenario at a time (`npm run test:chaos`, vitest.chaos.config.ts).
    exclude: ['test/chaos/**', '**/node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Two cores: two files at a time, each with its own database and queue prefix.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
