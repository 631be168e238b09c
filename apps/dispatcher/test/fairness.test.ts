import { createLogger, loadConfig } from '@stampcard/config';
import { createDb } from '@stampcard/db';
import { dispatcherSettings, startDispatcher } from '@stampcard/dispatcher';
import { duplicateRedis } from '@stampcard/jobs';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

const stack = useTestStack({
  dispatcher: true,
  sweep: true,
  retrySchedule: '50',
  // Long enough that the hanging endpoint's first attempts are still open when a busy machine has delivered
  // the healthy endpoints' 24 messages.
  webhookTimeoutMs: 10_000,
  endpointConcurrency: 2,
});

const receiver = useReceivers();

describe('fairness and throttling', () => {
  it('an endpoint that hangs holds only its own slots: other endpoints and campaigns get theirs at once', async () => {
    const hanging = await receiver(() => ({ hang: true }));
    const healthy = await receiver();
    const elsewhere = await receiver();
    const w = await goalWorld(stack);
    const other = await goalWorld(stack);
    const stuck = await registerEndpoint(stack, w.campaign.id, {
      url: hanging.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await registerEndpoint(stack, w.campaign.id, {
      url: healthy.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await registerEndpoint(stack, other.campaign.id, {
      url: elsewhere.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    for (let i = 0; i < 12; i++) await Promise.all([w.act(), other.act()]);
    // Every delivery to the healthy endpoints lands before the hanging one's first attempt even times out
    // (10 s): none of its attempts is recorded yet.
    await healthy.waitFor(12);
    await elsewhere.waitFor(12);
    const held = await messagesOf(stack, stuck.id, '?limit=100');
    expect(held).toHaveLength(12);
    expect(held.every((m) => m.attemptLog.length === 0)).toBe(true);
    // It holds at most WEBHOOK_ENDPOINT_CONCURRENCY (2) connections.
    expect(hanging.received.length).toBeLessThanOrEqual(2);
    await operator(stack).patch(`/admin/v1/webhook-endpoints/${stuck.id}`, { enabled: false });
  });

  it("an endpoint's rateLimit holds across two dispatchers sharing Redis", async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, rateLimit: 5 });
    // A second dispatcher: its own pool, Redis connection, workers and in-flight slots; the same queue prefix.
    const pool = createDb(stack.dbUrl, { max: 4 });
    const connection = duplicateRedis(stack.redis, { maxRetriesPerRequest: null });
    const second = startDispatcher({
      ctx: { db: pool.db, clock: stack.ctx.clock },
      connection,
      queues: stack.deps.queues,
      prefix: stack.prefix,
      logger: createLogger({ level: 'silent', name: 'second-dispatcher' }),
      // The configuration's defaults, but for what this test sets.
      ...dispatcherSettings(loadConfig({})),
      retrySchedule: [50],
      allowPrivateNetworks: true,
      concurrency: 16,
      sweep: false,
    });
    try {
      const op = operator(stack);
      for (let i = 0; i < 15; i++)
        expect((await op.post(`/admin/v1/webhook-endpoints/${ep.id}/test`)).status).toBe(200);
      const got = await rx.waitFor(15, 10_000);
      const times = got.map((r) => r.at).sort((a, b) => a - b);
      // Spaced by 1000 / 5 = 200 ms: 15 deliveries take at least 14 gaps, and no second ever holds more than 5.
      // Seen at the receiver, a send the machine delayed after its slot (a busy event loop, up to 200 ms) lands
      // nearer the next: six arrivals never fit in 800 ms.
      expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(14 * 200 - 100);
      for (const t of times) expect(times.filter((u) => u >= t && u < t + 800).length).toBeLessThanOrEqual(5);
      const messages = await eventually(
        () => messagesOf(stack, ep.id, '?limit=100'),
        (ms) => ms.length === 15 && ms.every((m) => m.status === 'SUCCEEDED'),
      );
      expect(messages.every((m) => m.attemptLog.length === 1)).toBe(true);
    } finally {
      await second.close();
      connection.disconnect();
      await pool.close();
    }
  });
});
