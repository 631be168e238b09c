import { loyaltyActions, participantRewards, participants } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../support/client';
import { makeWorld, uniqueEmail } from '../support/factories';
import { useTestStack } from '../support/use';

const stack = useTestStack({ http: true });

describe('concurrency over HTTP', () => {
  it('20 concurrent actions on a limit-1 reward give exactly one reward and 20 counts', async () => {
    const w = await makeWorld(stack.ctx, { reward: { limit: 1, conversionsRequired: 1 } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const email = uniqueEmail();
    // All 20 race: on creating the participant, counting, and unlocking.
    const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post(path, { participantEmail: email, rewardId: w.reward.id, metadata: { n: i } }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    const p = await eventually(
      () => api.get(`/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}`),
      (r) => r.body.loyaltyActionCount === 20,
    );
    expect(p.body.loyaltyActionCountsPerReward).toEqual({ [w.reward.id]: 20 });
    expect(p.body.rewards).toHaveLength(1);
    const rows = await stack.ctx.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.rewardId, w.reward.id));
    expect(rows).toHaveLength(1);
    const c = await api.get(`/v1/campaign/${w.campaign.id}`);
    expect(c.body).toMatchObject({ loyaltyActionCount: 20, participantCount: 1, winnerCount: 1 });
  });

  it('25 concurrent first actions for one new email create one participant and count 25', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true, conversionsRequired: 5 } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const email = uniqueEmail('race');
    const replies = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
          participantEmail: email,
          rewardId: w.reward.id,
          metadata: { attempt: i },
        }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(25).fill(200));
    expect(new Set(replies.map((r) => r.body.action.participantId)).size).toBe(1);
    expect(replies.filter((r) => r.body.message.startsWith('Participant added'))).toHaveLength(1);
    const rows = await stack.ctx.db
      .select()
      .from(participants)
      .where(eq(participants.campaignId, w.campaign.id));
    expect(rows).toHaveLength(1);
    const p = await eventually(
      () => api.get(`/v1/campaign/${w.campaign.id}/participant/${rows[0]!.id}`),
      (r) => r.body.loyaltyActionCount === 25,
    );
    expect(p.body.rewards).toHaveLength(5);
    const c = await api.get(`/v1/campaign/${w.campaign.id}`);
    expect(c.body).toMatchObject({ participantCount: 1, loyaltyActionCount: 25, winnerCount: 1 });
  });

  it('identical concurrent requests: exactly one is accepted, the other 9 are 409 while it is queued', async () => {
    // The worker is paused so the first stays QUEUED for the whole race: the outcome is exact, not "at least one".
    await stack.stopWorker();
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const email = uniqueEmail('same');
    const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;
    const body = { participantEmail: email, rewardId: w.reward.id };
    const replies = await Promise.all(Array.from({ length: 10 }, () => api.post(path, body)));
    const accepted = replies.filter((r) => r.status === 200);
    const conflicts = replies.filter((r) => r.status === 409);
    expect(accepted).toHaveLength(1);
    expect(conflicts).toHaveLength(9);
    for (const r of conflicts) {
      expect(r.body).toMatchObject({
        code: 'DUPLICATE_REQUEST',
        request: { method: 'POST', path, startedAt: accepted[0]!.body.action.createdAt },
      });
    }
    const rows = await stack.ctx.db
      .select()
      .from(loyaltyActions)
      .where(eq(loyaltyActions.campaignId, w.campaign.id));
    expect(rows).toHaveLength(1);

    // Once it is applied, the same request is a new action again.
    stack.startWorker();
    const p = await eventually(
      () => api.get(`/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}`),
      (r) => r.body.loyaltyActionCount === 1,
    );
    expect(p.body.loyaltyActionCount).toBe(1);
    expect((await api.post(path, body)).status).toBe(200);
  });
});
