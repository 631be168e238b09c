import {
  type AccountInput,
  type CampaignInput,
  type Ctx,
  createAccount,
  createApiKey,
  createCampaign,
  createReward,
  createUser,
  newId,
  type RewardInput,
  type UserInput,
} from '@stampcard/core';
import { webhookEndpoints } from '@stampcard/db';

let seq = 0;
const unique = () => `${Date.now().toString(36)}${(seq++).toString(36)}`;

/**
 * The limits test accounts get unless a test asks for others: high enough that tests which fire many
 * requests, or many at once, are never slowed or refused. Tests of the limits pass `rateLimits: null` (the
 * seed's defaults) or their own.
 */
export const TEST_RATE_LIMITS = {
  second: 100_000,
  minute: 100_000,
  hour: 1_000_000,
  concurrency: 1000,
  slowdownAfter: 0,
};

export async function makeAccount(ctx: Ctx, overrides: Partial<AccountInput> = {}) {
  return createAccount(ctx, {
    name: `Business ${unique()}`,
    plan: 'GROWTH',
    rateLimits: TEST_RATE_LIMITS,
    ...overrides,
  });
}

/** A user with an API key; ADMIN unless told otherwise. */
export async function makeUserWithKey(ctx: Ctx, accountId: string, overrides: Partial<UserInput> = {}) {
  const user = await createUser(ctx, accountId, {
    email: `user-${unique()}@example.com`,
    role: 'ADMIN',
    ...overrides,
  });
  const key = await createApiKey(ctx, user.id);
  return { user, key: key.key, keyId: key.id };
}

export async function makeCampaign(ctx: Ctx, accountId: string, overrides: Partial<CampaignInput> = {}) {
  return createCampaign(ctx, accountId, {
    name: `Program ${unique()}`,
    status: 'IN_PROGRESS',
    currencyISO: 'USD',
    ...overrides,
  });
}

export async function makeReward(ctx: Ctx, campaignId: string, overrides: RewardInput = {}) {
  return createReward(ctx, campaignId, {
    title: `Reward ${unique()}`,
    description: 'A thank-you',
    ...overrides,
  });
}

/** An account on a paid plan, an admin key, a running campaign and one reward (overridable). */
export async function makeWorld(
  ctx: Ctx,
  opts: { account?: Partial<AccountInput>; campaign?: Partial<CampaignInput>; reward?: RewardInput } = {},
) {
  const account = await makeAccount(ctx, opts.account);
  const { user, key, keyId } = await makeUserWithKey(ctx, account.id);
  const campaign = await makeCampaign(ctx, account.id, opts.campaign);
  const reward = await makeReward(ctx, campaign.id, opts.reward);
  return { account, user, key, keyId, campaign, reward };
}

/**
 * A webhook endpoint row written straight to its table (no API, no address check): `NOTIFY`, every event type,
 * a fixed secret, made at `ctx.clock`'s now unless `overrides` say otherwise. Answers its id.
 */
export async function makeEndpoint(
  ctx: Ctx,
  owner: { accountId: string; campaignId: string },
  overrides: Partial<typeof webhookEndpoints.$inferInsert> = {},
): Promise<string> {
  const id = overrides.id ?? newId('webhookEndpoint');
  const now = ctx.clock.now();
  await ctx.db.insert(webhookEndpoints).values({
    id,
    ...owner,
    url: `https://hooks.example.com/${id}`,
    kind: 'NOTIFY',
    eventTypes: [],
    secret: `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`,
    createdAt: now,
    updatedAt: now,
    ...overrides,
  });
  return id;
}

export const uniqueEmail = (tag = 'p') => `${tag}-${unique()}@example.com`;
