import { formSubmissions, rewards, statusByKey, type Tx } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import { type Ctx, unitOfWork } from '../../context';
import { invalidState, notFound, validationError } from '../../errors';
import { newId } from '../../ids';
import { checkFormData, DEFAULT_FORM_MESSAGES } from '../../rules/forms';
import {
  type CampaignRow,
  campaignRef,
  type FormSubmissionRow,
  type ParticipantRow,
  serializeFormSubmission,
  serializeParticipant,
} from '../../serialize';
import type { FormSubmissionView } from '../../views';
import { recordEvents } from '../events';
import { lockParticipant } from '../participants/lookup';

/**
 * The participant's submission for the reward still waiting for review, if any: read through that participant's
 * submissions (`statusByKey`), not the console's index of every form that waits, which the planner may take with
 * the plain `status = 'UNREVIEWED'` (waiting-plan test, which reads this statement's plan).
 */
export const waitingFormQuery = (db: Tx, participantId: string, rewardId: string) =>
  db
    .select({ id: formSubmissions.id })
    .from(formSubmissions)
    .where(
      and(
        eq(formSubmissions.participantId, participantId),
        eq(formSubmissions.rewardId, rewardId),
        statusByKey(formSubmissions.status, 'UNREVIEWED'),
      ),
    )
    .limit(1);

/** A submission as it changed. */
export type FormSubmissionChange = { formSubmission: FormSubmissionView };

/**
 * A participant sends a reward's form (seed: ParticipantRewardFormSubmission). The campaign must be running
 * (400 `INVALID_STATE`), the participant and the reward must be the campaign's (404), the reward must take a
 * form (`submissionType` FORM with fields; else 400 on `rewardId`), and `formData` must fit it (`checkFormData`;
 * 400 naming each field, in the reward's own messages). One UNREVIEWED submission per participant and reward:
 * another is refused with the reward's `alreadySubmitted` message (400 `INVALID_STATE`). The participant's row
 * is locked for the check and the insert, so two at once cannot both pass. Records
 * `PARTICIPANT_SUBMITTED_REWARD_FORM` in the same transaction.
 */
export async function submitRewardForm(
  ctx: Ctx,
  campaign: CampaignRow,
  idOrEmail: string,
  input: { rewardId: string; formData: Record<string, string> },
): Promise<FormSubmissionChange> {
  if (campaign.status !== 'IN_PROGRESS') {
    throw invalidState(`The campaign is ${campaign.status}: forms are taken only while it is IN_PROGRESS`);
  }
  return unitOfWork(ctx, async (tx) => {
    const participant = await lockParticipant(tx, campaign.id, idOrEmail);
    const [reward] = await tx.db
      .select()
      .from(rewards)
      .where(and(eq(rewards.id, input.rewardId), eq(rewards.campaignId, campaign.id)));
    if (!reward) throw notFound(`Reward ${input.rewardId} in campaign ${campaign.id}`);
    const fields = reward.submissionFormFields ?? [];
    if (reward.submissionType !== 'FORM' || fields.length === 0) {
      throw validationError([
        {
          location: 'body',
          param: 'rewardId',
          value: input.rewardId,
          msg: 'this reward takes no form (its submissionType is not FORM, or it has no fields)',
        },
      ]);
    }
    const issues = checkFormData(fields, reward.submissionFormMessages, input.formData);
    if (issues.length > 0) throw validationError(issues, 'The form is not complete');
    const [waiting] = await waitingFormQuery(tx.db, participant.id, reward.id);
    if (waiting) {
      throw invalidState(
        reward.submissionFormMessages?.alreadySubmitted || DEFAULT_FORM_MESSAGES.alreadySubmitted,
      );
    }
    const now = ctx.clock.now();
    const [row] = await tx.db
      .insert(formSubmissions)
      .values({
        id: newId('formSubmission'),
        campaignId: campaign.id,
        participantId: participant.id,
        rewardId: reward.id,
        status: 'UNREVIEWED',
        // Only the form's own field keys reach here (`checkFormData`), and the operator API holds those to safe
        // names. (Drizzle cannot bind a null-prototype object; the serializer answers one.)
        formData: input.formData,
        createdAt: now,
      })
      .returning();
    return submitted(tx, campaign, participant, row!, now);
  });
}

async function submitted(
  ctx: Ctx,
  campaign: CampaignRow,
  participant: ParticipantRow,
  row: FormSubmissionRow,
  now: Date,
): Promise<FormSubmissionChange> {
  const formSubmission = serializeFormSubmission(row, participant.email);
  await recordEvents(ctx, [
    {
      campaignId: campaign.id,
      type: 'PARTICIPANT_SUBMITTED_REWARD_FORM',
      data: {
        formSubmission,
        participant: serializeParticipant(participant, { now }),
        campaign: campaignRef(campaign),
      },
    },
  ]);
  return { formSubmission };
}
