import { formSubmissions, participants } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import { type Ctx, unitOfWork } from '../../context';
import { invalidState, notFound } from '../../errors';
import {
  type CampaignRow,
  campaignRef,
  serializeFormSubmission,
  serializeParticipant,
} from '../../serialize';
import { recordEvents } from '../events';
import { recordQueuedActions } from '../ledger';
import type { FormSubmissionChange } from './submit';

/** What a review did: the submission, and the loyalty action an approval counted. */
export type FormReview = FormSubmissionChange & { loyaltyActionId: string | null };

/**
 * Reviews an UNREVIEWED submission (one already REVIEWED: 400 `INVALID_STATE`; another campaign's or unknown:
 * 404). It becomes REVIEWED (`reviewedAt`); an approval also records a loyalty action for the submission's
 * reward, QUEUED in the same transaction, which the worker applies like a trigger's, so the unlock rule decides
 * whether a reward is earned. An approval needs the campaign IN_PROGRESS, as every loyalty action does; a
 * rejection does not. Records `REWARD_FORM_REVIEWED`; the event and the action are handed on once the review
 * has committed (`ctx.afterCommit`), and the relay queues the action if that fails.
 */
export async function reviewFormSubmission(
  ctx: Ctx,
  campaign: CampaignRow,
  submissionId: string,
  approve: boolean,
): Promise<FormReview> {
  return unitOfWork(ctx, async (tx) => {
    const [found] = await tx.db
      .select({ submission: formSubmissions, participant: participants })
      .from(formSubmissions)
      .innerJoin(participants, eq(participants.id, formSubmissions.participantId))
      .where(and(eq(formSubmissions.id, submissionId), eq(formSubmissions.campaignId, campaign.id)))
      .for('update', { of: formSubmissions });
    if (!found) throw notFound(`Form submission ${submissionId} in campaign ${campaign.id}`);
    if (found.submission.status !== 'UNREVIEWED') {
      throw invalidState(`Form submission ${submissionId} was already reviewed`);
    }
    if (approve && campaign.status !== 'IN_PROGRESS') {
      throw invalidState(
        `The campaign is ${campaign.status}: approving counts a loyalty action, accepted only while it is IN_PROGRESS`,
      );
    }
    const now = ctx.clock.now();
    const [row] = await tx.db
      .update(formSubmissions)
      .set({ status: 'REVIEWED', reviewedAt: now })
      .where(eq(formSubmissions.id, submissionId))
      .returning();
    const [action] = approve
      ? await recordQueuedActions(tx, [
          {
            campaignId: campaign.id,
            participantId: found.participant.id,
            rewardId: row!.rewardId,
            metadata: { source: 'FORM_SUBMISSION', formSubmissionId: submissionId },
          },
        ])
      : [];
    const formSubmission = serializeFormSubmission(row!, found.participant.email);
    await recordEvents(tx, [
      {
        campaignId: campaign.id,
        type: 'REWARD_FORM_REVIEWED',
        data: {
          formSubmission,
          participant: serializeParticipant(found.participant, { now }),
          campaign: campaignRef(campaign),
          approved: approve,
          loyaltyActionId: action?.id ?? null,
        },
      },
    ]);
    return { formSubmission, loyaltyActionId: action?.id ?? null };
  });
}
