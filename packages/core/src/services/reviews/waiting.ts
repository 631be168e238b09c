import { campaigns, formSubmissions, participantRewards, participants, rewards } from '@stampcard/db';
import { and, asc, eq, type SQL, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { clip } from '../../errors';
import type { CampaignRow } from '../../serialize';
import { requireCampaign } from '../operator/lookup';

/** Where a list of what waits for review starts, and how much it holds (1 to 100: the caller bounds it). */
export type WaitingQuery = { limit: number; nextId?: string };

/** One thing waiting for an operator, with what is needed to decide on it without opening anything else. */
export type WaitingItem = {
  id: string;
  campaignId: string;
  campaignName: string;
  participantEmail: string;
  rewardTitle: string | null;
  createdAt: number;
  /** A form submission's answers, as JSON cut to 300 characters; null for a reward. */
  answers: string | null;
};

export type WaitingPage = { items: WaitingItem[]; nextId: string | null; more: boolean };

/** Most characters of a submission's answers a list shows (the whole form is one look-up away). */
const ANSWERS_SHOWN = 300;

/**
 * Form submissions not yet reviewed, in every campaign, oldest first (then id byte by byte), cursor-paged:
 * `nextId` is the id of the first of the next page. Read through a partial index of the UNREVIEWED ones
 * (`form_submissions_waiting_idx`), so the cost is the page's, whatever the table holds.
 */
export async function listWaitingSubmissions(ctx: Ctx, q: WaitingQuery): Promise<WaitingPage> {
  const { id, from } = keyset(formSubmissions, q.nextId);
  const rows = await ctx.db
    .select({
      id: formSubmissions.id,
      campaignId: formSubmissions.campaignId,
      campaignName: campaigns.name,
      participantEmail: participants.email,
      rewardTitle: rewards.title,
      createdAt: formSubmissions.createdAt,
      answers: sql<string>`left(${formSubmissions.formData}::text, ${ANSWERS_SHOWN + 1})`,
    })
    .from(formSubmissions)
    .innerJoin(campaigns, eq(campaigns.id, formSubmissions.campaignId))
    .innerJoin(participants, eq(participants.id, formSubmissions.participantId))
    .innerJoin(rewards, eq(rewards.id, formSubmissions.rewardId))
    .where(and(eq(formSubmissions.status, 'UNREVIEWED'), from))
    .orderBy(asc(formSubmissions.createdAt), asc(id))
    .limit(q.limit + 1);
  return page(rows, q.limit, (r) => ({ ...r, answers: clip(r.answers, ANSWERS_SHOWN) }));
}

/**
 * Rewards earned and waiting for approval (campaigns with `requireRewardApproval`, or held back by anti-fraud),
 * in every campaign, oldest first, cursor-paged as `listWaitingSubmissions`, through a partial index of the
 * unapproved ones (`participant_rewards_waiting_idx`).
 */
export async function listWaitingRewards(ctx: Ctx, q: WaitingQuery): Promise<WaitingPage> {
  const { id, from } = keyset(participantRewards, q.nextId);
  const rows = await ctx.db
    .select({
      id: participantRewards.id,
      campaignId: participantRewards.campaignId,
      campaignName: campaigns.name,
      participantEmail: participants.email,
      rewardTitle: rewards.title,
      createdAt: participantRewards.createdAt,
    })
    .from(participantRewards)
    .innerJoin(campaigns, eq(campaigns.id, participantRewards.campaignId))
    .innerJoin(participants, eq(participants.id, participantRewards.participantId))
    .innerJoin(rewards, eq(rewards.id, participantRewards.rewardId))
    .where(and(eq(participantRewards.approved, false), from))
    .orderBy(asc(participantRewards.createdAt), asc(id))
    .limit(q.limit + 1);
  return page(rows, q.limit, (r) => ({ ...r, answers: null }));
}

/**
 * The order both lists read in, (created_at, id byte by byte), and where a page starts: at the row `nextId`
 * names (no row from a cursor that names none).
 */
function keyset(table: typeof formSubmissions | typeof participantRewards, nextId: string | undefined) {
  const id = sql`${table.id} collate "C"`;
  const from: SQL | undefined = nextId
    ? sql`(${table.createdAt}, ${id}) >= (select created_at, id collate "C" from ${table} where id = ${nextId})`
    : undefined;
  return { id, from };
}

function page<R extends { id: string; createdAt: Date }>(
  rows: R[],
  limit: number,
  view: (r: R) => Omit<WaitingItem, 'createdAt'> & { createdAt: Date },
): WaitingPage {
  const more = rows.length > limit;
  const items = rows.slice(0, limit).map((r) => {
    const v = view(r);
    return { ...v, createdAt: v.createdAt.getTime() };
  });
  return { items, nextId: more ? rows[limit]!.id : null, more };
}

/** The campaign a review acts in (404 when it does not exist): what the review services take. */
export const campaignForReview = (ctx: Ctx, campaignId: string): Promise<CampaignRow> =>
  requireCampaign(ctx, campaignId);
