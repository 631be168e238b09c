import { ATTEMPT_LOG_KEEP } from '@stampcard/core';
import { events, webhookAttempts, webhookEndpoints } from '@stampcard/db';
import { createEndpointGate } from '@stampcard/dispatcher';
import { duplicateRedis } from '@stampcard/jobs';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

/**
 * Throttled answers with short settings: a floor of 100 ms (growing to the schedule's longest delay, 200 ms)
 * and 3 free throttles, so that what happens past the bound is seen in a second.
 */
const stack = useTestStack({
  dispatcher: true,
  sweep: true,
  retrySchedule: '50,100,200',
  throttleFloorMs: 100,
  freeThrottles: 3,
});

const receiver = useReceivers();

const THROTTLE = { status: 429, headers: { 'retry-after': '0' } };

const getMessage = async (id: string) => {
  const res = await operator(stack).get(`/admin/v1/webhook-messages/${id}`);
  expect(res.status).toBe(200);
  return res.body;
};

const attemptRows = (messageId: string) =>
  stack.ctx.db.select().from(webhookAttempts).where(eq(webhookAttempts.messageId, messageId));

describe('the endpoint gate', () => {
  it('a pause only grows: a shorter one set later does not cut it, in this process or another', async () => {
    const prefix = `${stack.prefix}:gate`;
    const other = duplicateRedis(stack.redis);
    try {
      const here = createEndpointGate(stack.redis, prefix);
      const there = createEndpointGate(other, prefix);
      await here.pause('ep_1', 5000);
      await there.pause('ep_1', 100);
      await here.pause('ep_1', 100);
      for (const gate of [here, there]) expect(await gate.wait('ep_1', null)).toBeGreaterThan(4000);
      expect(await stack.redis.pttl(`${prefix}:webhooks:{ep_1}:pause`)).toBeGreaterThan(4000);
      expect(await here.wait('ep_2', null)).toBe(0);
    } finally {
      other.disconnect();
    }
  });
});

describe('an endpoint that keeps throttling', () => {
  it('past its free throttles each one counts: the message is dead-lettered when the schedule is spent', async () => {
    const rx = await receiver(() => THROTTLE);
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    const test = await operator(stack).post(`/admin/v1/webhook-endpoints/${ep.id}/test`);
    expect(test.status).toBe(200);
    const dead = await eventually(
      () => getMessage(test.body.messageId),
      (m) => m.status === 'FAILED',
    );
    // 3 free throttles, then the 4 attempts of the schedule (once + 50, 100, 200), each of them a throttle.
    expect(dead).toMatchObject({ attempts: 4, lastError: 'HTTP 429', attemptCount: 7, attemptsOmitted: 0 });
    expect(dead.attemptLog.map((a: any) => [a.statusCode, a.throttled])).toEqual(
      Array.from({ length: 7 }, () => [429, true]),
    );
    // Each came at least the floor (100 ms) after the one before, `Retry-After: 0` notwithstanding.
    const times = dead.attemptLog.map((a: any) => a.attemptedAt);
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(95);
    const endpoint = (await operator(stack).get(`/admin/v1/webhook-endpoints/${ep.id}`)).body;
    expect(endpoint).toMatchObject({ enabled: true, throttledSince: times[0] });
    // The throttles past the bound started its run of failures.
    expect(endpoint.failingSince).toBe(times[3]);
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.received).toHaveLength(7);
  });

  it('and toward disabling it: throttles past the bound disable an endpoint failing for 5 days, the free ones do not', async () => {
    const rx = await receiver(() => THROTTLE);
    const watcher = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, eventTypes: ['CAMPAIGN_ENDED'] });
    await registerEndpoint(stack, w.campaign.id, {
      url: watcher.url,
      eventTypes: ['WEBHOOK_ENDPOINT_DISABLED'],
    });
    const since = new Date(Date.now() - 5 * 24 * 3600 * 1000 - 60_000);
    await stack.ctx.db
      .update(webhookEndpoints)
      .set({ failingSince: since })
      .where(eq(webhookEndpoints.id, ep.id));
    const test = await operator(stack).post(`/admin/v1/webhook-endpoints/${ep.id}/test`);
    const disabled = await eventually(
      () => operator(stack).get(`/admin/v1/webhook-endpoints/${ep.id}`),
      (r) => r.body.enabled === false,
    );
    expect(disabled.body).toMatchObject({ disabledReason: 'FAILING', failingSince: since.getTime() });
    // The three free throttles changed nothing; the fourth counted, and disabled it.
    expect(rx.received).toHaveLength(4);
    const [notice] = await watcher.waitFor(1);
    expect(notice!.json).toMatchObject({
      type: 'WEBHOOK_ENDPOINT_DISABLED',
      data: { endpoint: { id: ep.id }, reason: 'FAILING' },
    });
    const stored = await stack.ctx.db
      .select()
      .from(events)
      .where(eq(events.type, 'WEBHOOK_ENDPOINT_DISABLED'));
    expect(stored.filter((e) => (e.data as any).endpoint.id === ep.id)).toHaveLength(1);
    // Its message is kept for when it is enabled again.
    expect(await getMessage(test.body.messageId)).toMatchObject({ status: 'PENDING', attempts: 1 });
  });

  it('shows a log longer than the bound (written before it) as its first and last attempts, with the count', async () => {
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: 'http://127.0.0.1:9/hooks',
      enabled: false,
    });
    const test = await operator(stack).post(`/admin/v1/webhook-endpoints/${ep.id}/test`);
    const id = test.body.messageId as string;
    const t0 = Date.now() - 60_000;
    await stack.ctx.db.insert(webhookAttempts).values(
      Array.from({ length: 30 }, (_, i) => ({
        id: `dlv_old_${String(i).padStart(2, '0')}`,
        messageId: id,
        endpointId: ep.id,
        attemptedAt: new Date(t0 + i * 1000),
        statusCode: 429,
        latencyMs: 1,
        responseExcerpt: null,
        errorClass: 'HTTP_STATUS',
        succeeded: false,
        throttled: true,
      })),
    );
    const m = await getMessage(id);
    expect(m).toMatchObject({ attemptCount: 30, attemptsOmitted: 30 - 2 * ATTEMPT_LOG_KEEP });
    const kept = [
      ...Array(ATTEMPT_LOG_KEEP).keys(),
      ...Array.from({ length: ATTEMPT_LOG_KEEP }, (_, i) => 20 + i),
    ];
    expect(m.attemptLog.map((a: any) => a.id)).toEqual(
      kept.map((i) => `dlv_old_${String(i).padStart(2, '0')}`),
    );
  });

  it("keeps a message's first and last attempts, and counts the rest; a success ends the endpoint's run", async () => {
    let healthy = false;
    const rx = await receiver(() => (healthy ? {} : THROTTLE));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, eventTypes: ['CAMPAIGN_ENDED'] });
    const op = operator(stack);
    const test = await op.post(`/admin/v1/webhook-endpoints/${ep.id}/test`);
    const id = test.body.messageId as string;
    const failed = () =>
      eventually(
        () => getMessage(id),
        (m) => m.status === 'FAILED',
      );
    // 7 attempts on the first schedule (3 free throttles and 4 counted); each replay's 4 count at once, the run
    // of throttles going on.
    let m = await failed();
    for (let replay = 1; replay <= 4; replay++) {
      expect((await op.post(`/admin/v1/webhook-messages/${id}/replay`)).status).toBe(200);
      await eventually(
        () => getMessage(id),
        (x) => x.attemptCount === 7 + 4 * replay && x.status === 'FAILED',
      );
    }
    healthy = true;
    expect((await op.post(`/admin/v1/webhook-messages/${id}/replay`)).status).toBe(200);
    m = await eventually(
      () => getMessage(id),
      (x) => x.status === 'SUCCEEDED',
    );
    const total = 7 + 4 * 4 + 1;
    expect(rx.received).toHaveLength(total);
    expect(m).toMatchObject({
      attemptCount: total,
      attemptsOmitted: total - 2 * ATTEMPT_LOG_KEEP,
      attempts: 1,
    });
    // The log holds the first 10 and the last 10, oldest first, the success last.
    const sent = rx.received.map((r) => r.at);
    expect(m.attemptLog).toHaveLength(2 * ATTEMPT_LOG_KEEP);
    const shown = m.attemptLog.map((a: any) => a.attemptedAt);
    expect(shown).toEqual([...shown].sort((a, b) => a - b));
    expect(m.attemptLog.at(-1)).toMatchObject({ statusCode: 200, succeeded: true, throttled: false });
    expect(m.attemptLog.slice(0, -1).every((a: any) => a.statusCode === 429)).toBe(true);
    // First 10 before the 11th request went out; the last 10 after the 13th-from-last.
    expect(shown[ATTEMPT_LOG_KEEP - 1]).toBeLessThanOrEqual(sent[ATTEMPT_LOG_KEEP]!);
    expect(shown[ATTEMPT_LOG_KEEP]).toBeGreaterThanOrEqual(sent[total - ATTEMPT_LOG_KEEP - 1]!);
    // The table holds no more than that either.
    expect(await attemptRows(id)).toHaveLength(2 * ATTEMPT_LOG_KEEP);
    // The success ended the endpoint's run of throttles (and of failures).
    expect((await op.get(`/admin/v1/webhook-endpoints/${ep.id}`)).body).toMatchObject({
      throttledSince: null,
      failingSince: null,
    });
    // The endpoint's list shows the same bounded log.
    const [listed] = await messagesOf(stack, ep.id);
    expect(listed).toMatchObject({ id, attemptCount: total, attemptsOmitted: total - 2 * ATTEMPT_LOG_KEEP });
    expect(listed.attemptLog).toEqual(m.attemptLog);
  });

  it('keeps the log bounded on the plain success path too: a message delivered and replayed 25 times', async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, eventTypes: ['CAMPAIGN_ENDED'] });
    const op = operator(stack);
    const id = (await op.post(`/admin/v1/webhook-endpoints/${ep.id}/test`)).body.messageId as string;
    // Delivery is at least once (the test's sweep may send a replay twice), so each step waits for more
    // attempts than the last, and the counts are checked against what the receiver got.
    let seen = 0;
    while (seen < 2 * ATTEMPT_LOG_KEEP + 5) {
      if (seen > 0) expect((await op.post(`/admin/v1/webhook-messages/${id}/replay`)).status).toBe(200);
      const before = seen;
      seen = (
        await eventually(
          () => getMessage(id),
          (x) => x.status === 'SUCCEEDED' && x.attemptCount > before,
        )
      ).attemptCount;
    }
    const m = await eventually(
      () => getMessage(id),
      (x) => x.attemptCount === rx.received.length,
    );
    expect(await attemptRows(id)).toHaveLength(2 * ATTEMPT_LOG_KEEP);
    expect(m.attemptsOmitted).toBe(m.attemptCount - 2 * ATTEMPT_LOG_KEEP);
    expect(m.attemptLog).toHaveLength(2 * ATTEMPT_LOG_KEEP);
  });
});
