import { shardNames } from '@stampcard/jobs';
import type { Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { failoverUnderLoad } from '../support/failover-load';
import { startReceiver } from '../support/receiver';
import { startRedisCluster } from '../support/redis-cluster';
import { useStackOn } from '../support/use';
import { goalWorldOverHttp } from '../support/webhooks';

/**
 * Every role on a Redis Cluster of the test's own (three masters, a replica each, `REDIS_CLUSTER_NODES`): the
 * queues, the hot one in three shards (`QUEUE_SHARDS`), the limiter, the endpoint gate, the lookup cache's and
 * `?wait=true`'s channels.
 */
const SHARDS = 3;
const { stack, store: cluster } = useStackOn(
  () => startRedisCluster(),
  (c) => ({ redisClusterNodes: c.nodes, queueShards: SHARDS }),
);

/** The master that serves `key`'s slot, as `host:port`. */
async function ownerOf(redis: Cluster, key: string): Promise<string> {
  const slot = Number(await redis.cluster('KEYSLOT', key));
  const slots = await redis.cluster('SLOTS');
  const [host, port] = slots.find(([from, to]) => slot >= from && slot <= to)![2]!;
  return `${host}:${port}`;
}

describe('on a Redis Cluster', () => {
  it('takes actions, applies them and delivers their webhooks, with limits, and spreads queues over the masters', async () => {
    const rx = await startReceiver();
    try {
      const { api, path, ...w } = await goalWorldOverHttp(stack, rx.url);
      const first = await api.post(`${path}?wait=true`, {
        participantEmail: 'first@example.com',
        rewardId: w.reward.id,
      });
      expect(first.status).toBe(200);
      // `?wait=true` was woken through the cluster's pub/sub, and the limiter's script ran on it.
      expect(first.body.action.status).toBe('APPLIED');
      const hourLeft = Number(first.headers.get('stampcard-ratelimit-hour-remaining'));
      expect(hourLeft).toBeGreaterThan(0);
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          api.post(path, { participantEmail: `p${i}@example.com`, rewardId: w.reward.id }),
        ),
      );
      expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
      // The limiter counted every one of them in Redis.
      const after = await api.get(`/v1/campaign/${w.campaign.id}`);
      expect(Number(after.headers.get('stampcard-ratelimit-hour-remaining'))).toBe(hourLeft - 21);
      await rx.waitFor(21, 20_000);
      expect(new Set(rx.received.map((r) => r.headers['webhook-id'])).size).toBe(21);

      // Each queue's keys lie in a slot of their own: they are spread over more than one master.
      const redis = stack.redis as Cluster;
      const owners = new Set<string>();
      for (const node of redis.nodes('master')) {
        const keys = await node.keys(`{${stack.prefix}:*`);
        if (keys.length > 0) owners.add(`${node.options.host}:${node.options.port}`);
      }
      expect(owners.size).toBeGreaterThan(1);

      // The hot queue's jobs went to its shards in turn, each a slot of its own, on more than one master.
      const shards = stack.deps.queues.shardsOf('loyalty-action-batch.apply');
      expect(shards.map((q) => q.name)).toEqual(shardNames('loyalty-action-batches', SHARDS, stack.prefix));
      const ran = await Promise.all(shards.map((q) => q.getJobCountByTypes('completed')));
      expect(ran.filter((n) => n > 0).length).toBeGreaterThan(1);
      const masters = await Promise.all(shards.map((q) => ownerOf(redis, `{${stack.prefix}:${q.name}}`)));
      // Named so that their slots lie in three thirds of the slots: one on each of the three masters.
      expect(new Set(masters).size).toBe(SHARDS);
    } finally {
      await rx.close();
    }
  });

  it('loses no accepted action when a master dies under load: its replica takes over and every action is applied once', async () => {
    const run = await failoverUnderLoad(stack, async () => {
      // The master that holds the hot queue's first shard dies.
      const owner = await ownerOf(stack.redis as Cluster, `{${stack.prefix}:loyalty-action-batches}`);
      const port = Number(owner.split(':')[1]);
      cluster.kill(port);
      await cluster.failedOver(port);
    });
    // Accepting never waits on the failover: PostgreSQL takes the action, and an enqueue that fails (about a
    // second of retries) leaves it to the relay. Only 200s: a 503 here would be an answer the failover caused.
    expect(Object.keys(run.answers)).toEqual(['200']);
    expect(run.answers['200']!.maxMs).toBeLessThan(3000);
    console.log(`redis cluster failover: ${JSON.stringify(run)}`);
  }, 120_000);
});
