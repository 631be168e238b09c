import {
  accounts,
  apiKeys,
  campaigns,
  type Plan,
  type RateLimitOverrides,
  type Role,
  type Tx,
  users,
} from '@stampcard/db';
import { and, eq, isNull, sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { notAuthorized, notFound } from '../errors';
import { hashApiKey } from '../ids';
import type { CampaignRow } from '../serialize';

/** Who is calling: the API key's user and account. */
export type Principal = {
  apiKeyId: string;
  userId: string;
  accountId: string;
  role: Role;
  campaignIds: string[];
  plan: Plan;
  rateLimits: RateLimitOverrides | null;
};

/**
 * Every request runs these two look-ups: their SQL is built once per database handle, not per call.
 */
function buildPrepared(db: Tx) {
  return {
    principalByKeyHash: db
      .select({
        apiKeyId: apiKeys.id,
        userId: users.id,
        accountId: accounts.id,
        role: users.role,
        campaignIds: users.campaignIds,
        plan: accounts.plan,
        rateLimits: accounts.rateLimits,
      })
      .from(apiKeys)
      .innerJoin(users, eq(users.id, apiKeys.userId))
      .innerJoin(accounts, eq(accounts.id, users.accountId))
      .where(and(eq(apiKeys.keyHash, sql.placeholder('hash')), isNull(apiKeys.revokedAt)))
      .limit(1)
      .prepare('principal_by_key_hash'),
    campaignById: db
      .select()
      .from(campaigns)
      .where(eq(campaigns.id, sql.placeholder('id')))
      .limit(1)
      .prepare('campaign_by_id'),
  };
}
const preparedByDb = new WeakMap<Tx, ReturnType<typeof buildPrepared>>();
function prepared(db: Tx) {
  let p = preparedByDb.get(db);
  if (!p) {
    p = buildPrepared(db);
    preparedByDb.set(db, p);
  }
  return p;
}

/**
 * The principal of a key this process already knows (its lookup cache), without a round trip; undefined when
 * it would take one (`authenticate` then decides). A FREE plan's key is never answered here.
 */
export function cachedPrincipal(ctx: Ctx, key: string | undefined): Principal | undefined {
  if (!key || !ctx.cache) return undefined;
  const row = ctx.cache.get<Principal>('principal', hashApiKey(key));
  return row && row.plan !== 'FREE' ? row : undefined;
}

/**
 * Resolves a bearer key. Every failure is a 403, as the seed says: missing, revoked or mistyped key, free plan.
 * A key found is kept in `ctx.cache` (when there is one) under its hash, never the key itself.
 */
export async function authenticate(ctx: Ctx, key: string | undefined): Promise<Principal> {
  if (!key) throw notAuthorized('Missing API key: send the header Authorization: Bearer <API_KEY>');
  const hash = hashApiKey(key);
  let row = ctx.cache?.get<Principal>('principal', hash);
  if (!row) {
    [row] = await prepared(ctx.db).principalByKeyHash.execute({ hash });
    if (row) ctx.cache?.set('principal', hash, row);
  }
  if (!row) throw notAuthorized('The API key is revoked or mistyped');
  if (row.plan === 'FREE') throw notAuthorized('The REST API is available on paid plans only');
  return row;
}

export function canReachCampaign(p: Principal, campaign: Pick<CampaignRow, 'id' | 'accountId'>): boolean {
  if (campaign.accountId !== p.accountId) return false;
  return p.role === 'ADMIN' || p.campaignIds.includes(campaign.id);
}

/**
 * The campaign the caller names, if the caller may reach it: a missing or DELETED campaign is a 404,
 * another account's campaign or one a MEMBER has no API access to is a 403. The row may come from
 * `ctx.cache`: its settings are current (every change invalidates it) but its counters may be a few seconds
 * old, so a read that shows counters passes `{ fresh: true }`.
 */
export async function loadCampaignFor(
  ctx: Ctx,
  p: Principal,
  campaignId: string,
  opts: { fresh?: boolean } = {},
): Promise<CampaignRow> {
  let campaign = opts.fresh ? undefined : ctx.cache?.get<CampaignRow>('campaign', campaignId);
  if (!campaign) {
    [campaign] = await prepared(ctx.db).campaignById.execute({ id: campaignId });
    if (campaign) ctx.cache?.set('campaign', campaignId, campaign);
  }
  if (!campaign || campaign.status === 'DELETED') throw notFound(`Campaign ${campaignId}`);
  if (campaign.accountId !== p.accountId) {
    throw notAuthorized('This API key cannot reach that campaign: it belongs to another account');
  }
  if (!canReachCampaign(p, campaign)) {
    throw notAuthorized(
      'This API key has no API access to that campaign: an Admin role or campaign access is needed',
    );
  }
  return campaign;
}
