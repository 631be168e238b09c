import { afterEach, describe, expect, it } from 'vitest';
import { type FreezableProxy, freezableProxy } from '../../../test/support/freezable-proxy';
import { REDIS_URL } from '../../../test/support/redis-keys';
import { usePrefix } from '../../../test/support/use';
import {
  createQueues,
  createRedis,
  enqueue,
  PRODUCER_REDIS,
  type Queues,
  queueCounts,
  type RedisClient,
  redisReady,
} from '../src/index';

const prefix = usePrefix('stampcard_queues');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let proxy: FreezableProxy | undefined;
let redis: RedisClient | undefined;
let queues: Queues | undefined;
afterEach(async () => {
  proxy?.thaw();
  await queues?.close().catch(() => {});
  redis?.disconnect();
  await proxy?.close();
  proxy = redis = queues = undefined;
});

describe('the queues of the producer side', () => {
  it('made while Redis is silent, they fail fast, then work once it answers: none is broken for good', async () => {
    const target = new URL(REDIS_URL);
    proxy = await freezableProxy(Number(target.port || 6379), target.hostname);
    target.host = `127.0.0.1:${proxy.port}`;
    redis = createRedis(target.toString(), PRODUCER_REDIS);
    redis.on('error', () => {});
    await redisReady(redis);

    // Redis stops answering on the open connection as the queues are made, for longer than a command waits.
    proxy.freeze();
    queues = createQueues(redis, prefix);
    const silent = await queueCounts(queues).then(
      () => 'answered',
      (err: { code?: string }) => err.code,
    );
    expect(silent).toBe('UNAVAILABLE');
    await sleep(PRODUCER_REDIS.commandTimeout! + 500);

    // Redis answers again: every queue counts and takes jobs.
    proxy.thaw();
    const counts = await queueCounts(queues);
    expect(counts.length).toBe(queues.all.length);
    for (const c of counts) expect(c.waiting).toBe(0);
    await enqueue(queues, 'webhook-events.fan-out', [{ payload: { eventIds: ['evt_1'] }, jobId: 'one' }]);
    const after = await queueCounts(queues);
    expect(after.reduce((n, c) => n + c.waiting, 0)).toBe(1);
  });
});
