import { accounts, campaigns, type Metadata, participants } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import { monthKey } from '../../clock';
import { type Ctx, unitOfWork } from '../../context';
import { DomainError, invalidState } from '../../errors';
import { newParticipantId } from '../../ids';
import { emailKey, type FraudVerdict } from '../../rules/fraud';
import { type CampaignRow, campaignRef, type ParticipantRow, serializeParticipant } from '../../serialize';
import { type NewEvent, recordEvents } from '../events';
import { blockAfterRefusal, countForThrottle, fraudLookup, judge } from './fraud';
import { findParticipant, normaliseEmail } from './lookup';

export type NewParticipantInput = {
  email: string;
  firstName?: string | null;
  lastName?: string | null;
  ipAddress?: string | null;
  fingerprint?: string | null;
  metadata?: Metadata | null;
  notes?: string | null;
};

/**
 * Returns the campaign's participant with this email, creating it when absent. Runs inside the caller's
 * transaction: the insert, the quota (402 when passing it), the counters and NEW_PARTICIPANT_ADDED commit
 * together. Concurrent calls for one new email create one participant. A new participant is scored by
 * anti-fraud first (`./fraud`): a refusal is 422 PARTICIPANT_BLOCKED with nothing written; a creation from an
 * IP address counts against the campaign's IP throttle in this transaction. The caller wraps its transaction
 * in `blockAfterRefusal`, which blocks an address that passed the throttle.
 */
export async function ensureParticipant(
  ctx: Ctx,
  campaign: CampaignRow,
  input: NewParticipantInput,
  source: ParticipantRow['loyaltyActionSource'],
): Promise<{ participant: ParticipantRow; created: boolean }> {
  const email = normaliseEmail(input.email);
  const now = ctx.clock.now();
  // Anti-fraud: one indexed look-up, then a verdict in memory (a refusal throws 422 before anything is written).
  const lookup = await fraudLookup(ctx, campaign, input);
  if (lookup.existingId) return existing(ctx, campaign, email);
  const verdict = judge(campaign, input, lookup, now);
  const [inserted] = await ctx.db
    .insert(participants)
    .values(newParticipantValues(campaign, input, source, verdict, now))
    .onConflictDoNothing({ target: [participants.campaignId, participants.email] })
    .returning();
  if (!inserted) return existing(ctx, campaign, email);
  // A refusal by the throttle rolls the insert back.
  if (verdict.throttled && input.ipAddress) await countForThrottle(ctx, campaign, input.ipAddress);
  await recordEvents(ctx, [participantAddedEvent(campaign, inserted, now)]);
  if (!(await countNewParticipants(ctx, campaign, 1))) throw quotaExhausted();
  return { participant: inserted, created: true };
}

/** The row a new participant is inserted as, once anti-fraud's verdict is in. */
export function newParticipantValues(
  campaign: CampaignRow,
  input: NewParticipantInput,
  source: ParticipantRow['loyaltyActionSource'],
  verdict: FraudVerdict,
  now: Date,
): typeof participants.$inferInsert {
  const email = normaliseEmail(input.email);
  return {
    id: newParticipantId(),
    campaignId: campaign.id,
    email,
    emailKey: emailKey(email),
    firstName: input.firstName ?? null,
    lastName: input.lastName ?? null,
    ipAddress: input.ipAddress ?? null,
    fingerprint: input.fingerprint ?? null,
    metadata: input.metadata ?? null,
    notes: input.notes ?? null,
    fraudRiskLevel: verdict.fraudRiskLevel,
    fraudReasonCode: verdict.fraudReasonCode,
    loyaltyActionSource: source,
    countsMonth: monthKey(now),
    createdAt: now,
    updatedAt: now,
  };
}

/** The event of a participant just created. */
export const participantAddedEvent = (campaign: CampaignRow, row: ParticipantRow, now: Date): NewEvent => ({
  campaignId: campaign.id,
  type: 'NEW_PARTICIPANT_ADDED',
  data: { participant: serializeParticipant(row, { now, rewards: [] }), campaign: campaignRef(campaign) },
});

/** The 402 of a participant past the account's quota. */
export const quotaExhausted = () =>
  new DomainError(
    'USAGE_LIMIT',
    'Participant quota has been exhausted: upgrade the plan to add more participants',
  );

/**
 * Counts `n` new participants on the account (against its quota) and the campaign, in the caller's
 * transaction: false, counting nothing, when the account has fewer than `n` left. The account and campaign rows
 * are shared by every new participant: both counters move in ONE statement, which the caller runs last, so their
 * row locks are held for as short a time as the transaction allows.
 */
export async function countNewParticipants(ctx: Ctx, campaign: CampaignRow, n: number): Promise<boolean> {
  const counted = await ctx.db.execute<{ id: string }>(sql`
    with quota as (
      update ${accounts} set participant_count = participant_count + ${n}
      where id = ${campaign.accountId} and (participant_quota is null or participant_count + ${n} <= participant_quota)
      returning id
    )
    update ${campaigns} set participant_count = participant_count + ${n}
    where id = ${campaign.id} and exists (select 1 from quota)
    returning id`);
  return counted.length > 0;
}

/** The campaign's participant with this email, which exists (found by the look-up or by a concurrent insert). */
async function existing(ctx: Ctx, campaign: CampaignRow, email: string) {
  const found = await findParticipant(ctx, campaign.id, email);
  if (!found) throw new DomainError('INTERNAL_ERROR', 'Participant vanished while being created');
  return { participant: found, created: false };
}

/** Campaign statuses in which participants may be added by the API. */
const OPEN_FOR_PARTICIPANTS: readonly CampaignRow['status'][] = ['DRAFT', 'IN_PROGRESS'];

/**
 * The API's add: the participant with this email, created (source `DIRECT`) when absent, in a transaction of
 * its own. An existing one is answered unchanged, whatever else the input says. A campaign that is COMPLETE
 * takes no new participants (400 INVALID_STATE), not even one that exists already; DRAFT and IN_PROGRESS do.
 */
export async function addParticipant(
  ctx: Ctx,
  campaign: CampaignRow,
  input: NewParticipantInput,
): Promise<{ participant: ParticipantRow; created: boolean }> {
  if (!OPEN_FOR_PARTICIPANTS.includes(campaign.status)) {
    throw invalidState(
      `The campaign is ${campaign.status}: participants are added only while it is DRAFT or IN_PROGRESS`,
    );
  }
  return blockAfterRefusal(ctx, () =>
    unitOfWork(ctx, (tx) => ensureParticipant(tx, campaign, input, 'DIRECT')),
  );
}
