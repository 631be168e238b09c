import { loyaltyActions } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';

const stack = useTestStack({ worker: false });

describe('group commit on the accept path', () => {
  it('a burst of triggers shares inserts, and each request still gets its own answer', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const api = client(inProcess(stack.app), w.key);
    const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;
    const emails = Array.from({ length: 12 }, () => uniqueEmail('burst'));
    // The participants exist first, so the burst takes the shared statement.
    for (const email of emails)
      expect((await api.post(path, { participantEmail: email, rewardId: w.reward.id })).status).toBe(200);
    const byId = await api.post(`/v1/campaign/${w.campaign.id}/participant/${'nobody'}/loyalty-action`, {
      rewardId: w.reward.id,
    });
    expect(byId.status).toBe(404);
    const duplicate = { participantEmail: emails[0], rewardId: w.reward.id, metadata: { twin: true } };
    const replies = await Promise.all([
      ...emails.map((email, i) =>
        api.post(path, { participantEmail: email, rewardId: w.reward.id, metadata: { i } }),
      ),
      api.post(path, { participantEmail: emails[1], rewardId: 'crew_missing' }),
      api.post(path, { participantEmail: uniqueEmail('new'), rewardId: w.reward.id }),
      api.post(path, duplicate),
      api.post(path, duplicate),
    ]);
    const statuses = replies.map((r) => r.status);
    expect(statuses.slice(0, 12)).toEqual(Array(12).fill(200));
    expect(statuses[12]).toBe(404);
    expect(replies[13]!.body.message).toBe('Participant added and loyalty action accepted');
    expect(statuses.slice(14).sort()).toEqual([200, 409]);
    const ids = replies.filter((r) => r.status === 200).map((r) => r.body.action.id);
    expect(new Set(ids).size).toBe(ids.length);
    const rows = await stack.ctx.db
      .select()
      .from(loyaltyActions)
      .where(eq(loyaltyActions.campaignId, w.campaign.id));
    // 12 seeding actions, 12 from the burst, the new participant's and one of the twins.
    expect(rows).toHaveLength(26);
    for (const [i, r] of replies.slice(0, 12).entries()) {
      const row = rows.find((x) => x.id === r.body.action.id)!;
      expect(row).toMatchObject({
        status: 'QUEUED',
        metadata: { i },
        participantId: r.body.action.participantId,
      });
    }
  });
});
