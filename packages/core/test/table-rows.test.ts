import { acceptLoyaltyAction, applyActions, type Ctx, systemClock } from '@stampcard/core';
import { builtOnce, campaigns, participants, rewards, rowsInOrder, tableRows } from '@stampcard/db';
import { eq, sql } from 'drizzle-orm';
import { QueryBuilder } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestDb } from '../../../test/support/use';

const testDb = useTestDb();

/**
 * The apply batch reads its participants, rewards and campaigns with statements built once and decodes their
 * rows itself (`tableRows`): what it reads must be what drizzle maps from the same rows, column by column and
 * type by type (dates, JSON, arrays, nulls).
 */
describe('rows of a whole table decoded by tableRows, sent by rowsInOrder', () => {
  it('are the rows drizzle maps, for participants, rewards and campaigns, in a transaction', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const w = await makeWorld(ctx, { reward: { conversionsRequired: 1, limit: 3 } });
    const [campaign] = await ctx.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
    const accepted = await acceptLoyaltyAction(ctx, campaign!, {
      rewardId: w.reward.id,
      participant: {
        email: uniqueEmail(),
        addIfNoneExists: true,
        profile: { firstName: 'Ada', lastName: 'Byron', ipAddress: '203.0.113.7' },
      },
    });
    await applyActions(ctx, [accepted.action.id]);
    const participantId = accepted.action.participantId;
    await ctx.db
      .update(participants)
      .set({ metadata: { tier: 'gold', visits: 3 } })
      .where(eq(participants.id, participantId));

    const qb = new QueryBuilder();
    const id = sql.placeholder('id');
    const statements = {
      participant: builtOnce(qb.select().from(participants).where(eq(participants.id, id)).for('update')),
      reward: builtOnce(qb.select().from(rewards).where(eq(rewards.id, id))),
      campaign: builtOnce(qb.select().from(campaigns).where(eq(campaigns.id, id))),
    };
    await ctx.db.transaction(async (tx) => {
      const [p, r, c] = await rowsInOrder(tx, [
        { statement: statements.participant, values: { id: participantId } },
        { statement: statements.reward, values: { id: w.reward.id } },
        { statement: statements.campaign, values: { id: w.campaign.id } },
      ]);
      const decodedParticipant = tableRows(participants, p!);
      expect(decodedParticipant).toEqual(
        await tx.select().from(participants).where(eq(participants.id, participantId)),
      );
      expect(decodedParticipant[0]!.loyaltyActionCountsPerReward).toEqual({ [w.reward.id]: 1 });
      expect(decodedParticipant[0]!.updatedAt).toBeInstanceOf(Date);
      expect(tableRows(rewards, r!)).toEqual(
        await tx.select().from(rewards).where(eq(rewards.id, w.reward.id)),
      );
      expect(tableRows(campaigns, c!)).toEqual(
        await tx.select().from(campaigns).where(eq(campaigns.id, w.campaign.id)),
      );
    });
  });
});
