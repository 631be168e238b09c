import {
  accounts,
  apiKeys,
  type CampaignStatus,
  campaigns,
  type Plan,
  type RateLimitOverrides,
  type Role,
  rewards,
  users,
} from '@stampcard/db';
import { and, eq, inArray, isNull } from 'drizzle-orm';
import { type Ctx, commitWrite, unitOfWork } from '../context';
import { invalidState, notFound, validationError } from '../errors';
import { newApiKey, newCampaignId, newId } from '../ids';
import type { CampaignRow, RewardRow } from '../serialize';
import { campaignRef, serializeCampaignForOperator, serializeReward } from '../serialize';
import { recordEvents } from './events';

export type AccountInput = {
  name: string;
  plan: Plan;
  participantQuota?: number | null;
  rateLimits?: RateLimitOverrides | null;
};

export async function createAccount(ctx: Ctx, input: AccountInput) {
  const [row] = await commitWrite(ctx, () =>
    ctx.db
      .insert(accounts)
      .values({
        id: newId('account'),
        name: input.name,
        plan: input.plan,
        participantQuota: input.participantQuota ?? null,
        rateLimits: input.rateLimits ?? null,
        createdAt: ctx.clock.now(),
      })
      .returning(),
  );
  return serializeAccount(row!);
}

export function serializeAccount(a: typeof accounts.$inferSelect) {
  return {
    id: a.id,
    name: a.name,
    plan: a.plan,
    participantQuota: a.participantQuota,
    participantCount: a.participantCount,
    rateLimits: a.rateLimits,
    createdAt: a.createdAt.getTime(),
  };
}

async function requireAccount(ctx: Ctx, accountId: string) {
  const [row] = await ctx.db.select().from(accounts).where(eq(accounts.id, accountId)).limit(1);
  if (!row) throw notFound(`Account ${accountId}`);
  return row;
}

export type UserInput = { email: string; role: Role; campaignIds?: string[] };

export async function createUser(ctx: Ctx, accountId: string, input: UserInput) {
  await requireAccount(ctx, accountId);
  const campaignIds = [...new Set(input.campaignIds ?? [])];
  if (campaignIds.length > 0) {
    const owned = await ctx.db
      .select({ id: campaigns.id })
      .from(campaigns)
      .where(and(eq(campaigns.accountId, accountId), inArray(campaigns.id, campaignIds)));
    const missing = campaignIds.filter((id) => !owned.some((o) => o.id === id));
    if (missing.length > 0) {
      throw validationError(
        missing.map((id) => ({
          location: 'body',
          param: 'campaignIds',
          value: id,
          msg: 'no such campaign in this account',
        })),
      );
    }
  }
  const [row] = await commitWrite(ctx, () =>
    ctx.db
      .insert(users)
      .values({
        id: newId('user'),
        accountId,
        email: input.email.toLowerCase(),
        role: input.role,
        campaignIds,
        createdAt: ctx.clock.now(),
      })
      .onConflictDoNothing()
      .returning(),
  );
  if (!row) {
    throw validationError([
      {
        location: 'body',
        param: 'email',
        value: input.email,
        msg: 'a user with this email already exists in the account',
      },
    ]);
  }
  return {
    id: row.id,
    accountId: row.accountId,
    email: row.email,
    role: row.role,
    campaignIds: row.campaignIds,
    createdAt: row.createdAt.getTime(),
  };
}

/** Issues a key for a user. The key is in this answer only; the database keeps its hash. */
export async function createApiKey(ctx: Ctx, userId: string) {
  const [user] = await ctx.db.select({ id: users.id }).from(users).where(eq(users.id, userId)).limit(1);
  if (!user) throw notFound(`User ${userId}`);
  const { key, hash, prefix } = newApiKey();
  const [row] = await commitWrite(ctx, () =>
    ctx.db
      .insert(apiKeys)
      .values({ id: newId('apiKey'), userId, keyHash: hash, keyPrefix: prefix, createdAt: ctx.clock.now() })
      .returning(),
  );
  return { id: row!.id, userId, key, keyPrefix: prefix, createdAt: row!.createdAt.getTime() };
}

export async function revokeApiKey(ctx: Ctx, keyId: string) {
  const [row] = await commitWrite(ctx, () =>
    ctx.db
      .update(apiKeys)
      .set({ revokedAt: ctx.clock.now() })
      .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id }),
  );
  if (!row) {
    const [exists] = await ctx.db
      .select({ id: apiKeys.id })
      .from(apiKeys)
      .where(eq(apiKeys.id, keyId))
      .limit(1);
    if (!exists) throw notFound(`API key ${keyId}`);
  }
  // Cached principals are keyed by the key's hash, which is not at hand: every process drops them all.
  await ctx.cache?.invalidate('principal');
  return { id: keyId, revoked: true };
}

export type CampaignInput = {
  name: string;
  currencyISO?: string;
  status?: CampaignStatus;
  antiFraud?: CampaignRow['antiFraud'];
  requireRewardApproval?: boolean;
  pointsConversion?: CampaignRow['pointsConversion'];
};

export async function createCampaign(ctx: Ctx, accountId: string, input: CampaignInput) {
  await requireAccount(ctx, accountId);
  const now = ctx.clock.now();
  // One transaction: a failed pointsConversion check must not leave the campaign behind.
  return unitOfWork(ctx, async (tx) => {
    const { db } = tx;
    const [row] = await db
      .insert(campaigns)
      .values({
        id: newCampaignId(),
        accountId,
        name: input.name,
        currencyISO: (input.currencyISO ?? 'USD').toUpperCase(),
        status: input.status ?? 'DRAFT',
        antiFraud: input.antiFraud ?? null,
        requireRewardApproval: input.requireRewardApproval ?? false,
        pointsConversion: input.pointsConversion ?? null,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    if (input.pointsConversion)
      await assertRewardInCampaign(tx, row!.id, input.pointsConversion.rewardId, 'pointsConversion.rewardId');
    return serializeCampaignForOperator(row!, []);
  });
}

async function assertRewardInCampaign(ctx: Ctx, campaignId: string, rewardId: string, param: string) {
  const [r] = await ctx.db
    .select({ id: rewards.id })
    .from(rewards)
    .where(and(eq(rewards.id, rewardId), eq(rewards.campaignId, campaignId)))
    .limit(1);
  if (!r)
    throw validationError([
      { location: 'body', param, value: rewardId, msg: 'no such reward in this campaign' },
    ]);
}

async function requireCampaign(ctx: Ctx, campaignId: string, lock = false) {
  const q = ctx.db.select().from(campaigns).where(eq(campaigns.id, campaignId)).limit(1);
  const [row] = lock ? await q.for('update') : await q;
  if (!row) throw notFound(`Campaign ${campaignId}`);
  return row;
}

export async function getCampaignForOperator(ctx: Ctx, campaignId: string) {
  const row = await requireCampaign(ctx, campaignId);
  const rs = await ctx.db.select().from(rewards).where(eq(rewards.campaignId, campaignId));
  return serializeCampaignForOperator(row, rs);
}

/** Changes settings or status. Leaving DELETED is refused; entering COMPLETE records CAMPAIGN_ENDED. */
export async function updateCampaign(ctx: Ctx, campaignId: string, input: Partial<CampaignInput>) {
  const updated = await unitOfWork(ctx, async (tx) => {
    const { db } = tx;
    const before = await requireCampaign(tx, campaignId, true);
    if (before.status === 'DELETED' && input.status && input.status !== 'DELETED') {
      throw invalidState('A deleted campaign cannot change status');
    }
    if (input.pointsConversion)
      await assertRewardInCampaign(
        tx,
        campaignId,
        input.pointsConversion.rewardId,
        'pointsConversion.rewardId',
      );
    const [row] = await db
      .update(campaigns)
      .set({
        ...input,
        ...(input.currencyISO ? { currencyISO: input.currencyISO.toUpperCase() } : {}),
        updatedAt: ctx.clock.now(),
      })
      .where(eq(campaigns.id, campaignId))
      .returning();
    if (input.status === 'COMPLETE' && before.status !== 'COMPLETE') {
      await recordEvents(tx, [
        {
          campaignId,
          type: 'CAMPAIGN_ENDED',
          data: { campaign: campaignRef(row!) },
        },
      ]);
    }
    const rs = await db.select().from(rewards).where(eq(rewards.campaignId, campaignId));
    return serializeCampaignForOperator(row!, rs);
  });
  await ctx.cache?.invalidate('campaign', campaignId);
  return updated;
}

export type RewardInput = Partial<Omit<RewardRow, 'id' | 'campaignId' | 'createdAt'>>;

function checkRewardShape(r: RewardInput) {
  const issues = [];
  if (r.limitDuration !== 'PER_MONTH' && r.numberOfWinners != null) {
    issues.push({
      location: 'body',
      param: 'numberOfWinners',
      value: r.numberOfWinners,
      msg: 'applies only when limitDuration is PER_MONTH',
    });
  }
  if (issues.length) throw validationError(issues);
}

export async function createReward(ctx: Ctx, campaignId: string, input: RewardInput) {
  const campaign = await requireCampaign(ctx, campaignId);
  if (campaign.status === 'DELETED') throw invalidState('The campaign is deleted');
  checkRewardShape(input);
  const [row] = await commitWrite(ctx, () =>
    ctx.db
      .insert(rewards)
      .values({ ...input, id: newId('reward'), campaignId, createdAt: ctx.clock.now() })
      .returning(),
  );
  return serializeReward(row!);
}

export async function updateReward(ctx: Ctx, campaignId: string, rewardId: string, input: RewardInput) {
  return unitOfWork(ctx, async ({ db }) => {
    const [current] = await db
      .select()
      .from(rewards)
      .where(and(eq(rewards.id, rewardId), eq(rewards.campaignId, campaignId)))
      .for('update');
    if (!current) throw notFound(`Reward ${rewardId}`);
    checkRewardShape({ ...current, ...input });
    const [row] = await db.update(rewards).set(input).where(eq(rewards.id, rewardId)).returning();
    return serializeReward(row!);
  });
}
