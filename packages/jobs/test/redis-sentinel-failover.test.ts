import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, until } from '../../../test/support/local-servers';
import { startRedisSentinel, type TestRedisSentinel } from '../../../test/support/redis-sentinel';
import { createRedis, type RedisClient, redisReady } from '../src/index';

/**
 * patches/ioredis+6.0.0.patch (packages/jobs/README.md): the failover detector (`failoverDetector: true`, set by
 * `createRedis` behind Sentinel) hears `+switch-master` and closes the connection to the old master, so that the
 * client asks the sentinels again. Unpatched, it closed the connector itself: a client that was reconnecting (the
 * old master dead, the sentinels asked again) when the message came gave up for good, its status `end`, and every
 * command after it failed with "Connection is closed" (a worker stopped applying after a failover under load).
 */
let sentinel: TestRedisSentinel;
const opened: Redis[] = [];
beforeAll(async () => {
  sentinel = await startRedisSentinel('stampcard-detector');
}, 60_000);
afterAll(async () => {
  for (const r of opened) r.disconnect();
  await sentinel?.stop();
});

/** Once every sentinel is listened to: `switched`, which resolves on the first `+switch-master` any publishes. */
async function switchHeard(): Promise<{ switched: Promise<void> }> {
  let heard!: () => void;
  const switched = new Promise<void>((r) => {
    heard = r;
  });
  for (const address of sentinel.addresses) {
    const sub = new Redis({ ...address, lazyConnect: true, maxRetriesPerRequest: 1 });
    opened.push(sub);
    await sub.connect();
    await sub.subscribe('+switch-master');
    sub.on('message', () => heard());
  }
  return { switched };
}

describe('the failover detector patch (patches/ioredis+6.0.0.patch)', () => {
  it('lets a client that is asking the sentinels again when the master switches go on to the new master', async () => {
    const client: RedisClient = createRedis({
      url: 'redis://',
      sentinels: sentinel.addresses,
      sentinelName: 'stampcard-detector',
    });
    opened.push(client as Redis);
    // Its reconnections fail while the master is down; the status says how it ends.
    client.on('error', () => {});
    await redisReady(client);

    const { switched } = await switchHeard();
    // The window the detector closed: the sentinels asked again (the connector's `resolve`) while the switch is
    // published. Each such look-up after the kill is held until the switch is heard and the detector has had its
    // turn, so that the detector's message always lands inside it.
    const connector = (client as unknown as { connector: { resolve(e: unknown): Promise<unknown> } })
      .connector;
    const resolve = connector.resolve.bind(connector);
    let killed = false;
    let held = 0;
    connector.resolve = async (endpoint) => {
      const answer = await resolve(endpoint);
      if (killed) {
        held += 1;
        await switched;
        await sleep(200);
      }
      return answer;
    };

    const oldPort = await sentinel.master();
    killed = true;
    await sentinel.killMaster();
    const newPort = await sentinel.failedOver(oldPort);

    await until('the client serving again', async () => client.status === 'ready', 20_000).catch(() => {
      throw new Error(`the client did not come back: its status is ${client.status}`);
    });
    expect(held).toBeGreaterThan(0);
    await client.set('detector:after', '2');
    expect(await client.get('detector:after')).toBe('2');
    // It is the new master it talks to.
    const role = (await client.call('role')) as unknown[];
    expect(role[0]).toBe('master');
    expect((client as Redis).stream.remotePort).toBe(newPort);
  }, 60_000);
});
