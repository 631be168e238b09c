import { describe, expect, it } from 'vitest';
import { failoverUnderLoad } from '../support/failover-load';
import { startRedisSentinel } from '../support/redis-sentinel';
import { useStackOn } from '../support/use';
import { goalWorld } from '../support/webhooks';

/** Every role on Redis behind Sentinel of the test's own (`REDIS_SENTINELS`, `REDIS_SENTINEL_NAME`). */
const { stack, store: sentinel } = useStackOn(
  () => startRedisSentinel(),
  (s) => ({
    redisSentinel: { sentinels: s.sentinels, name: s.name },
  }),
);

describe('behind Redis Sentinel', () => {
  it('works on the master the sentinels name', async () => {
    const w = await goalWorld(stack);
    const { action } = await w.act();
    expect(action.unlockedRewards).toHaveLength(1);
    expect(stack.redis.options).toMatchObject({ name: sentinel.name });
  });

  it('loses no accepted action when the master dies under load: the sentinels promote the replica', async () => {
    const run = await failoverUnderLoad(stack, async () => {
      const port = await sentinel.killMaster();
      await sentinel.failedOver(port);
    });
    expect(run.answers['200']!.count).toBe(run.accepted);
    console.log(`redis sentinel failover: ${JSON.stringify(run)}`);
  }, 120_000);
});
