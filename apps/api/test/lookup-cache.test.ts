import { createLogger } from '@stampcard/config';
import { memoryCache } from '@stampcard/core';
import { duplicateRedis } from '@stampcard/jobs';
import { sql } from 'drizzle-orm';
import { describe, expect, it, onTestFinished } from 'vitest';
import { client, expectErrorShape, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';
import { createApp, sharedLookupCache } from '../src/index';

const stack = useTestStack({ worker: false });

/** A second API process: its own cache (trusting entries for a minute), the same Redis channel. */
async function secondApi() {
  const cache = await sharedLookupCache({
    redis: duplicateRedis(stack.redis),
    prefix: stack.prefix,
    logger: createLogger({ level: 'silent', name: 'second-api' }),
    ttlMs: 60_000,
  });
  onTestFinished(() => cache.close());
  return createApp({ ...stack.deps, cache });
}

describe('the lookup cache', () => {
  it('a key revoked through one API process is refused by another at once', async () => {
    const w = await makeWorld(stack.ctx);
    const other = client(inProcess(await secondApi()), w.key);
    expect((await other.get(`/v1/campaign/${w.campaign.id}`)).status).toBe(200);
    const revoked = await client(inProcess(stack.app), OPERATOR_TOKEN).delete(
      `/admin/v1/api-keys/${w.keyId}`,
    );
    expect(revoked.status).toBe(200);
    await new Promise((r) => setTimeout(r, 50));
    expectErrorShape(await other.get(`/v1/campaign/${w.campaign.id}`), 403, 'NOT_AUTHORIZED');
  });

  it('a campaign changed through one API process is seen by another at once', async () => {
    const w = await makeWorld(stack.ctx);
    const other = client(inProcess(await secondApi()), w.key);
    const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;
    const body = () => ({ participantEmail: uniqueEmail(), rewardId: w.reward.id });
    expect((await other.post(path, body())).status).toBe(200);
    const ended = await client(inProcess(stack.app), OPERATOR_TOKEN).patch(
      `/admin/v1/campaigns/${w.campaign.id}`,
      {
        status: 'COMPLETE',
      },
    );
    expect(ended.status).toBe(200);
    await new Promise((r) => setTimeout(r, 50));
    expectErrorShape(await other.post(path, body()), 400, 'INVALID_STATE');
  });

  it('shows counters fresh even when the campaign is cached', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const before = await api.get(`/v1/campaign/${w.campaign.id}`);
    await stack.ctx.db.execute(
      sql`update campaigns set loyalty_action_count = 41 where id = ${w.campaign.id}`,
    );
    const after = await api.get(`/v1/campaign/${w.campaign.id}`);
    expect(before.body.loyaltyActionCount).toBe(0);
    expect(after.body.loyaltyActionCount).toBe(41);
  });
});

describe('the local half', () => {
  it('keeps an entry for its TTL, drops it on invalidation, and holds at most maxEntries', () => {
    let now = 1000;
    const cache = memoryCache({ ttlMs: 100, maxEntries: 2, now: () => now });
    cache.set('campaign', 'a', 1);
    cache.set('campaign', 'b', 2);
    expect(cache.get('campaign', 'a')).toBe(1);
    now += 99;
    expect(cache.get('campaign', 'b')).toBe(2);
    now += 1;
    expect(cache.get('campaign', 'b')).toBeUndefined();
    cache.set('campaign', 'c', 3);
    cache.set('campaign', 'd', 4);
    cache.set('campaign', 'e', 5);
    expect(cache.get('campaign', 'c')).toBeUndefined();
    cache.drop('campaign', 'd');
    expect(cache.get('campaign', 'd')).toBeUndefined();
    expect(cache.get('campaign', 'e')).toBe(5);
    cache.set('principal', 'k', 1);
    cache.drop('principal');
    expect(cache.get('principal', 'k')).toBeUndefined();
    const off = memoryCache({ ttlMs: 0 });
    off.set('campaign', 'x', 1);
    expect(off.get('campaign', 'x')).toBeUndefined();
  });
});
