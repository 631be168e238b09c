import { participants, webhookAttempts, webhookMessages } from '@stampcard/db';
import { eq, sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../support/client';
import { type Run, startBuilt, waitForOutput } from '../support/processes';
import { startReceiver } from '../support/receiver';
import { OPERATOR_TOKEN } from '../support/stack';
import { useTestStack } from '../support/use';
import { goalWorld, registerEndpoint } from '../support/webhooks';

/**
 * Two processes of each role, started as production starts them (`dist/start.js api|worker|dispatcher`), on one
 * database and one queue prefix: the test's stack runs no role of its own but holds the database.
 */
const stack = useTestStack({ worker: false, dispatcher: false });
const runs: Run[] = [];

afterAll(async () => {
  for (const run of runs)
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGTERM');
  await Promise.all(runs.map((r) => r.exited));
});

function start(role: 'api' | 'worker' | 'dispatcher'): Run {
  const run = startBuilt(
    {
      NODE_ENV: 'test',
      ...stack.storeEnv,
      OPERATOR_TOKEN,
      PORT: '0',
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '50,100,200,400,800',
      WORKER_CONCURRENCY: '8',
      DISPATCHER_CONCURRENCY: '8',
      DISPATCH_SWEEP_MS: '500',
    },
    ['dist/start.js', role],
  );
  runs.push(run);
  return run;
}

describe('two processes of each role', () => {
  it('count every action exactly and deliver every message once, its attempts each sent once', async () => {
    const apis = [start('api'), start('api')];
    const ports = await Promise.all(
      apis.map(async (run) => (await waitForOutput(run, /"port":(\d+)/, 30_000))[1]),
    );
    const others = [start('worker'), start('worker'), start('dispatcher'), start('dispatcher')];
    await Promise.all(
      others.map((run) =>
        waitForOutput(run, /worker and relay running|webhook dispatcher and sweep running/, 30_000),
      ),
    );

    // A receiver that fails one request in five: messages are retried by whichever dispatcher takes them.
    const rx = await startReceiver((_req, n) => (n % 5 === 4 ? { status: 500 } : {}));
    try {
      const w = await goalWorld(stack, { reward: { conversionsRequired: 3, isUnlimited: true } });
      const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
      const apiClients = ports.map((port) => client(overHttp(`http://127.0.0.1:${port}`), w.key));
      const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;
      // 30 participants, 10 actions each, sent 12 at a time, alternately to the two APIs; each body distinct (the
      // same body again while the first is QUEUED is a 409 DUPLICATE_REQUEST, by design).
      const sends = Array.from({ length: 300 }, (_, i) => ({
        n: i,
        email: `p${i % 30}@example.com`,
        api: apiClients[i % 2]!,
      }));
      const statuses: number[] = [];
      for (let i = 0; i < sends.length; i += 12) {
        const batch = await Promise.all(
          sends
            .slice(i, i + 12)
            .map((s) =>
              s.api.post(path, { participantEmail: s.email, rewardId: w.reward.id, metadata: { n: s.n } }),
            ),
        );
        statuses.push(...batch.map((r) => r.status));
      }
      expect(statuses).toEqual(Array(300).fill(200));

      // Exact counts: 10 actions per participant, 3 rewards each (10 / 3), whichever worker applied which.
      const counted = await eventually(
        () => client(overHttp(`http://127.0.0.1:${ports[0]}`), w.key).get(`/v1/campaign/${w.campaign.id}`),
        (r) => r.body.loyaltyActionCount === 300,
        60_000,
      );
      expect(counted.body).toMatchObject({ loyaltyActionCount: 300, participantCount: 30 });
      const rows = await stack.ctx.db
        .select({ count: participants.loyaltyActionCount })
        .from(participants)
        .where(eq(participants.campaignId, w.campaign.id));
      expect(rows.map((r) => r.count)).toEqual(Array(30).fill(10));

      // Every message succeeds once; no attempt went out that was not recorded, and none twice.
      const messages = await eventually(
        () =>
          stack.ctx.db
            .select({ id: webhookMessages.id, status: webhookMessages.status })
            .from(webhookMessages)
            .where(eq(webhookMessages.endpointId, ep.id)),
        (ms) => ms.length > 300 && ms.every((m) => m.status === 'SUCCEEDED'),
        60_000,
      );
      const [attempts] = await stack.ctx.db
        .select({ n: sql<number>`count(*)::int` })
        .from(webhookAttempts)
        .where(eq(webhookAttempts.endpointId, ep.id));
      await new Promise((r) => setTimeout(r, 500));
      expect(rx.received).toHaveLength(attempts!.n);
      const succeeded = new Map<string, number>();
      rx.received.forEach((r, n) => {
        if (n % 5 === 4) return;
        const id = r.headers['webhook-id'] as string;
        succeeded.set(id, (succeeded.get(id) ?? 0) + 1);
      });
      expect(succeeded.size).toBe(messages.length);
      expect([...succeeded.values()].every((k) => k === 1)).toBe(true);
    } finally {
      await rx.close();
    }
  }, 180_000);
});
