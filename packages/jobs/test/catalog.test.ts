import { Worker } from 'bullmq';
import keySlot from 'cluster-key-slot';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { usePrefix } from '../../../test/support/use';
import {
  actionsInBatchJobs,
  type Consumers,
  connectQueues,
  currentJobName,
  deferDeliveries,
  dispatchByName,
  enqueue,
  enqueueActions,
  enqueueCommitted,
  FAN_OUT_BATCH,
  isJobName,
  JOB_ALIASES,
  JOBS,
  type JobPayload,
  MAX_QUEUE_SHARDS,
  QUEUE_NAMES,
  shardNames,
  startConsumers,
} from '../src/index';

/**
 * The catalog's promise is at compile time: a job's name gives its payload type. The `@ts-expect-error`
 * lines below are checked by `npm run typecheck`; the rest checks what reaches Redis.
 */
describe('the job catalog', () => {
  const prefixes = [
    usePrefix('stampcard_test_catalog'),
    usePrefix('stampcard_test_catalog'),
    usePrefix('stampcard_test_catalog'),
    usePrefix('stampcard_test_catalog'),
  ] as const;
  it('a job name gives its payload type; a wrong payload or name does not compile', () => {
    expectTypeOf<JobPayload<'loyalty-action.apply'>>().toEqualTypeOf<{ actionId: string }>();
    const typeChecks = (queues: Parameters<typeof enqueue>[0]) => {
      // @ts-expect-error: the payload of loyalty-action.apply has an actionId
      void enqueue(queues, 'loyalty-action.apply', [{ payload: { participantId: 'x' } }]);
      // @ts-expect-error: no such job
      void enqueue(queues, 'loyalty-action.delete', [{ payload: { actionId: 'act_1' } }]);
    };
    expect(typeof typeChecks).toBe('function');
  });

  it('names jobs entity.verb, each on a queue of QUEUE_NAMES, and refuses names that are not its own', () => {
    for (const [name, job] of Object.entries(JOBS)) {
      expect(name).toMatch(/^[a-z-]+\.[a-z-]+$/);
      expect(QUEUE_NAMES).toContain(job.queue);
    }
    expect(isJobName('loyalty-action.apply')).toBe(true);
    for (const bad of ['__proto__', 'constructor', 'toString', 'loyalty-action'])
      expect(isJobName(bad)).toBe(false);
  });

  it('enqueue adds jobs under their name, with the catalog retry policy, once per job id', async () => {
    const prefix = prefixes[0];
    const queues = await connectQueues(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix, () => {});
    try {
      const { producer } = queues;
      await enqueue(producer.queues, 'loyalty-action.apply', [
        { payload: { actionId: 'act_a' }, jobId: 'act_a' },
        { payload: { actionId: 'act_a' }, jobId: 'act_a' },
        { payload: { actionId: 'act_b' } },
      ]);
      const waiting = await producer.queues.forJob('loyalty-action.apply').getWaiting();
      expect(waiting.map((j) => j.name)).toEqual(['loyalty-action.apply', 'loyalty-action.apply']);
      expect(waiting.map((j) => j.data).sort((a, b) => a.actionId.localeCompare(b.actionId))).toEqual([
        { actionId: 'act_a' },
        { actionId: 'act_b' },
      ]);
      expect(waiting[0]!.opts.attempts).toBe(JOBS['loyalty-action.apply'].options.attempts);
    } finally {
      await queues.close();
    }
  });
  it('enqueueActions puts actions in batch jobs of up to 64, and deferDeliveries delays single jobs', async () => {
    const prefix = prefixes[1];
    const queues = await connectQueues(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix, () => {});
    try {
      const { producer } = queues;
      const ids = Array.from({ length: 150 }, (_, i) => `act_${String(i).padStart(3, '0')}`);
      await enqueueActions(producer.queues, ids);
      const waiting = await producer.queues.forJob('loyalty-action-batch.apply').getWaiting();
      const batches = waiting.map((j) => (j.data as { actionIds: string[] }).actionIds);
      expect(batches.map((b) => b.length).sort((a, b) => b - a)).toEqual([64, 64, 22]);
      expect(batches.flat().sort()).toEqual(ids);
      await enqueueActions(producer.queues, []);
      expect(await producer.queues.forJob('loyalty-action-batch.apply').getWaitingCount()).toBe(3);

      await deferDeliveries(producer.queues, [
        { messageId: 'msg_a', generation: 2, delayMs: 60_000 },
        { messageId: 'msg_a', generation: 2, delayMs: 60_000 },
      ]);
      const delayed = await producer.queues.forJob('webhook-message.deliver').getDelayed();
      expect(delayed.map((j) => [j.id, j.data, j.opts.delay])).toEqual([
        ['msg_a-2', { messageId: 'msg_a', generation: 2 }, 60_000],
      ]);
    } finally {
      await queues.close();
    }
  });
  it('enqueueCommitted queues actions in batch jobs of up to 64, events in fan-out jobs of up to 5000, and a job per erasure step', async () => {
    const prefix = `stampcard_test_catalog_${Date.now().toString(36)}_c`;
    const queues = await connectQueues(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix, () => {});
    const warned: object[] = [];
    try {
      const { producer } = queues;
      const handOn = enqueueCommitted(producer.queues, { warn: (obj) => warned.push(obj) });
      const actionIds = Array.from({ length: 65 }, (_, i) => `act_${i}`);
      const eventIds = Array.from({ length: FAN_OUT_BATCH + 1 }, (_, i) => `evt_${i}`);
      const erasureSteps = [
        { participantId: 'pt_a', batch: 1 },
        { participantId: 'pt_b', batch: 3 },
      ];
      await handOn({ actionIds, eventIds, erasureSteps, importSteps: [] });
      await handOn({ actionIds: [], eventIds: [], erasureSteps: [], importSteps: [] });
      // The same step again (a batch handed on twice): one job, by its id.
      await handOn({ actionIds: [], eventIds: [], erasureSteps: [erasureSteps[0]!], importSteps: [] });
      const actions = await producer.queues.forJob('loyalty-action-batch.apply').getWaiting();
      expect(actions.map((j) => (j.data as { actionIds: string[] }).actionIds.length).sort()).toEqual([
        1, 64,
      ]);
      const fanOuts = await producer.queues.forJob('webhook-events.fan-out').getWaiting();
      const sizes = fanOuts.map((j) => (j.data as { eventIds: string[] }).eventIds.length);
      expect(sizes.sort((a, b) => a - b)).toEqual([1, FAN_OUT_BATCH]);
      const erasing = await producer.queues.forJob('participant-erasure.run').getWaiting();
      expect(erasing.map((j) => [j.id, j.data]).sort()).toEqual([
        ['erasure-pt_a-1', { participantId: 'pt_a', batch: 1 }],
        ['erasure-pt_b-3', { participantId: 'pt_b', batch: 3 }],
      ]);
      expect(warned).toEqual([]);
      for (const q of producer.queues.all) await q.obliterate({ force: true });
    } finally {
      await queues.close();
    }
  });

  it('a job waiting under a name of an earlier version runs as the job it became, and counts as it', async () => {
    expect(currentJobName('loyalty-actions.apply')).toBe('loyalty-action-batch.apply');
    expect(currentJobName('webhook-messages.deliver')).toBe('webhook-message-batch.deliver');
    expect(currentJobName('loyalty-action.apply')).toBe('loyalty-action.apply');
    expect(currentJobName('constructor')).toBeUndefined();
    for (const old of Object.keys(JOB_ALIASES)) expect(isJobName(old)).toBe(false);

    const prefix = prefixes[2];
    const queues = await connectQueues(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix, () => {});
    const queue = queues.producer.queues.forJob('loyalty-action-batch.apply');
    // As the previous version queued it, before the upgrade.
    await queue.add('loyalty-actions.apply', { actionIds: ['act_old_1', 'act_old_2'] });
    expect([...(await actionsInBatchJobs(queues.producer.queues))].sort()).toEqual([
      'act_old_1',
      'act_old_2',
    ]);

    const ran: string[][] = [];
    const processors = {
      'loyalty-action.apply': async () => {},
      'loyalty-action-batch.apply': async (payload: { actionIds: string[] }) => {
        ran.push(payload.actionIds);
      },
      'participant-erasure.run': async () => {},
      'participant-import.run': async () => {},
    };
    const worker = new Worker(queue.name, dispatchByName<'worker'>(processors), {
      connection: queues.consumer.redis,
      prefix,
    });
    try {
      await new Promise<void>((resolve, reject) => {
        worker.on('completed', () => resolve());
        worker.on('failed', (_job, err) => reject(err));
      });
      expect(ran).toEqual([['act_old_1', 'act_old_2']]);
    } finally {
      await worker.close();
      await queues.close();
    }
  });

  it('splits the hot queue in QUEUE_SHARDS queues: jobs go to each in turn, the relay sees all, consumers take all', async () => {
    expect(shardNames('loyalty-action-batches', 1, 'stampcard')).toEqual(['loyalty-action-batches']);
    expect(shardNames('loyalty-action-batches', 99, 'stampcard')).toHaveLength(MAX_QUEUE_SHARDS);
    // Jobs with ids are found again by them: their queues are never sharded.
    expect(shardNames('webhook-deliveries', 3, 'stampcard')).toEqual(['webhook-deliveries']);
    // The first keeps the queue's name; with N shards, each lies in an Nth of the slots of its own, whatever
    // the prefix, so a cluster's N masters get one each; the same names on every call.
    for (const p of ['stampcard', 'acme', 'x', prefixes[3]!]) {
      for (const n of [2, 3, 4, 6, MAX_QUEUE_SHARDS]) {
        const names = shardNames('loyalty-action-batches', n, p);
        expect(names[0]).toBe('loyalty-action-batches');
        expect(names[1]).toMatch(/^loyalty-action-batches-1(-\d+)?$/);
        expect(new Set(names).size).toBe(n);
        const nths = names.map((name) => Math.floor((keySlot(`{${p}:${name}}`) * n) / 16384));
        expect(new Set(nths).size).toBe(n);
        expect(shardNames('loyalty-action-batches', n, p)).toEqual(names);
      }
    }

    const prefix = prefixes[3];
    const queues = await connectQueues(
      process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      prefix,
      () => {},
      3,
    );
    const ran: string[] = [];
    let consumers: Consumers | undefined;
    try {
      const shards = queues.producer.queues.shardsOf('loyalty-action-batch.apply');
      expect(shards.map((q) => q.name)).toEqual(shardNames('loyalty-action-batches', 3, prefix));
      for (let i = 0; i < 6; i++) await enqueueActions(queues.producer.queues, [`act_${i}`]);
      // Each call to the next shard: two jobs in each.
      expect(await Promise.all(shards.map((q) => q.getWaitingCount()))).toEqual([2, 2, 2]);
      expect([...(await actionsInBatchJobs(queues.producer.queues))].sort()).toEqual(
        Array.from({ length: 6 }, (_, i) => `act_${i}`),
      );
      expect(queues.producer.queues.all.map((q) => q.name)).toEqual(
        expect.arrayContaining(shardNames('loyalty-action-batches', 3, prefix)),
      );

      consumers = startConsumers<'worker'>({
        consumer: 'worker',
        processors: {
          'loyalty-action.apply': async () => {},
          'loyalty-action-batch.apply': async (payload) => {
            ran.push(...payload.actionIds);
          },
          'participant-erasure.run': async () => {},
          'participant-import.run': async () => {},
        },
        connection: queues.consumer.redis,
        prefix,
        shards: 3,
        concurrency: 4,
        lockMs: 5000,
        onFailed: () => {},
        onError: () => {},
      });
      const deadline = Date.now() + 10_000;
      while (ran.length < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(ran.sort()).toEqual(Array.from({ length: 6 }, (_, i) => `act_${i}`));
    } finally {
      await consumers?.close(5000);
      await queues.close();
    }
  });
});
