import {
  type EmittedEventType,
  EVENT_SCHEMAS,
  EVENT_TYPES,
  isEmittedEventType,
  type NewEvent,
  recordEvents,
} from '@stampcard/core';
import { events } from '@stampcard/db';
import { asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { startReceiver } from '../../../test/support/receiver';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';
import { registerEndpoint } from '../../../test/support/webhooks';

/**
 * Every event the service writes to the outbox matches the zod schema of its type, checked on events made
 * by the real flows (API, worker, dispatcher, operator), not on hand-built samples.
 */
const stack = useTestStack({ dispatcher: true, sweep: true });

describe('event schemas', () => {
  it('every event the flows write parses with the schema of its type, and every schema is exercised', async () => {
    const w = await makeWorld(stack.ctx, {
      reward: {
        conversionsRequired: 1,
        isUnlimited: true,
        metadata: { sku: 'COFFEE', points: 5 },
        submissionType: 'FORM',
        submissionFormFields: [{ key: 'address', label: 'Address', isRequired: true }],
        submissionFormMessages: { success: 'Thanks' },
        couponCode: 'FREE-1',
      },
    });
    // A fulfilment integration (its 2xx fulfils each goal) and a receiver that is gone (410: disabled).
    const fulfilment = await startReceiver();
    const gone = await startReceiver(() => ({ status: 410 }));
    await registerEndpoint(stack, w.campaign.id, { url: fulfilment.url, kind: 'FULFILMENT' });
    await registerEndpoint(stack, w.campaign.id, { url: gone.url });
    const api = client(inProcess(stack.app), w.key);
    const path = `/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`;
    const email = uniqueEmail('events');
    for (let i = 0; i < 2; i++) {
      const r = await api.post(path, {
        participantEmail: email,
        rewardId: w.reward.id,
        firstName: 'Ada',
        metadata: { n: i },
      });
      expect(r.body.action.status).toBe('APPLIED');
    }
    const updated = await api.patch(`/v1/campaign/${w.campaign.id}/participant/${email}`, {
      lastName: 'Lovelace',
      metadataIncrement: { n: 1 },
    });
    expect(updated.status).toBe(200);
    const form = await api.post(`/v1/campaign/${w.campaign.id}/participant/${email}/form-submission`, {
      rewardId: w.reward.id,
      formData: { address: '1 Main St' },
    });
    expect(form.status).toBe(200);
    const reviewed = await api.post(`/v1/campaign/${w.campaign.id}/form-submission/${form.body.id}/reject`);
    expect(reviewed.status).toBe(200);
    const typesOf = async () =>
      (
        await stack.ctx.db
          .select({ type: events.type })
          .from(events)
          .where(eq(events.campaignId, w.campaign.id))
      )
        .map((r) => r.type)
        .sort();
    await eventually(typesOf, (t) => t.filter((x) => x === 'PARTICIPANT_REWARD_FULFILLED').length === 2);
    await Promise.all([fulfilment.close(), gone.close()]);
    const operator = client(inProcess(stack.app), OPERATOR_TOKEN);
    // Manual review: LOW keeps the level and changes the reason (to MANUAL_UPDATE), so it is recorded.
    const reviewedByHand = await operator.patch(
      `/admin/v1/campaigns/${w.campaign.id}/participants/${email}`,
      {
        fraudRiskLevel: 'LOW',
      },
    );
    expect(reviewedByHand.status).toBe(200);
    // A reward waiting for approval is removed, then its participant: each deletion is an event of its own.
    const approving = await operator.patch(`/admin/v1/campaigns/${w.campaign.id}`, {
      requireRewardApproval: true,
    });
    expect(approving.status).toBe(200);
    const second = uniqueEmail('events-deleted');
    const waiting = await api.post(path, { participantEmail: second, rewardId: w.reward.id });
    const [unapproved] = waiting.body.action.unlockedRewards;
    expect(unapproved.approved).toBe(false);
    expect((await api.delete(`/v1/campaign/${w.campaign.id}/reward/${unapproved.id}`)).status).toBe(200);
    expect((await api.delete(`/v1/campaign/${w.campaign.id}/participant/${second}`)).status).toBe(200);
    const ended = await operator.patch(`/admin/v1/campaigns/${w.campaign.id}`, { status: 'COMPLETE' });
    expect(ended.status).toBe(200);

    const rows = await eventually(
      () =>
        stack.ctx.db
          .select()
          .from(events)
          .where(eq(events.campaignId, w.campaign.id))
          .orderBy(asc(events.seq)),
      (list) => list.length >= 17,
    );
    const seen = new Set<EmittedEventType>();
    for (const row of rows) {
      expect(isEmittedEventType(row.type), row.type).toBe(true);
      if (!isEmittedEventType(row.type)) continue;
      const parsed = EVENT_SCHEMAS[row.type].safeParse(row.data);
      expect(parsed.success, `${row.type}: ${parsed.error?.message}`).toBe(true);
      seen.add(row.type);
    }
    expect([...seen].sort()).toEqual(Object.keys(EVENT_SCHEMAS).sort());
    expect(rows.map((r) => r.type).sort()).toEqual(
      [
        'NEW_PARTICIPANT_ADDED',
        'LOYALTY_ACTION_APPLIED',
        'PARTICIPANT_REACHED_A_GOAL',
        'LOYALTY_ACTION_APPLIED',
        'PARTICIPANT_UPDATED',
        'PARTICIPANT_FRAUD_STATUS_UPDATED',
        'PARTICIPANT_SUBMITTED_REWARD_FORM',
        'REWARD_FORM_REVIEWED',
        'PARTICIPANT_REACHED_A_GOAL',
        'PARTICIPANT_REWARD_FULFILLED',
        'PARTICIPANT_REWARD_FULFILLED',
        'WEBHOOK_ENDPOINT_DISABLED',
        'NEW_PARTICIPANT_ADDED',
        'LOYALTY_ACTION_APPLIED',
        'PARTICIPANT_REWARD_DELETED',
        'PARTICIPANT_DELETED',
        'CAMPAIGN_ENDED',
      ].sort(),
    );
    expect(rows.at(-1)!.type).toBe('CAMPAIGN_ENDED');
  });

  it('an event whose data does not fit its type does not compile, and the schema refuses it', () => {
    const bad = { campaignId: 'c', type: 'CAMPAIGN_ENDED', data: { campaign: { id: 'c' } } } as const;
    const typeChecks = () =>
      // @ts-expect-error: CAMPAIGN_ENDED's campaign has a name, a status and a currency
      recordEvents(stack.ctx, [bad]);
    expect(typeof typeChecks).toBe('function');
    expect(EVENT_SCHEMAS.CAMPAIGN_ENDED.safeParse(bad.data).success).toBe(false);
    const undescribed: NewEvent['type'][] = ['CAMPAIGN_ENDED'];
    // @ts-expect-error: a type outside the contract has no schema, so it cannot be emitted
    undescribed.push('PARTICIPANT_ARCHIVED');
    for (const type of ['PARTICIPANT_ARCHIVED', '__proto__', 'toString'])
      expect(isEmittedEventType(type)).toBe(false);
    // Every type of the contract is emitted by now, so each has its schema.
    expect(EVENT_TYPES.filter((type) => !isEmittedEventType(type))).toEqual([]);
  });
});
