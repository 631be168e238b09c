import { participantRewards } from '@stampcard/db';
import { asc, eq } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { type ParticipantRow, serializeParticipant } from '../../serialize';
import { participantRanks } from '../leaderboard/ranks';

/** The full Participant object: counts, rewards and ranks. */
export async function showParticipant(ctx: Ctx, p: ParticipantRow) {
  const [rewards, ranks] = await Promise.all([
    ctx.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.participantId, p.id))
      .orderBy(asc(participantRewards.createdAt), asc(participantRewards.id)),
    participantRanks(ctx, p),
  ]);
  return serializeParticipant(p, { now: ctx.clock.now(), rewards, ranks });
}
