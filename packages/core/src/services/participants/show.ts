import type { Ctx } from '../../context';
import { type ParticipantRow, serializeParticipant } from '../../serialize';
import { participantRanks } from '../leaderboard/ranks';
import { newestRewardsOf } from './list';

/**
 * The full Participant object: counts, ranks, its newest rewards (a bounded read however long its history,
 * `newestRewardsOf`) and the total.
 */
export async function showParticipant(ctx: Ctx, p: ParticipantRow) {
  const [rewards, ranks] = await Promise.all([newestRewardsOf(ctx, [p.id]), participantRanks(ctx, p)]);
  return serializeParticipant(p, { now: ctx.clock.now(), rewards: rewards.get(p.id) ?? [], ranks });
}
