import { campaigns, type FraudRiskLevel, participants } from '@stampcard/db';
import { and, asc, eq, ne, type SQL, sql } from 'drizzle-orm';
import { type Ctx, unitOfWork } from '../../context';
import { notFound, validationError } from '../../errors';
import { type CampaignRow, campaignRef, type ParticipantRow, serializeParticipant } from '../../serialize';
import { recordEvents } from '../events';
import { type ParticipantPage, participantPage } from './list';
import { lockParticipant, participantNotFound } from './lookup';

/** The reason code of a level set by hand (seed: "Marked as a fraudster manually in the dashboard"). */
const MANUAL_UPDATE = 'MANUAL_UPDATE';

/** The operator's review order, riskiest first: a level's place here is its rank in the list and its cursor. */
export const RISK_REVIEW_ORDER = ['HIGH', 'MEDIUM', 'LOW'] as const satisfies readonly FraudRiskLevel[];

/**
 * A participant's rank in the review order, as SQL. Its text is fixed (no parameters) so that it is the very
 * expression of the index that serves the list:
 * `(campaign_id, (case fraud_risk_level when 'HIGH' then 0 when 'MEDIUM' then 1 else 2 end), (id collate "C"))`.
 */
const riskRank = sql.raw(`(case fraud_risk_level when 'HIGH' then 0 when 'MEDIUM' then 1 else 2 end)`);
/** Ids compared byte by byte: the same order whatever the database's collation. */
const byteWiseId = sql`(${participants.id} collate "C")`;

/** A position in the review list: the level and id of the first participant of a page. */
export type RiskCursor = { level: FraudRiskLevel; id: string };

/** `HIGH:abcdefghijkl`: the level, then the participant id. */
export const encodeRiskCursor = (c: RiskCursor) => `${c.level}:${c.id}`;

/** The cursor a `nextId` stands for, or null when it is not one this list answers. */
export function parseRiskCursor(nextId: string): RiskCursor | null {
  const colon = nextId.indexOf(':');
  if (colon < 0) return null;
  const level = nextId.slice(0, colon);
  const id = nextId.slice(colon + 1);
  if (!(RISK_REVIEW_ORDER as readonly string[]).includes(level)) return null;
  if (id.length === 0 || id.length > 64) return null;
  return { level: level as FraudRiskLevel, id };
}

const rankOf = (level: FraudRiskLevel) => RISK_REVIEW_ORDER.indexOf(level);

/** The campaign the operator names: any status but DELETED, which is a 404 as on the public API. */
async function requireReviewableCampaign(ctx: Ctx, campaignId: string): Promise<CampaignRow> {
  const [row] = await ctx.db
    .select()
    .from(campaigns)
    .where(and(eq(campaigns.id, campaignId), ne(campaigns.status, 'DELETED')))
    .limit(1);
  if (!row) throw notFound(`Campaign ${campaignId}`);
  return row;
}

/** What a manual review did: the participant as stored, and whether its level or reason changed. */
export type FraudLevelSet = { participant: ParticipantRow; changed: boolean };

/**
 * Manual review (contract section 6): sets a participant's `fraudRiskLevel` by hand, with the reason code
 * `MANUAL_UPDATE`. One transaction with the participant's row locked (as the worker locks it to decide an
 * unlock), so the level a concurrent unlock reads is either the old one or the new one. When the level or the
 * reason changes, `PARTICIPANT_FRAUD_STATUS_UPDATED` (the participant after, `previous` level and reason)
 * commits with it; setting what is already stored writes nothing and records no event.
 */
export async function setFraudRiskLevel(
  ctx: Ctx,
  campaignId: string,
  idOrEmail: string,
  level: FraudRiskLevel,
): Promise<FraudLevelSet> {
  const campaign = await requireReviewableCampaign(ctx, campaignId);
  return unitOfWork(ctx, async (tx) => {
    const before = await lockParticipant(tx, campaign.id, idOrEmail);
    if (before.fraudRiskLevel === level && before.fraudReasonCode === MANUAL_UPDATE) {
      return { participant: before, changed: false };
    }
    const now = ctx.clock.now();
    const [after] = await tx.db
      .update(participants)
      .set({ fraudRiskLevel: level, fraudReasonCode: MANUAL_UPDATE, updatedAt: now })
      .where(eq(participants.id, before.id))
      .returning();
    if (!after) throw participantNotFound(campaign.id, idOrEmail);
    await recordEvents(tx, [
      {
        campaignId: campaign.id,
        type: 'PARTICIPANT_FRAUD_STATUS_UPDATED',
        data: {
          participant: serializeParticipant(after, { now }),
          previous: { fraudRiskLevel: before.fraudRiskLevel, fraudReasonCode: before.fraudReasonCode },
          campaign: campaignRef(campaign),
        },
      },
    ]);
    return { participant: after, changed: true };
  });
}

export type RiskListQuery = {
  limit: number;
  /** Where the page starts: the `nextId` a previous page answered (`LEVEL:participantId`). */
  nextId?: string;
  /** Only participants at this level. */
  fraudRiskLevel?: FraudRiskLevel;
};

/**
 * The operator's review list: a campaign's participants riskiest first (HIGH, MEDIUM, LOW), then by id, each
 * with its `fraudRiskLevel`, `fraudReasonCode` and rewards. Keyset-paged on (rank, id): `nextId` is the level
 * and id of the first participant of the next page (`HIGH:abcdefghijkl`), so a reader paging through sees
 * every participant that existed when it started exactly once while others join, and one that joins meanwhile
 * once or not at all. A participant whose level changes while a reader pages may be seen twice or not at all.
 * A `nextId` this list did not answer is a 400 naming `nextId`.
 */
export async function listParticipantsByRisk(
  ctx: Ctx,
  campaignId: string,
  q: RiskListQuery,
): Promise<ParticipantPage> {
  const cursor = q.nextId === undefined ? undefined : parseRiskCursor(q.nextId);
  if (cursor === null) {
    throw validationError([
      { location: 'query', param: 'nextId', value: q.nextId, msg: 'not a nextId this list answered' },
    ]);
  }
  const campaign = await requireReviewableCampaign(ctx, campaignId);
  const filters: SQL[] = [eq(participants.campaignId, campaign.id)];
  if (q.fraudRiskLevel) {
    // The rank too, and the cursor as an id bound within it: then the index scan starts at the cursor. (An
    // equality on the rank beside the row comparison makes PostgreSQL 15 start at the level's first entry.)
    const rank = rankOf(q.fraudRiskLevel);
    filters.push(eq(participants.fraudRiskLevel, q.fraudRiskLevel), sql`${riskRank} = ${rank}::int`);
    if (cursor && rankOf(cursor.level) > rank) filters.push(sql`false`);
    if (cursor && rankOf(cursor.level) === rank) filters.push(sql`${byteWiseId} >= ${cursor.id}`);
  } else if (cursor) {
    filters.push(sql`(${riskRank}, ${byteWiseId}) >= (${rankOf(cursor.level)}::int, ${cursor.id})`);
  }
  const rows = await ctx.db
    .select()
    .from(participants)
    .where(and(...filters))
    .orderBy(asc(riskRank), asc(byteWiseId))
    .limit(q.limit + 1);
  return participantPage(ctx, rows, q.limit, (next) =>
    encodeRiskCursor({ level: next.fraudRiskLevel, id: next.id }),
  );
}
