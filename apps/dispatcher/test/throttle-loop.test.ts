import { envSchema } from '@stampcard/config';
import { webhookAttempts } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

/**
 * The throttle loop of issue 16, with the service's own defaults (retry schedule, throttle floor and bound):
 * a receiver that answers every request `429 Retry-After: 0` used to be called again at once, forever.
 */
const stack = useTestStack({
  dispatcher: true,
  sweep: true,
  retrySchedule: envSchema.shape.WEBHOOK_RETRY_SCHEDULE.parse(undefined).join(','),
});

const receiver = useReceivers();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a receiver cannot loop the dispatcher', () => {
  it('429 Retry-After: 0 for 20 s gets a bounded number of requests, and another tenant keeps its latency', async () => {
    const looping = await receiver(() => ({ status: 429, headers: { 'retry-after': '0' } }));
    const healthy = await receiver();
    const noisy = await goalWorld(stack);
    const quiet = await goalWorld(stack);
    const ep = await registerEndpoint(stack, noisy.campaign.id, { url: looping.url });
    await registerEndpoint(stack, quiet.campaign.id, {
      url: healthy.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    const op = operator(stack);

    // 50 messages for the looping receiver at once (the report's figure).
    const sent = await Promise.all(
      Array.from({ length: 50 }, () => op.post(`/admin/v1/webhook-endpoints/${ep.id}/test`)),
    );
    expect(sent.every((r) => r.status === 200)).toBe(true);
    const start = Date.now();

    // Meanwhile the other tenant's events keep arriving at its endpoint, each within a generous bound
    // (about 20 ms on a quiet machine): `waitFor` fails the test when one takes longer than 3 s.
    let delivered = 0;
    while (Date.now() - start < 20_000) {
      await quiet.act();
      await healthy.waitFor(++delivered, 3000);
      await sleep(250);
    }
    // (Delivery is at least once: a busy machine may send one twice, never skip one.)
    expect(new Set(healthy.received.map((r) => r.headers['webhook-id'])).size).toBe(delivered);
    // And as many as usual: about 50 in these 20 s (the loop left room for 14).
    expect(delivered).toBeGreaterThan(20);

    // 20 s of a receiver that always says "again, now": a bounded number of requests (today's code made
    // thousands), and as many attempt rows at most.
    const requests = looping.received.length;
    expect(requests).toBeGreaterThan(0);
    expect(requests).toBeLessThanOrEqual(30);
    const rows = await stack.ctx.db
      .select()
      .from(webhookAttempts)
      .where(eq(webhookAttempts.endpointId, ep.id));
    expect(rows.length).toBeLessThanOrEqual(requests);
    // Nothing is lost: every message still waits for its endpoint.
    const messages = await messagesOf(stack, ep.id, '?limit=100');
    expect(messages).toHaveLength(50);
    expect(messages.every((m) => m.status === 'PENDING')).toBe(true);

    await op.patch(`/admin/v1/webhook-endpoints/${ep.id}`, { enabled: false });
  }, 60_000);
});
