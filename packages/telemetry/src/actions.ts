import { Counter, Histogram, type Registry } from 'prom-client';
import { LAG_BUCKETS } from './buckets';

/** What the API counts of the work it accepts and refuses. */
export function acceptMetrics(registry: Registry) {
  const accepted = new Counter({
    name: 'stampcard_loyalty_actions_accepted_total',
    help: 'Loyalty actions the trigger routes committed to the ledger (answered 200), in this process',
    registers: [registry],
  });
  const refused = new Counter({
    name: 'stampcard_rate_limit_refusals_total',
    help: 'Requests refused 429 by a rate limit, by limit (`ip`, `key`, `account`, `concurrency`, `slowdown`…)',
    labelNames: ['limit'] as const,
    registers: [registry],
  });
  return {
    accepted: () => accepted.inc(),
    refused: (limit: string) => refused.inc({ limit }),
  };
}
export type AcceptMetrics = ReturnType<typeof acceptMetrics>;

/** What a worker counts of the actions it applies. */
export function applyMetrics(registry: Registry) {
  const applied = new Counter({
    name: 'stampcard_loyalty_actions_applied_total',
    help: 'Loyalty actions a worker applied (committed), by the status they ended in',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const lag = new Histogram({
    name: 'stampcard_loyalty_action_apply_lag_seconds',
    help: 'From a loyalty action accepted to its application committed, in seconds',
    buckets: LAG_BUCKETS,
    registers: [registry],
  });
  return {
    /** One committed batch: each action's status, and when it was accepted. */
    applied(actions: readonly { status: string; createdAt: Date }[], now: Date) {
      for (const a of actions) {
        applied.inc({ status: a.status });
        lag.observe(Math.max(0, now.getTime() - a.createdAt.getTime()) / 1000);
      }
    },
  };
}
export type ApplyMetrics = ReturnType<typeof applyMetrics>;
