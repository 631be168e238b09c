import { loyaltyActions, type Metadata, participants, rewards } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import { type Ctx, commitWrite, unitOfWork } from '../../context';
import { duplicateRequest, invalidState, notFound } from '../../errors';
import { newActionId } from '../../ids';
import { isUniqueViolation } from '../../pg-error';
import type { CampaignRow } from '../../serialize';
import { recordQueuedActions } from '../ledger';
import {
  blockAfterRefusal,
  ensureParticipant,
  type NewParticipantInput,
  participantMatches,
} from '../participants';

export type AcceptActionInput = {
  rewardId: string;
  metadata?: Metadata | null;
  /** Who performed the action: by email (created when allowed) or by participant id. */
  participant:
    | { email: string; addIfNoneExists: boolean; profile: Omit<NewParticipantInput, 'email' | 'metadata'> }
    | { id: string };
  /** Identifies the request (key, method, path, body): an identical one while this is QUEUED is refused. */
  requestHash?: string;
};

const INFLIGHT_INDEX = 'loyalty_actions_inflight_uq';

/** An accepted action, as its caller needs it: recorded QUEUED, and whether its participant was just made. */
export type Accepted = {
  action: { id: string; status: 'QUEUED'; participantId: string; rewardId: string; createdAt: Date };
  participantCreated: boolean;
};

/** 400 INVALID_STATE unless the campaign is IN_PROGRESS: only then does it take loyalty actions. */
export function assertAcceptingActions(campaign: Pick<CampaignRow, 'status'>): void {
  if (campaign.status !== 'IN_PROGRESS') {
    throw invalidState(
      `The campaign is ${campaign.status}: loyalty actions are accepted only while it is IN_PROGRESS`,
    );
  }
}

/**
 * The API's half of a loyalty action: every check that must answer now, then the action is written to the
 * ledger as QUEUED (with a new participant, if one is created) in one transaction, handed to the worker once
 * it committed (`handOff`).
 */
export async function acceptLoyaltyAction(
  ctx: Ctx,
  campaign: CampaignRow,
  input: AcceptActionInput,
): Promise<Accepted> {
  assertAcceptingActions(campaign);
  const who = input.participant;
  // One round trip answers both questions: is the reward this campaign's, and does the participant exist?
  const [found] = await ctx.db
    .select({ rewardId: rewards.id, participant: participants })
    .from(rewards)
    .leftJoin(
      participants,
      and(
        eq(participants.campaignId, rewards.campaignId),
        participantMatches('id' in who ? who.id : who.email),
      ),
    )
    .where(and(eq(rewards.id, input.rewardId), eq(rewards.campaignId, campaign.id)))
    .limit(1);
  if (!found) throw notFound(`Reward ${input.rewardId} in campaign ${campaign.id}`);

  // Named before it is written: a 503 that cannot tell whether the write landed says which action to look up.
  const subject = { actionId: newActionId(ctx.clock.now()) };
  const newAction = (participantId: string) => ({
    id: subject.actionId,
    campaignId: campaign.id,
    participantId,
    rewardId: input.rewardId,
    metadata: input.metadata,
    requestHash: input.requestHash,
  });
  try {
    if (found.participant) {
      // The common case is a single statement: no transaction round trips. The ledger is its own record (the
      // audit log records no action), so it names no actor, which would make it a transaction.
      const row = newAction(found.participant.id);
      const [action] = await commitWrite(
        { ...ctx, actor: undefined },
        (w) => recordQueuedActions(w, [row]),
        subject,
      );
      return { action: queued(action!), participantCreated: false };
    }
    if ('id' in who) throw notFound(`Participant ${who.id} in campaign ${campaign.id}`);
    if (!who.addIfNoneExists) {
      throw notFound(
        `Participant ${who.email} in campaign ${campaign.id} (addParticipantIfNoneExists is false)`,
      );
    }
    return await blockAfterRefusal(ctx, () =>
      unitOfWork(
        ctx,
        async (tx) => {
          const { participant, created } = await ensureParticipant(
            tx,
            campaign,
            { ...who.profile, email: who.email, metadata: input.metadata ?? null },
            'DIRECT',
          );
          const [action] = await recordQueuedActions(tx, [newAction(participant.id)]);
          return { action: queued(action!), participantCreated: created };
        },
        subject,
      ),
    );
  } catch (err) {
    if (isUniqueViolation(err, INFLIGHT_INDEX) && input.requestHash) {
      const [first] = await ctx.db
        .select({ createdAt: loyaltyActions.createdAt, id: loyaltyActions.id })
        .from(loyaltyActions)
        .where(and(eq(loyaltyActions.requestHash, input.requestHash), eq(loyaltyActions.status, 'QUEUED')))
        .limit(1);
      throw duplicateRequest(
        'An identical request is still being processed: wait for it to finish before sending it again',
        { startedAt: (first?.createdAt ?? ctx.clock.now()).getTime() },
        err,
      );
    }
    throw err;
  }
}

const queued = (a: typeof loyaltyActions.$inferSelect): Accepted['action'] => ({
  id: a.id,
  status: 'QUEUED',
  participantId: a.participantId,
  rewardId: a.rewardId,
  createdAt: a.createdAt,
});
