import { type AddressInfo, createServer, type Socket } from 'node:net';
import { createApp } from '@stampcard/api';
import { events, loyaltyActions } from '@stampcard/db';
import { createQueues, createRedis } from '@stampcard/jobs';
import { eq, inArray } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { freezableProxy } from '../../../test/support/freezable-proxy';
import { capturedLogger } from '../../../test/support/logs';
import { queueDown } from '../../../test/support/queue-down';
import { useReceivers } from '../../../test/support/receiver';
import { deleteRedisKeys, REDIS_URL, uniquePrefix } from '../../../test/support/redis-keys';
import { useTestStack } from '../../../test/support/use';
import { operator, registerEndpoint } from '../../../test/support/webhooks';

// The dispatcher runs, but its sweep's timer does not (the test stack leaves it to tests, which run it by hand
// only where they say so): an event that reaches a receiver here was handed on by its write, at once.
const stack = useTestStack({ dispatcher: true });
const receiver = useReceivers();

/** A campaign whose endpoint (a local receiver) wants the events of participant and operator writes. */
async function watchedCampaign() {
  const rx = await receiver();
  const w = await makeWorld(stack.ctx);
  await registerEndpoint(stack, w.campaign.id, {
    url: rx.url,
    eventTypes: ['PARTICIPANT_UPDATED', 'CAMPAIGN_ENDED'],
  });
  const api = client(inProcess(stack.app), w.key);
  const email = uniqueEmail();
  const added = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
    participantEmail: email,
    rewardId: w.reward.id,
  });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
  return { ...w, rx, api, email };
}

describe('writes hand their events to the dispatcher once committed', () => {
  it("a participant update's PARTICIPANT_UPDATED reaches the receiver without the sweep", async () => {
    const w = await watchedCampaign();
    const res = await w.api.patch(`/v1/campaign/${w.campaign.id}/participant/${w.email}`, {
      firstName: 'Ada',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [got] = await w.rx.waitFor(1, 5000);
    expect(got!.json.type).toBe('PARTICIPANT_UPDATED');
    expect(got!.json.data.participant.firstName).toBe('Ada');
    expect(got!.json.data.changed).toEqual(['firstName']);
  });

  it("an operator's campaign change records CAMPAIGN_ENDED and it reaches the receiver without the sweep", async () => {
    const w = await watchedCampaign();
    const res = await operator(stack).patch(`/admin/v1/campaigns/${w.campaign.id}`, { status: 'COMPLETE' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [got] = await w.rx.waitFor(1, 5000);
    expect(got!.json.type).toBe('CAMPAIGN_ENDED');
    expect(got!.json.data.campaign.id).toBe(w.campaign.id);
  });

  it('an enqueue that fails is logged with ids and error class only, the write answers, and the sweep delivers', async () => {
    const w = await watchedCampaign();
    const down = queueDown();
    const { logger, lines } = capturedLogger('warn');
    try {
      const app = createApp({ ...stack.deps, queues: down.queues, logger });
      const api = client(inProcess(app), w.key);
      const res = await api.patch(`/v1/campaign/${w.campaign.id}/participant/${w.email}`, {
        firstName: 'Grace',
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      // The answer waits for the COMMIT, not the enqueue: its failure is logged right after.
      const line = await eventually(
        async () => lines.map((l) => JSON.parse(l)).find((l) => l.msg.startsWith('events not queued')),
        (found) => found !== undefined,
      );
      expect(line, lines.join('\n')).toBeDefined();
      expect(line.eventIds).toHaveLength(1);
      expect(line.errorClass).toEqual(expect.any(String));
      // Ids and the error's class: no event body, no participant's data, no error message.
      expect(JSON.stringify(line)).not.toContain('Grace');
      expect(JSON.stringify(line)).not.toContain(w.email);
      expect(
        Object.keys(line)
          .filter((k) => !['level', 'time', 'pid', 'hostname', 'name', 'service', 'msg'].includes(k))
          .sort(),
      ).toEqual(['errorClass', 'eventIds']);
      const [row] = await stack.ctx.db.select().from(events).where(inArray(events.id, line.eventIds));
      expect(row?.type).toBe('PARTICIPANT_UPDATED');
      expect(row?.dispatchedAt).toBeNull();
      // Nothing was queued, so nothing arrives until the sweep runs; then it does.
      await new Promise((r) => setTimeout(r, 300));
      expect(w.rx.received).toHaveLength(0);
      await eventually(
        () => stack.dispatcher!.sweeper.runOnce().then(() => w.rx.received.length),
        (n) => n === 1,
      );
      expect(w.rx.received[0]!.json.data.participant.firstName).toBe('Grace');
    } finally {
      await down.close();
    }
  });

  it('an answer waits for its COMMIT, not for its jobs: with Redis silent the action is accepted at once', async () => {
    const w = await watchedCampaign();
    // A Redis that takes connections and never answers: every enqueue hangs.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const redis = createRedis(`redis://127.0.0.1:${(silent.address() as AddressInfo).port}`, {
      maxRetriesPerRequest: null,
      connectTimeout: 60_000,
    });
    redis.on('error', () => {});
    const queues = createQueues(redis, 'stampcard_silent', () => {});
    try {
      // A deadline far past the test's own timeout: an answer that waited for the enqueue would never come.
      const app = createApp({ ...stack.deps, queues, requestTimeoutMs: 600_000 });
      const api = client(inProcess(app), w.key);
      const res = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: w.email,
        rewardId: w.reward.id,
        metadata: { silent: true },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const [row] = await stack.ctx.db
        .select()
        .from(loyaltyActions)
        .where(eq(loyaltyActions.id, res.body.action.id));
      expect(row?.status).toBe('QUEUED');
    } finally {
      redis.disconnect();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("on close, the app's drain waits for the jobs of what it committed: none is left only to the relay", async () => {
    const w = await watchedCampaign();
    // The app's Redis behind a proxy the test can freeze: its enqueues hang until thawed.
    const proxy = await freezableProxy(Number(new URL(REDIS_URL).port || 6379), new URL(REDIS_URL).hostname);
    const prefix = uniquePrefix('stampcard_drain');
    const redis = createRedis(`redis://127.0.0.1:${proxy.port}`, { maxRetriesPerRequest: null });
    const direct = createRedis(REDIS_URL);
    for (const r of [redis, direct]) r.on('error', () => {});
    const queues = createQueues(redis, prefix, () => {});
    const seen = createQueues(direct, prefix, () => {});
    const batches = seen.forJob('loyalty-action-batch.apply');
    try {
      await redis.ping();
      const app = createApp({ ...stack.deps, queues });
      proxy.freeze();
      const res = await client(inProcess(app), w.key).post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: w.email,
        rewardId: w.reward.id,
        metadata: { drained: true },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const draining = app.drainHandOffs().then(() => 'drained');
      const waited = await Promise.race([draining, new Promise((r) => setTimeout(r, 300, 'waiting'))]);
      expect(waited).toBe('waiting');
      expect(await batches.getJobs(['waiting'])).toEqual([]);

      proxy.thaw();
      expect(await draining).toBe('drained');
      // Read at once, with no waiting: the drain resolved only once the job was in Redis.
      const jobs = await batches.getJobs(['waiting']);
      expect(jobs.flatMap((j) => (j.data as { actionIds: string[] }).actionIds)).toEqual([
        res.body.action.id,
      ]);
    } finally {
      await queues.close();
      await seen.close();
      redis.disconnect();
      direct.disconnect();
      await proxy.close();
      await deleteRedisKeys(REDIS_URL, prefix);
    }
  });
});
