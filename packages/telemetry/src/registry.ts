import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * One process's metrics: a registry of its own (never prom-client's global one, so that tests may run several
 * stacks in one process), with Node.js's process metrics (`process_*`, `nodejs_*`: memory, CPU, event loop lag,
 * garbage collection). Each role adds its own metric sets to it (`httpMetrics`, `applyMetrics`…).
 */
export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

export type { Registry };
