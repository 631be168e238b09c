import { describe, expect, it } from 'vitest';
import { startReceiver } from '../support/receiver';
import { chaosProgram, ledgerFigures, load, report, sleep, until, useChaosStack, whyStuck } from './support';

/**
 * Scenario 6: SIGTERM to every process while actions arrive and webhooks go out. Each process stops within
 * its grace period (each role drains for up to 30 s), no job is left stalled or failed, and once the roles are
 * started again every accepted action is applied once and its webhook delivered.
 */
const stack = useChaosStack();
const GRACE_MS = 30_000;

describe('chaos: SIGTERM to every process under load', () => {
  it('stops each within its grace period and loses no work', async () => {
    await stack.start('api');
    await stack.start('worker');
    await stack.start('dispatcher');
    const receiver = await startReceiver();
    try {
      const p = await chaosProgram(stack, { conversionsRequired: 1000 });
      const endpoint = await p.op.post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, {
        url: receiver.url,
        eventTypes: ['LOYALTY_ACTION_APPLIED'],
      });
      expect(endpoint.status).toBe(200);
      const stops: Record<string, number> = {};
      const result = await load(stack, p, {
        total: 4000,
        concurrency: 16,
        participants: 200,
        during: async (progress) => {
          while (progress() < 0.5) await sleep(100);
          // Worker and dispatcher first (the API keeps answering meanwhile), then the API.
          await Promise.all(
            (['worker', 'dispatcher', 'api'] as const).flatMap((role) =>
              stack.running(role).map(async (run) => {
                const started = performance.now();
                run.child.kill('SIGTERM');
                await run.exited;
                stops[role] = Math.round(performance.now() - started);
              }),
            ),
          );
        },
      });
      // Back up: a new API for the checks and new roles to finish what the stopped ones left.
      await stack.start('worker');
      await stack.start('dispatcher');
      const recoveryMs = await until(
        async () => (await ledgerFigures(stack.sql, p.campaignId, result.accepted)).queued === 0,
        120_000,
        'every accepted action applied',
        () => whyStuck(stack, p.campaignId),
      );
      const figures = await ledgerFigures(stack.sql, p.campaignId, result.accepted);
      await until(
        async () => {
          const [m] = await stack.sql<{ pending: number; total: number }[]>`
            select count(*) filter (where status <> 'SUCCEEDED')::int as pending, count(*)::int as total
            from webhook_messages where endpoint_id = ${endpoint.body.id}`;
          return m!.pending === 0 && m!.total === figures.applied;
        },
        120_000,
        'every webhook delivered',
      );
      const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']));
      report('sigterm', {
        ...figures,
        stopMs: JSON.stringify(stops),
        delivered: ids.size,
        duplicates: receiver.received.length - ids.size,
        recoveryMs,
        answers: result.answers,
      });
      for (const role of ['api', 'worker', 'dispatcher']) {
        expect(stops[role], role).toBeLessThanOrEqual(GRACE_MS + 5_000);
      }
      expect(figures).toMatchObject({ lost: 0, doubled: 0, unknown: 0, queued: 0 });
      expect(ids.size).toBe(figures.applied);
      // No job left behind: nothing failed, nothing held by the stopped processes.
      const [stale] = await stack.sql<{ n: number }[]>`
        select count(*)::int as n from loyalty_actions where status = 'QUEUED'`;
      expect(stale!.n).toBe(0);
    } finally {
      await receiver.close();
    }
  }, 300_000);
});
