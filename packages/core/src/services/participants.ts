import { accounts, campaigns, type Metadata, participantRewards, participants } from '@stampcard/db';
import { and, asc, eq, sql } from 'drizzle-orm';
import { monthKey, monthStart, previousMonthKey } from '../clock';
import type { Ctx } from '../context';
import { DomainError, notFound } from '../errors';
import { newParticipantId } from '../ids';
import {
  type CampaignRow,
  campaignRef,
  type ParticipantRow,
  type Ranks,
  serializeParticipant,
} from '../serialize';
import { recordEvents } from './events';

/** Emails are kept lower-cased and trimmed: one participant per address and campaign. */
export const normaliseEmail = (email: string) => email.trim().toLowerCase();

/** A path segment with `@` is an email; anything else is a participant id. */
export function participantMatches(idOrEmail: string) {
  return idOrEmail.includes('@')
    ? eq(participants.email, normaliseEmail(idOrEmail))
    : eq(participants.id, idOrEmail);
}

/** Finds a campaign's participant by email or id. */
export async function findParticipant(
  ctx: Ctx,
  campaignId: string,
  idOrEmail: string,
): Promise<ParticipantRow | undefined> {
  const [row] = await ctx.db
    .select()
    .from(participants)
    .where(and(eq(participants.campaignId, campaignId), participantMatches(idOrEmail)))
    .limit(1);
  return row;
}

export async function requireParticipant(
  ctx: Ctx,
  campaignId: string,
  idOrEmail: string,
): Promise<ParticipantRow> {
  const row = await findParticipant(ctx, campaignId, idOrEmail);
  if (!row) throw notFound(`Participant ${idOrEmail} in campaign ${campaignId}`);
  return row;
}

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
 * together. Concurrent calls for one new email create one participant.
 */
export async function ensureParticipant(
  ctx: Ctx,
  campaign: CampaignRow,
  input: NewParticipantInput,
  source: ParticipantRow['loyaltyActionSource'],
): Promise<{ participant: ParticipantRow; created: boolean }> {
  const email = normaliseEmail(input.email);
  const now = ctx.clock.now();
  const [inserted] = await ctx.db
    .insert(participants)
    .values({
      id: newParticipantId(),
      campaignId: campaign.id,
      email,
      firstName: input.firstName ?? null,
      lastName: input.lastName ?? null,
      ipAddress: input.ipAddress ?? null,
      fingerprint: input.fingerprint ?? null,
      metadata: input.metadata ?? null,
      notes: input.notes ?? null,
      loyaltyActionSource: source,
      countsMonth: monthKey(now),
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing({ target: [participants.campaignId, participants.email] })
    .returning();
  if (!inserted) {
    const existing = await findParticipant(ctx, campaign.id, email);
    if (!existing) throw new DomainError('INTERNAL_ERROR', 'Participant vanished while being created');
    return { participant: existing, created: false };
  }
  await recordEvents(ctx, [
    {
      campaignId: campaign.id,
      type: 'NEW_PARTICIPANT_ADDED',
      data: {
        participant: serializeParticipant(inserted, { now, rewards: [] }),
        campaign: campaignRef(campaign),
      },
    },
  ]);
  // The account and campaign rows are shared by every new participant: both counters move in ONE
  // statement, last, so their row locks are held for as short a time as the transaction allows.
  const counted = await ctx.db.execute<{ id: string }>(sql`
    with quota as (
      update ${accounts} set participant_count = participant_count + 1
      where id = ${campaign.accountId} and (participant_quota is null or participant_count < participant_quota)
      returning id
    )
    update ${campaigns} set participant_count = participant_count + 1
    where id = ${campaign.id} and exists (select 1 from quota)
    returning id`);
  if (counted.length === 0) {
    throw new DomainError(
      'USAGE_LIMIT',
      'Participant quota has been exhausted: upgrade the plan to add more participants',
    );
  }
  return { participant: inserted, created: true };
}
