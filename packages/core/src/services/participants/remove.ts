import { accounts, campaigns, loyaltyActions, participants } from '@stampcard/db';
import { and, eq, sql } from 'drizzle-orm';
import { type Ctx, unitOfWork } from '../../context';
import { boardsOf, bucketMoves } from '../../rules/leaderboard';
import { type CampaignRow, campaignRef } from '../../serialize';
import { recordEvents } from '../events';
import { bucketChanges, moveBuckets } from '../leaderboard/buckets';
import { settleQueuedActions } from '../queued-actions';
import { startErasure } from './erase';
import { findParticipant, participantNotFound } from './lookup';

/** The `reason` of a QUEUED loyalty action whose participant was deleted before a worker applied it. */
export const PARTICIPANT_DELETED = 'PARTICIPANT_DELETED';

/**
 * Removes a participant from its program, in one transaction: its QUEUED loyalty actions become REJECTED
 * (`PARTICIPANT_DELETED`), the participant goes with its participant rewards and form submissions (the
 * foreign keys cascade), and the counters follow: the account's participant count (its quota), the
 * campaign's `participantCount`, `loyaltyActionCount` (minus the participant's count) and `winnerCount`
 * (minus one when it held an approved reward), and the leaderboard buckets of its counts. Applied and rejected
 * actions stay in the ledger, and past events in the outbox, as history, but without the person: deletion is
 * the right-to-erasure path. The transaction writes the erasure's durable record and scrubs its first bounded
 * batch (`startErasure`: a short history entirely); a longer one goes on in the background, one short
 * transaction a batch, whose next step is handed to the worker once this has committed (`ctx.afterCommit`; the
 * worker's relay resumes it if that fails). `PARTICIPANT_DELETED` (ids and counts only) is recorded, and handed
 * to the dispatcher the same way.
 *
 * Rows are locked in the worker's order (see `applyActions`): the actions, in id order, then the
 * participant, its leaderboard buckets, then the account and the campaign last. An action a worker already claimed makes this wait
 * until it is applied and counted (the DELETE then reads the counts with it); an action the worker tries to
 * claim after that finds it REJECTED; and one recorded after this commits finds no participant, which the
 * worker rejects too. So a deleted participant's action never ends APPLIED, and no count is lost.
 */
export async function deleteParticipant(
  ctx: Ctx,
  campaign: CampaignRow,
  idOrEmail: string,
): Promise<{
  success: true;
  /** `DONE`: nothing of the person is left; `PENDING`: the batches in the background will erase the rest. */
  erasure: { status: 'DONE' | 'PENDING' };
}> {
  const found = await findParticipant(ctx, campaign.id, idOrEmail);
  if (!found) throw participantNotFound(campaign.id, idOrEmail);
  return unitOfWork(ctx, async (tx) => {
    const { db } = tx;
    const rejected = await settleQueuedActions(
      db,
      { campaignId: campaign.id, participantId: found.id },
      { status: 'REJECTED', reason: PARTICIPANT_DELETED },
    ).returning({ id: loyaltyActions.id });
    // DELETE … RETURNING locks the row and answers it as last committed: its counts include every action a
    // worker applied before this got the lock.
    const [gone] = await db
      .delete(participants)
      .where(and(eq(participants.id, found.id), eq(participants.campaignId, campaign.id)))
      .returning();
    if (!gone) throw participantNotFound(campaign.id, idOrEmail);
    // Before the shared rows (buckets, account, campaign) are locked, so other writers of the campaign do not
    // wait for it: one bounded batch, whatever the length of the history.
    const erased = await startErasure(tx, campaign, gone.id);
    // Out of the leaderboards: the buckets of every count its row remembers (locked before the campaign's row).
    await moveBuckets(
      { ...ctx, db },
      bucketChanges([{ campaignId: campaign.id, moves: bucketMoves(gone, null, boardsOf(gone)) }]),
    );
    await db
      .update(accounts)
      .set({ participantCount: sql`${accounts.participantCount} - 1` })
      .where(eq(accounts.id, campaign.accountId));
    await db
      .update(campaigns)
      .set({
        participantCount: sql`${campaigns.participantCount} - 1`,
        loyaltyActionCount: sql`${campaigns.loyaltyActionCount} - ${gone.loyaltyActionCount}`,
        winnerCount: sql`${campaigns.winnerCount} - ${gone.approvedRewardCount > 0 ? 1 : 0}`,
      })
      .where(eq(campaigns.id, campaign.id));
    await recordEvents(tx, [
      {
        campaignId: campaign.id,
        type: 'PARTICIPANT_DELETED',
        data: {
          participantId: gone.id,
          campaign: campaignRef(campaign),
          loyaltyActionCount: gone.loyaltyActionCount,
          approvedRewardCount: gone.approvedRewardCount,
          rejectedLoyaltyActionCount: rejected.length,
          erasedEventCount: erased.events,
        },
      },
    ]);
    return {
      success: true as const,
      erasure: { status: erased.next ? ('PENDING' as const) : ('DONE' as const) },
    };
  });
}
