import { participantRewards, participants } from '@stampcard/db';
import { asc, eq, sql } from 'drizzle-orm';
import { monthKey, monthStart, previousMonthKey } from '../../clock';
import type { Ctx } from '../../context';
import { type ParticipantRow, type Ranks, serializeParticipant } from '../../serialize';

/**
 * Ranks are 1-based, by count descending, ties by earlier join. A monthly rank is 0 when the participant has
 * no action in that month; the previous month's is null (omitted) when it joined after that month.
 */
export async function participantRanks(ctx: Ctx, p: ParticipantRow): Promise<Ranks> {
  const month = monthKey(ctx.clock.now());
  const prev = previousMonthKey(month);
  const monthly = sql`case when ${participants.countsMonth} = ${month} then ${participants.monthlyLoyaltyActionCount} else 0 end`;
  const prevMonthly = sql`case when ${participants.countsMonth} = ${month} then ${participants.prevMonthlyLoyaltyActionCount}
    when ${participants.countsMonth} = ${prev} then ${participants.monthlyLoyaltyActionCount} else 0 end`;
  const mine = await ctx.db
    .select({ m: sql<number>`${monthly}`.mapWith(Number), pm: sql<number>`${prevMonthly}`.mapWith(Number) })
    .from(participants)
    .where(eq(participants.id, p.id));
  const m = mine[0]?.m ?? 0;
  const pm = mine[0]?.pm ?? 0;
  const joinedBefore = sql`(${participants.createdAt}, ${participants.id}) < (${p.createdAt.toISOString()}::timestamptz, ${p.id})`;
  const ahead = (expr: ReturnType<typeof sql>, mineValue: number) =>
    sql`count(*) filter (where ${expr} > ${mineValue} or (${expr} = ${mineValue} and ${joinedBefore}))`.mapWith(
      Number,
    );
  const [row] = await ctx.db
    .select({
      rank: ahead(sql`${participants.loyaltyActionCount}`, p.loyaltyActionCount),
      monthly: ahead(monthly, m),
      prevMonthly: ahead(prevMonthly, pm),
    })
    .from(participants)
    .where(eq(participants.campaignId, p.campaignId));
  const existedLastMonth = p.createdAt < monthStart(month);
  return {
    rank: (row?.rank ?? 0) + 1,
    monthlyRank: m > 0 ? (row?.monthly ?? 0) + 1 : 0,
    prevMonthlyRank: existedLastMonth ? (pm > 0 ? (row?.prevMonthly ?? 0) + 1 : 0) : null,
  };
}

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
