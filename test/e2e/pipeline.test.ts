import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../support/client';
import { makeWorld, uniqueEmail } from '../support/factories';
import { useTestStack } from '../support/use';

const stack = useTestStack({ http: true });

describe('loyalty action over HTTP against the running stack', () => {
  it('accepts at once, the worker applies it, and the reward unlocks at the required count', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 2, isUnlimited: true } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const email = uniqueEmail();
    const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;

    const first = await api.post(path, { participantEmail: email, rewardId: w.reward.id, firstName: 'Ada' });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true, action: { status: 'QUEUED', rewardId: w.reward.id } });
    expect(first.body.action.id).toMatch(/^act_/);

    const applied = await eventually(
      () => api.get(`/v1/campaign/${w.campaign.id}/loyalty-action/${first.body.action.id}`),
      (r) => r.body.status === 'APPLIED',
    );
    expect(applied.body.unlockedRewards).toEqual([]);

    const second = await api.post(`${path}?wait=true`, {
      participantEmail: email,
      rewardId: w.reward.id,
      metadata: { n: 2 },
    });
    expect(second.status).toBe(200);
    expect(second.body.action.status).toBe('APPLIED');
    expect(second.body.action.unlockedRewards).toHaveLength(1);
    expect(second.body.action.unlockedRewards[0]).toMatchObject({
      rewardId: w.reward.id,
      status: 'PENDING',
      approved: true,
      isAvailable: true,
      isFulfilled: false,
    });
    expect(second.body.action.unlockedRewards[0].id).toMatch(/^prew_/);

    const p = await api.get(`/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}`);
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({
      email,
      firstName: 'Ada',
      loyaltyActionCount: 2,
      monthlyLoyaltyActionCount: 2,
      isWinner: true,
      loyaltyActionSource: 'DIRECT',
      loyaltyActionCountsPerReward: { [w.reward.id]: 2 },
      loyaltyActionCountPerReward: { [w.reward.id]: 2 },
      rank: 1,
      monthlyRank: 1,
    });
    expect(p.body.rewards).toHaveLength(1);

    const c = await api.get(`/v1/campaign/${w.campaign.id}`);
    expect(c.body).toMatchObject({
      loyaltyActionCount: 2,
      participantCount: 1,
      winnerCount: 1,
      status: 'IN_PROGRESS',
    });
  });
});
