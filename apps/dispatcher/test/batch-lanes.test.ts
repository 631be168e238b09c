import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { uniqueEmail } from '../../../test/support/factories';
import { scrapeMetrics } from '../../../test/support/metrics';
import { type Received, useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import {
  goalWorld,
  heldEndpoint,
  messageCounts,
  operator,
  registerEndpoint,
} from '../../../test/support/webhooks';

const METRICS_TOKEN = 'batch-lanes-metrics-token-0123456789';
// 8 job slots: at most 4 jobs wait in place for their lane at once (`laneWaitersMax`).
const stack = useTestStack({
  dispatcher: true,
  endpointConcurrency: 4,
  dispatcherConcurrency: 8,
  metricsToken: METRICS_TOKEN,
  metricsPort: 0,
});

/** The dispatcher's batch-job gauge and counter, read from its `/metrics` as a Prometheus server would. */
async function laneMetrics() {
  const m = await scrapeMetrics(`http://127.0.0.1:${stack.metricsPort}/metrics`, METRICS_TOKEN);
  return {
    waiting: m.value('stampcard_webhook_batch_jobs_waiting'),
    steppedAside: m.value('stampcard_webhook_batch_jobs_stepped_aside_total'),
  };
}
const receiver = useReceivers();

/**
 * A receiver's answer that takes `delayMs`, counting the requests open at once (those `counts` picks): `widest`
 * is the most there were.
 */
function openAtOnce(delayMs: number, counts: (r: Received) => boolean = () => true) {
  let open = 0;
  const seen = { widest: 0 };
  const answer = (r: Received) => {
    if (counts(r)) {
      open += 1;
      seen.widest = Math.max(seen.widest, open);
      setTimeout(() => {
        open -= 1;
      }, delayMs);
    }
    return { delayMs };
  };
  return { answer, seen };
}

/**
 * `n` messages held for a disabled endpoint whose receiver answers in 20 ms, released together by enabling it
 * (batch jobs of 64, queued at once). `meanwhile` runs once the endpoint is enabled. Answers when each message
 * has been received once and recorded SUCCEEDED once, with the widest the receiver saw and the lane metrics
 * before and after.
 */
async function releaseHeld(n: number, meanwhile: () => Promise<void> = async () => {}) {
  const { answer, seen } = openAtOnce(20);
  const rx = await receiver(answer);
  const ep = await heldEndpoint(stack, n, rx.url);
  const before = await laneMetrics();
  const enabled = await operator(stack).patch(`/admin/v1/webhook-endpoints/${ep.id}`, { enabled: true });
  expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
  await meanwhile();

  const got = await rx.waitFor(n, 60_000);
  expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(n);
  // Released by the enabling: a new generation of each, every one recorded once.
  await eventually(
    () => messageCounts(stack, ep.id),
    (counts) => counts['SUCCEEDED@1'] === n,
  );
  expect(await messageCounts(stack, ep.id)).toEqual({ 'SUCCEEDED@1': n });
  return { widest: seen.widest, before, after: await laneMetrics() };
}

describe("an endpoint's batch jobs", () => {
  it('deliver a backlog of one endpoint in their batches, within its window, instead of putting most of it back message by message', async () => {
    // 256 messages waiting for their endpoint: enabling it queues them as four batch jobs of 64, together, for
    // a window of 4 connections. Two batches fill the endpoint's lane (128 messages): the other two wait in
    // place, and the gauge shows them.
    const n = 256;
    const { widest, before, after } = await releaseHeld(n, async () => {
      const waited = await eventually(laneMetrics, (m) => m.waiting >= 1, 10_000);
      expect(waited.waiting).toBeLessThanOrEqual(2);
    });
    expect(widest).toBeLessThanOrEqual(4);
    // Every message went in its batch: none waited its turn as a job of its own (at 50 ms of waiting for a
    // slot each, all but a few of each batch did before).
    const queue = stack.deps.queues.forJob('webhook-message.deliver');
    const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'completed', 'failed']);
    expect(jobs.filter((j) => j?.name === 'webhook-message.deliver')).toEqual([]);
    expect(jobs.filter((j) => j?.name === 'webhook-message-batch.deliver').length).toBe(n / 64);
    // None was turned away: each waited in place until its turn, and none waits now.
    expect(after.steppedAside - before.steppedAside).toBe(0);
    expect(after.waiting).toBe(0);
  });

  it('put back the jobs past the bound on waiting ones, which come back and deliver their messages once', async () => {
    // Eight batch jobs of one endpoint at once, for 8 job slots: two hold its lane, four wait in place, and the
    // last two find the waiting bound reached.
    const { widest, before, after } = await releaseHeld(512);
    expect(widest).toBeLessThanOrEqual(4);
    expect(after.steppedAside - before.steppedAside).toBeGreaterThanOrEqual(1);
    expect(after.waiting).toBe(0);
  });

  it("counts an ordered endpoint's next messages one each: released one by one, many still go at once", async () => {
    // Each participant's messages go one at a time, each made due by the end of the one before, in a job of its
    // own. Bounding jobs rather than messages let two of them through at once.
    const { answer, seen } = openAtOnce(150, (r) => Number(r.headers['webhook-sequence']) >= 2);
    const rx = await receiver(answer);
    const w = await goalWorld(stack);
    await registerEndpoint(stack, w.campaign.id, { url: rx.url, ordering: 'PARTICIPANT' });
    // One action each: NEW_PARTICIPANT_ADDED, LOYALTY_ACTION_APPLIED and PARTICIPANT_REACHED_A_GOAL, in turn.
    const participants = 16;
    await Promise.all(Array.from({ length: participants }, () => w.act(uniqueEmail())));
    await rx.waitFor(participants * 3, 30_000);
    // The window is 4 (`endpointConcurrency`): it was filled with messages released one by one.
    expect(seen.widest).toBeGreaterThan(2);
    expect(seen.widest).toBeLessThanOrEqual(4);
  });
});
