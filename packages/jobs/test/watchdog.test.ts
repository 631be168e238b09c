import { createLogger } from '@stampcard/config';
import { afterAll, describe, expect, it } from 'vitest';
import { freezableProxy } from '../../../test/support/freezable-proxy';
import { usePrefix } from '../../../test/support/use';
import {
  type ConsumerSlot,
  type Consumers,
  connectQueues,
  enqueue,
  startConsumers,
  watchConsumers,
} from '../src/index';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every 20 ms until it holds, for `ms` at most. */
async function until(check: () => boolean, ms = 5000) {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await sleep(20);
  return check();
}

/**
 * A consumer that never takes a job, however often it is made again (as a wedged one), of the queue `name`: it
 * has been idle since long before the test.
 */
function neverTaking(name: string) {
  let replacements = 0;
  let lastTakenAt = 0;
  const slot: ConsumerSlot = {
    queue: name,
    worker: {} as ConsumerSlot['worker'],
    holding: 0,
    get lastTakenAt() {
      return lastTakenAt;
    },
    get replacements() {
      return replacements;
    },
    replace: () => {
      replacements += 1;
      lastTakenAt = Date.now();
      return slot.worker;
    },
  };
  const consumers: Consumers = {
    slots: [slot],
    workers: () => [],
    isRunning: () => true,
    close: async () => [],
  };
  return { slot, consumers };
}

describe('the consumer watch', () => {
  const prefix = usePrefix('stampcard_test_watch');
  const stuckPrefix = usePrefix('stampcard_test_watch_stuck');
  const logger = createLogger({ level: 'silent', name: 'watch-test' });
  const queuesReady = connectQueues(REDIS_URL, prefix, () => {});
  const stuckMs = 300;
  let consumers: Consumers | undefined;
  const ran: string[] = [];
  let hold: Promise<void> = Promise.resolve();
  afterAll(async () => {
    await consumers?.close(2000);
    await (await queuesReady).close();
  });

  const start = async () => {
    const queues = await queuesReady;
    consumers = startConsumers<'worker'>({
      consumer: 'worker',
      processors: {
        'loyalty-action.apply': async ({ actionId }) => {
          ran.push(actionId);
          await hold;
        },
        'loyalty-action-batch.apply': async () => {},
        'participant-erasure.run': async () => {},
        'participant-import.run': async () => {},
      },
      connection: queues.consumer.redis,
      prefix,
      concurrency: 1,
      lockMs: 5000,
      onFailed: () => {},
      onError: () => {},
    });
    // Looks are run by hand (`runOnce`): the timer is never started.
    const watch = watchConsumers(consumers, {
      queues: queues.producer.queues,
      logger,
      consumerStuckMs: stuckMs,
    });
    return { queues, consumers, watch };
  };
  const slotOf = (c: Consumers) => c.slots.find((s) => s.queue === 'loyalty-actions')!;

  it('replaces a consumer that takes nothing while a job waits, and leaves busy, idle and paused ones alone', async () => {
    const { queues, consumers, watch } = await start();
    const queue = queues.producer.queues.forJob('loyalty-action.apply');
    const slot = slotOf(consumers);
    const first = slot.worker;
    await first.waitUntilReady();

    // Idle with nothing waiting: no look replaces it, however long it has been idle.
    await sleep(stuckMs + 50);
    expect(await watch.runOnce()).toEqual([]);
    expect(await watch.runOnce()).toEqual([]);

    // Busy: a job held longer than `stuckMs`, another waiting behind it (concurrency 1).
    let release = () => {};
    hold = new Promise<void>((r) => {
      release = r;
    });
    await enqueue(queues.producer.queues, 'loyalty-action.apply', [
      { payload: { actionId: 'act_held' }, jobId: 'act_held' },
      { payload: { actionId: 'act_behind' }, jobId: 'act_behind' },
    ]);
    expect(await until(() => ran.includes('act_held'))).toBe(true);
    await sleep(stuckMs + 50);
    expect(await watch.runOnce()).toEqual([]);
    expect(await watch.runOnce()).toEqual([]);
    expect(slot.worker).toBe(first);
    release();
    hold = Promise.resolve();
    expect(await until(() => ran.includes('act_behind'))).toBe(true);

    // Wedged: the worker stops fetching (as one whose blocking connection never serves it again) while a job
    // waits. The first look sees the job at the head; the next, the same job still there: replaced.
    await first.pause();
    await enqueue(queues.producer.queues, 'loyalty-action.apply', [
      { payload: { actionId: 'act_stuck' }, jobId: 'act_stuck' },
    ]);
    await sleep(stuckMs + 50);
    expect(await watch.runOnce()).toEqual([]);
    // The queue paused by an operator: its jobs are meant to wait.
    await queue.pause();
    expect(await watch.runOnce()).toEqual([]);
    await queue.resume();
    expect(await watch.runOnce()).toEqual(['loyalty-actions']);
    expect(slot.worker).not.toBe(first);
    expect(await until(() => first.closing !== undefined && first.closing !== null)).toBe(true);
    // The new consumer takes the job that waited, and counts as running.
    expect(await until(() => ran.includes('act_stuck'))).toBe(true);
    expect(consumers.workers()).toContain(slot.worker);
    expect(consumers.isRunning()).toBe(true);
    // Fresh: it is not replaced again before `stuckMs` of its own.
    expect(await watch.runOnce()).toEqual([]);
  });

  it('tells when a consumer it replaced is replaced again without taking a job: the connection, not the consumer, is stuck', async () => {
    // A consumer that never takes a job however often it is made again, on a real queue with a job waiting.
    const queues = await connectQueues(REDIS_URL, stuckPrefix, () => {});
    try {
      const queue = queues.producer.queues.forJob('participant-import.run');
      const { consumers: wedged } = neverTaking(queue.name);
      const stuck: string[] = [];
      const watch = watchConsumers(wedged, {
        queues: queues.producer.queues,
        logger,
        consumerStuckMs: stuckMs,
        onConsumerStuck: (q) => stuck.push(q),
      });
      await enqueue(queues.producer.queues, 'participant-import.run', [
        { payload: { importId: 'imp_waiting', batch: 0 }, jobId: 'imp_waiting' },
      ]);
      await sleep(stuckMs + 50);
      expect(await watch.runOnce()).toEqual([]);
      expect(await watch.runOnce()).toEqual([queue.name]);
      // Replaced once: that may be the consumer's own connection.
      expect(stuck).toEqual([]);
      await sleep(stuckMs + 50);
      expect(await watch.runOnce()).toEqual([]);
      expect(await watch.runOnce()).toEqual([queue.name]);
      expect(stuck).toEqual([queue.name]);
    } finally {
      await queues.close();
    }
  });

  it('gives up a look that Redis does not answer within its interval, and looks again once it does', async () => {
    const proxy = await freezableProxy(Number(new URL(REDIS_URL).port || 6379), new URL(REDIS_URL).hostname);
    const queues = await connectQueues(`redis://127.0.0.1:${proxy.port}`, stuckPrefix, () => {});
    try {
      const queue = queues.consumer.queues.forJob('participant-erasure.run');
      const watch = watchConsumers(neverTaking(queue.name).consumers, {
        queues: queues.consumer.queues,
        logger,
        consumerStuckMs: stuckMs,
        watchIntervalMs: 300,
      });
      proxy.freeze();
      // Given up by the watch's own bound: the connection's commands would wait while it reconnects.
      await expect(watch.runOnce()).rejects.toThrow('consumer watch: no answer within 300 ms');
      proxy.thaw();
      expect(await watch.runOnce()).toEqual([]);
    } finally {
      proxy.thaw();
      await queues.close();
      await proxy.close();
    }
  });
});
