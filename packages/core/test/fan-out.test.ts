import { type Ctx, fanOutEvents, newId, recordEvents, systemClock } from '@stampcard/core';
import { webhookEndpoints, webhookMessages } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { makeWorld } from '../../../test/support/factories';
import { useTestDb } from '../../../test/support/use';

/**
 * Which endpoint gets which event is decided in the fan-out's SQL (`event_types` empty: every type; otherwise
 * the types listed), the one place that rule runs: tested here against PostgreSQL.
 */
const testDb = useTestDb();

describe("fan-out's event filter, in PostgreSQL", () => {
  it('an endpoint gets the types it lists, every type when it lists none, and a deleted one gets nothing', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const w = await makeWorld(ctx);
    const campaignId = w.campaign.id;
    const now = new Date();
    const endpoint = async (eventTypes: string[], more: { enabled?: boolean; deletedAt?: Date } = {}) => {
      const id = newId('webhookEndpoint');
      await ctx.db.insert(webhookEndpoints).values({
        id,
        campaignId,
        url: `https://hooks.example.com/${id}`,
        kind: 'NOTIFY',
        eventTypes,
        secret: `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`,
        createdAt: now,
        updatedAt: now,
        ...more,
      });
      return id;
    };
    const all = await endpoint([]);
    const ended = await endpoint(['CAMPAIGN_ENDED']);
    const deletions = await endpoint(['PARTICIPANT_REWARD_DELETED']);
    const both = await endpoint(['PARTICIPANT_REWARD_DELETED', 'CAMPAIGN_ENDED']);
    const heldEnded = await endpoint(['CAMPAIGN_ENDED'], { enabled: false });
    const deletedAll = await endpoint([], { deletedAt: now });

    const campaign = { id: campaignId, name: 'c', status: 'COMPLETE' as const, currencyISO: 'USD' };
    const [endedEvent, deletedEvent] = await recordEvents(ctx, [
      { campaignId, type: 'CAMPAIGN_ENDED', data: { campaign } },
      {
        campaignId,
        type: 'PARTICIPANT_REWARD_DELETED',
        data: { participantRewardId: 'pr_1', rewardId: 'rew_1', participantId: 'par_1', campaign },
      },
    ]);
    const out = await fanOutEvents(ctx, [endedEvent!, deletedEvent!]);
    expect(out.events).toBe(2);

    const made = await ctx.db
      .select({ endpointId: webhookMessages.endpointId, eventId: webhookMessages.eventId })
      .from(webhookMessages)
      .where(eq(webhookMessages.campaignId, campaignId));
    const receivers = (eventId: string) =>
      made
        .filter((m) => m.eventId === eventId)
        .map((m) => m.endpointId)
        .sort();
    expect(receivers(endedEvent!)).toEqual([all, ended, both, heldEnded].sort());
    expect(receivers(deletedEvent!)).toEqual([all, deletions, both].sort());
    expect(made.some((m) => m.endpointId === deletedAll)).toBe(false);
    // The disabled endpoint's message is kept for when it is enabled again, but not scheduled now.
    expect(out.scheduled.map((s) => s.endpointId).sort()).toEqual(
      [all, all, ended, deletions, both, both].sort(),
    );
  });
});
