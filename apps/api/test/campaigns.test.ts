import { updateCampaign } from '@stampcard/core';
import { describe, expect, it } from 'vitest';
import { client, inProcess } from '../../../test/support/client';
import { makeCampaign, makeReward, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';

const stack = useTestStack();

const api = (key: string) => client(inProcess(stack.app), key);

const sorted = (xs: string[]) => [...xs].sort();

const CAMPAIGN_KEYS = [
  'currencyISO',
  'id',
  'loyaltyActionCount',
  'name',
  'participantCount',
  'rewards',
  'status',
  'winnerCount',
];

/** The seed's Reward fields without the six that campaign reads leave out. */
const CAMPAIGN_REWARD_KEYS = sorted([
  'conversionsRequired',
  'cta',
  'description',
  'id',
  'imageUrl',
  'instructions',
  'isUnlimited',
  'limit',
  'submissionExampleUrl',
  'submissionFormButtonText',
  'submissionFormFields',
  'submissionFormMessages',
  'submissionFormUrl',
  'submissionType',
  'subdescription',
]);

const OMITTED_REWARD_KEYS = ['title', 'order', 'limitDuration', 'numberOfWinners', 'couponCode', 'metadata'];

describe('GET /v1/campaigns', () => {
  it('answers { campaigns: [...] } with the Campaign objects of the account', async () => {
    const w = await makeWorld(stack.ctx, { campaign: { name: 'Spring program', currencyISO: 'eur' } });
    const r = await api(w.key).get('/v1/campaigns');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['campaigns']);
    expect(r.body.campaigns).toHaveLength(1);
    const [c] = r.body.campaigns;
    expect(sorted(Object.keys(c))).toEqual(CAMPAIGN_KEYS);
    expect(c).toMatchObject({
      id: w.campaign.id,
      name: 'Spring program',
      loyaltyActionCount: 0,
      participantCount: 0,
      winnerCount: 0,
      status: 'IN_PROGRESS',
      currencyISO: 'EUR',
    });
    expect(typeof c.id).toBe('string');
    expect(c.rewards).toHaveLength(1);
    expect(c.rewards[0].id).toBe(w.reward.id);
    expect(c.rewards[0].id).toMatch(/^crew_/);
  });

  it('leaves out DELETED campaigns but lists DRAFT, IN_PROGRESS and COMPLETE ones', async () => {
    const w = await makeWorld(stack.ctx);
    const draft = await makeCampaign(stack.ctx, w.account.id, { status: 'DRAFT' });
    const complete = await makeCampaign(stack.ctx, w.account.id, { status: 'COMPLETE' });
    const doomed = await makeCampaign(stack.ctx, w.account.id);
    const deletedAtCreation = await makeCampaign(stack.ctx, w.account.id, { status: 'DELETED' });

    const before = await api(w.key).get('/v1/campaigns');
    expect(before.body.campaigns.map((c: { id: string }) => c.id)).toContain(doomed.id);

    await updateCampaign(stack.ctx, doomed.id, { status: 'DELETED' });

    const r = await api(w.key).get('/v1/campaigns');
    expect(r.status).toBe(200);
    const byId = new Map<string, { status: string }>(
      r.body.campaigns.map((c: { id: string; status: string }) => [c.id, c]),
    );
    expect(sorted([...byId.keys()])).toEqual(sorted([w.campaign.id, draft.id, complete.id]));
    expect(byId.has(doomed.id)).toBe(false);
    expect(byId.has(deletedAtCreation.id)).toBe(false);
    expect(byId.get(draft.id)?.status).toBe('DRAFT');
    expect(byId.get(complete.id)?.status).toBe('COMPLETE');
    expect(byId.get(w.campaign.id)?.status).toBe('IN_PROGRESS');
    expect(r.body.campaigns.every((c: { status: string }) => c.status !== 'DELETED')).toBe(true);
  });

  it("never lists another account's campaigns", async () => {
    const a = await makeWorld(stack.ctx);
    const b = await makeWorld(stack.ctx);
    const ra = await api(a.key).get('/v1/campaigns');
    const rb = await api(b.key).get('/v1/campaigns');
    expect(ra.body.campaigns.map((c: { id: string }) => c.id)).toEqual([a.campaign.id]);
    expect(rb.body.campaigns.map((c: { id: string }) => c.id)).toEqual([b.campaign.id]);
  });

  it('answers an empty list for an account whose campaigns are all deleted', async () => {
    const w = await makeWorld(stack.ctx);
    await updateCampaign(stack.ctx, w.campaign.id, { status: 'DELETED' });
    const r = await api(w.key).get('/v1/campaigns');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ campaigns: [] });
  });
});

describe('GET /v1/campaign/{id}', () => {
  it('answers the same Campaign object the list shows', async () => {
    const w = await makeWorld(stack.ctx);
    await makeReward(stack.ctx, w.campaign.id, { isUnlimited: true, conversionsRequired: 3 });
    const one = await api(w.key).get(`/v1/campaign/${w.campaign.id}`);
    expect(one.status).toBe(200);
    expect(sorted(Object.keys(one.body))).toEqual(CAMPAIGN_KEYS);
    const list = await api(w.key).get('/v1/campaigns');
    expect(list.body.campaigns).toEqual([one.body]);
  });

  it('answers DRAFT and COMPLETE campaigns with their status', async () => {
    const w = await makeWorld(stack.ctx, { campaign: { status: 'DRAFT' } });
    const draft = await api(w.key).get(`/v1/campaign/${w.campaign.id}`);
    expect(draft.status).toBe(200);
    expect(draft.body.status).toBe('DRAFT');
    await updateCampaign(stack.ctx, w.campaign.id, { status: 'COMPLETE' });
    const complete = await api(w.key).get(`/v1/campaign/${w.campaign.id}`);
    expect(complete.status).toBe(200);
    expect(complete.body.status).toBe('COMPLETE');
  });

  it('counts loyalty actions, participants and winners', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 2 } });
    const path = `/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`;
    const ada = uniqueEmail('ada');
    const bob = uniqueEmail('bob');
    for (const email of [ada, ada, bob]) {
      const r = await api(w.key).post(path, { participantEmail: email, rewardId: w.reward.id });
      expect(r.status).toBe(200);
      expect(r.body.action.status).toBe('APPLIED');
    }
    const c = await api(w.key).get(`/v1/campaign/${w.campaign.id}`);
    expect(c.body).toMatchObject({ loyaltyActionCount: 3, participantCount: 2, winnerCount: 1 });
    const list = await api(w.key).get('/v1/campaigns');
    expect(list.body.campaigns[0]).toMatchObject({
      loyaltyActionCount: 3,
      participantCount: 2,
      winnerCount: 1,
    });
  });
});

describe('rewards in campaign reads', () => {
  it('show the seed fields without title, order, limitDuration, numberOfWinners, couponCode and metadata', async () => {
    const w = await makeWorld(stack.ctx, {
      reward: {
        title: 'Internal title',
        description: 'A free month',
        subdescription: 'for your review',
        instructions: '<p>Write a review</p>',
        cta: 'Review us',
        submissionType: 'FORM',
        submissionFormUrl: 'https://example.com/form',
        submissionFormFields: [
          {
            key: 'url',
            label: 'Review URL',
            placeholder: 'https://',
            type: 'text',
            isRequired: true,
            isVisible: true,
          },
        ],
        submissionFormButtonText: 'Send',
        submissionFormMessages: { required: 'Required', success: 'Thanks' },
        limit: 3,
        conversionsRequired: 2,
        limitDuration: 'PER_MONTH',
        numberOfWinners: 10,
        couponCode: 'SECRET-COUPON',
        imageUrl: 'https://example.com/r.png',
        order: 1,
        metadata: { tier: 'gold' },
      },
    });
    for (const r of [
      await api(w.key).get(`/v1/campaign/${w.campaign.id}`),
      await api(w.key).get('/v1/campaigns'),
    ]) {
      expect(r.status).toBe(200);
      const campaign = 'campaigns' in r.body ? r.body.campaigns[0] : r.body;
      const [reward] = campaign.rewards;
      expect(sorted(Object.keys(reward))).toEqual(CAMPAIGN_REWARD_KEYS);
      for (const key of OMITTED_REWARD_KEYS) expect(reward).not.toHaveProperty(key);
      expect(JSON.stringify(reward)).not.toContain('SECRET-COUPON');
      expect(JSON.stringify(reward)).not.toContain('Internal title');
      expect(reward).toEqual({
        id: w.reward.id,
        description: 'A free month',
        subdescription: 'for your review',
        instructions: '<p>Write a review</p>',
        cta: 'Review us',
        submissionType: 'FORM',
        submissionExampleUrl: null,
        submissionFormUrl: 'https://example.com/form',
        submissionFormFields: [
          {
            key: 'url',
            label: 'Review URL',
            placeholder: 'https://',
            type: 'text',
            isRequired: true,
            isVisible: true,
          },
        ],
        submissionFormButtonText: 'Send',
        submissionFormMessages: { required: 'Required', success: 'Thanks' },
        isUnlimited: false,
        limit: 3,
        conversionsRequired: 2,
        imageUrl: 'https://example.com/r.png',
      });
    }
  });

  it('report limit -1 when the reward is unlimited, and the limit otherwise', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true, limit: 5 } });
    const limited = await makeReward(stack.ctx, w.campaign.id, { isUnlimited: false, limit: 5 });
    const byDefault = await makeReward(stack.ctx, w.campaign.id);
    const r = await api(w.key).get(`/v1/campaign/${w.campaign.id}`);
    const byId = new Map<string, { isUnlimited: boolean; limit: number; conversionsRequired: number }>(
      r.body.rewards.map((x: { id: string }) => [x.id, x]),
    );
    expect(byId.get(w.reward.id)).toMatchObject({ isUnlimited: true, limit: -1 });
    expect(byId.get(limited.id)).toMatchObject({ isUnlimited: false, limit: 5 });
    // Defaults: earned once, one action required.
    expect(byId.get(byDefault.id)).toMatchObject({ isUnlimited: false, limit: 1, conversionsRequired: 1 });

    const list = await api(w.key).get('/v1/campaigns');
    const listed = list.body.campaigns[0].rewards.find((x: { id: string }) => x.id === w.reward.id);
    expect(listed).toMatchObject({ isUnlimited: true, limit: -1 });
  });

  it('list every reward of the campaign and only those, ordered by display order', async () => {
    const w = await makeWorld(stack.ctx);
    const second = await makeReward(stack.ctx, w.campaign.id, { order: 2 });
    const first = await makeReward(stack.ctx, w.campaign.id, { order: 1 });
    const other = await makeWorld(stack.ctx);
    const r = await api(w.key).get(`/v1/campaign/${w.campaign.id}`);
    const ids = r.body.rewards.map((x: { id: string }) => x.id);
    // Ordered rewards first; the reward without an order (null until set) after them.
    expect(ids).toEqual([first.id, second.id, w.reward.id]);
    expect(ids).not.toContain(other.reward.id);
  });

  it('answer an empty rewards array for a campaign without rewards', async () => {
    const w = await makeWorld(stack.ctx);
    const bare = await makeCampaign(stack.ctx, w.account.id);
    const r = await api(w.key).get(`/v1/campaign/${bare.id}`);
    expect(r.status).toBe(200);
    expect(r.body.rewards).toEqual([]);
  });
});
