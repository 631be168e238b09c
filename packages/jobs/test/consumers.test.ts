import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { usePrefix } from '../../../test/support/use';
import { closeConsumers } from '../src/index';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('closing consumers', () => {
  const prefix = usePrefix('stampcard_test_consumers');
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  afterAll(() => redis.disconnect());

  it('waits for running jobs, but no longer than its bound: a consumer that does not close in time is named and left', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const busy = new Worker(
      'busy',
      async () => {
        started();
        await held;
      },
      { connection: redis, prefix },
    );
    const idle = new Worker('idle', async () => {}, { connection: redis, prefix });
    const queue = new Queue('busy', { connection: redis, prefix });
    try {
      await queue.add('hold', {});
      await running;
      // Answered while the job still runs: the bound, not the job, ended the wait.
      expect(await closeConsumers([busy, idle], 300)).toEqual(['busy']);
      expect(idle.closing).toBeTruthy();
      // The job ends; its consumer closes as BullMQ does, and a second close is at once.
      release();
      expect(await closeConsumers([busy], 5000)).toEqual([]);
    } finally {
      release();
      await queue.close();
    }
  });
});
