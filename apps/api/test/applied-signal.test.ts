import { randomBytes } from 'node:crypto';
import { createLogger } from '@stampcard/config';
import { appliedChannel } from '@stampcard/jobs';
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { appliedSignal } from '../src/index';

const logger = createLogger({ level: 'silent', name: 'applied-signal-test' });

describe('the applied signal', () => {
  it('wakes a waiter as soon as the worker announces its action, well before its fallback', async () => {
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const prefix = `stampcard_sig_${randomBytes(4).toString('hex')}`;
    const applied = await appliedSignal(redis, prefix, logger);
    onTestFinished(() => {
      applied.close();
      redis.disconnect();
    });
    let woke = false;
    // The fallback is a minute away: only the announcement can end this within the test's time.
    const waiting = applied.signal('act_two', 60_000).then(() => (woke = true));
    await redis.publish(appliedChannel(prefix), 'act_one,act_two,act_three');
    await waiting;
    expect(woke).toBe(true);
    // A waiter nobody announces resolves at its fallback time.
    await applied.signal('act_never', 20);
  }, 5000);
});
