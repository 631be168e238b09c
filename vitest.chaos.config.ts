import { defineConfig } from 'vitest/config';

/**
 * The chaos suite (`npm run test:chaos`): each scenario breaks a process or a store of its own on purpose, one
 * at a time (they share two cores), against the build, as `npm start` runs it.
 */
const sources = { resolve: { conditions: ['@stampcard/source'] } };

export default defineConfig({
  environments: { ssr: sources, __vitest__: sources },
  test: {
    include: ['test/chaos/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 1,
    testTimeout: 300_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
