import { z } from '@hono/zod-openapi';
import { ActionView } from '@stampcard/core';
import { Campaign, FeedEvent, LoyaltyAction, Participant, ParticipantReward } from '../../lib/views';

/** What the public API answers, besides the objects of `lib/views.ts`. */

export const CampaignList = z.strictObject({ campaigns: z.array(Campaign) });

export const AcceptedLoyaltyAction = ActionView.pick({
  id: true,
  status: true,
  participantId: true,
  rewardId: true,
  createdAt: true,
}).openapi('AcceptedLoyaltyAction', {
  description: 'A loyalty action just accepted: QUEUED, not applied yet',
});

/** `triggerLoyaltyAction`: at once the accepted action; with `?wait=true`, its state once applied. */
export const TriggerAnswer = z
  .strictObject({
    success: z.literal(true),
    message: z.string().openapi({ example: 'Participant added and loyalty action accepted' }),
    action: z.union([AcceptedLoyaltyAction, LoyaltyAction]),
  })
  .openapi('LoyaltyActionAnswer');

/** `listCampaignEvents`. */
export const EventPage = z.strictObject({
  events: z.array(FeedEvent),
  more: z.boolean().openapi({ description: 'Whether another page follows' }),
  nextAfter: z
    .string()
    .nullable()
    .openapi({ description: 'The `after` of the next page: the last event id here (null when empty)' }),
});

/** `listParticipantRewards`. */
export const ParticipantRewardPage = z.strictObject({
  rewards: z.array(ParticipantReward),
  limit: z.number().int().openapi({
    description:
      'The `limit` asked for: the most items a page holds. A page may hold fewer (its byte budget) while `more` is true',
  }),
  nextId: z.string().nullable().openapi({
    description: 'The `nextId` of the next page: the id of its first reward (null on the last page)',
  }),
  more: z.boolean().openapi({ description: 'Whether another page follows' }),
});

/** `deleteParticipantReward`. */
export const RemovedParticipantReward = z.strictObject({ success: z.literal(true) });

/** `getLeaderboard`. */
export const LeaderboardPage = z
  .strictObject({
    participants: z.array(Participant).openapi({
      description:
        'In rank order, each with the rank of this leaderboard: `rank` (ALL_TIME), `monthlyRank` (CURRENT_MONTH) or `prevMonthlyRank` (PREV_MONTH)',
    }),
    limit: z.number().int().openapi({
      description:
        'The `limit` asked for: the most items a page holds. A page may hold fewer (its byte budget) while `more` is true',
    }),
    nextId: z.string().nullable().openapi({
      description: 'The `nextId` of the next page: the id of its first participant (null on the last page)',
    }),
    more: z.boolean().openapi({ description: 'Whether another page follows' }),
  })
  .openapi('LeaderboardPage');
