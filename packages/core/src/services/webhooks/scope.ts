import { campaigns } from '@stampcard/db';
import { and, eq, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { Ctx } from '../../context';
import { notFound } from '../../errors';

/**
 * Whose webhooks a caller may see and change: the operator's are everyone's (no `accountId`); a business's (an
 * ADMIN API key, a portal link) are its own account's. What lies outside is not found, never refused, so that a
 * caller learns nothing of another account's endpoints and messages.
 */
export type WebhookScope = {
  /** Only this account's campaigns. @defaultValue undefined (every account: the operator) */
  accountId?: string;
  /** Only this campaign (of the account): a portal link made for one campaign. @defaultValue undefined */
  campaignId?: string;
};

/** The `campaignId` column holds a campaign of the scope's account; nothing when the scope is everyone's. */
export const inScope = (campaignId: AnyPgColumn, scope: WebhookScope) =>
  and(
    scope.accountId === undefined
      ? undefined
      : sql`${campaignId} in (select ${campaigns.id} from ${campaigns} where ${campaigns.accountId} = ${scope.accountId})`,
    scope.campaignId === undefined ? undefined : eq(campaignId, scope.campaignId),
  );

/** The campaign, when it is in the scope; else 404 (as if it did not exist). */
export async function requireCampaignInScope(ctx: Ctx, campaignId: string, scope: WebhookScope) {
  const [row] = await ctx.db
    .select({ id: campaigns.id, accountId: campaigns.accountId })
    .from(campaigns)
    .where(and(eq(campaigns.id, campaignId), inScope(campaigns.id, scope)));
  if (!row) throw notFound(`Campaign ${campaignId}`);
  return row;
}
