import { campaigns, webhookEndpoints, webhookMessages } from '@stampcard/db';
import { and, asc, eq, gte, inArray, isNull, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import type { WebhookScope } from './scope';
import { type EndpointRow, serializeEndpoint } from './views';

/** The health window: the last 24 hours, hour by hour. */
export const HEALTH_HOURS = 24;

/** Endpoints one page of an account's list shows; the next page starts after the last one shown. */
export const ACCOUNT_ENDPOINTS_PAGE = 50;

/** One hour of an endpoint's messages by outcome (made in that hour, as they stand now). */
export type HealthHour = { at: number; delivered: number; failed: number; pending: number };

const HOUR = 3600 * 1000;

/**
 * Each endpoint's last 24 hours, hour by hour (the last is the current, partial one): its messages made in
 * each hour by where they stand, delivered, failed (given up or discarded) or pending. One statement over the
 * endpoints' range of `webhook_messages_endpoint_idx` (endpoint, created_at).
 */
export async function endpointHealth(ctx: Ctx, endpointIds: string[]): Promise<Map<string, HealthHour[]>> {
  const now = ctx.clock.now().getTime();
  const first = Math.floor(now / HOUR) * HOUR - (HEALTH_HOURS - 1) * HOUR;
  const out = new Map<string, HealthHour[]>();
  for (const id of endpointIds) {
    out.set(
      id,
      Array.from({ length: HEALTH_HOURS }, (_, i) => ({
        at: first + i * HOUR,
        delivered: 0,
        failed: 0,
        pending: 0,
      })),
    );
  }
  if (endpointIds.length === 0) return out;
  const hour = sql<Date>`date_trunc('hour', ${webhookMessages.createdAt})`;
  const rows = await ctx.db
    .select({
      endpointId: webhookMessages.endpointId,
      hour,
      delivered: sql<number>`count(*) filter (where ${webhookMessages.status} = 'SUCCEEDED')::int`,
      failed: sql<number>`count(*) filter (where ${webhookMessages.status} in ('FAILED', 'DISCARDED'))::int`,
      pending: sql<number>`count(*) filter (where ${webhookMessages.status} = 'PENDING')::int`,
    })
    .from(webhookMessages)
    .where(
      and(inArray(webhookMessages.endpointId, endpointIds), gte(webhookMessages.createdAt, new Date(first))),
    )
    .groupBy(webhookMessages.endpointId, hour);
  for (const r of rows) {
    const slot = out.get(r.endpointId)?.[Math.floor((new Date(r.hour).getTime() - first) / HOUR)];
    if (slot) Object.assign(slot, { delivered: r.delivered, failed: r.failed, pending: r.pending });
  }
  return out;
}

/**
 * An account's endpoints in every campaign (or in one), oldest first, each with its campaign's name and its
 * 24 hours of health, a page at a time: the console's and the portal's webhook page.
 */
export async function accountEndpoints(
  ctx: Ctx,
  scope: Required<Pick<WebhookScope, 'accountId'>> & WebhookScope,
  page: { after?: string } = {},
) {
  const { accountId, campaignId } = scope;
  // Oldest first, then id: the page after an endpoint of the account (one of another account is no cursor).
  const after = page.after
    ? sql`(${webhookEndpoints.createdAt}, ${webhookEndpoints.id}) > (select e.created_at, e.id from ${webhookEndpoints} e
        join ${campaigns} c on c.id = e.campaign_id where e.id = ${page.after} and c.account_id = ${accountId})`
    : undefined;
  const rows = await ctx.db
    .select({ endpoint: webhookEndpoints, campaignName: campaigns.name })
    .from(webhookEndpoints)
    .innerJoin(campaigns, eq(campaigns.id, webhookEndpoints.campaignId))
    .where(
      and(
        eq(campaigns.accountId, accountId),
        campaignId === undefined ? undefined : eq(campaigns.id, campaignId),
        isNull(webhookEndpoints.deletedAt),
        after,
      ),
    )
    .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id))
    .limit(ACCOUNT_ENDPOINTS_PAGE + 1);
  const shown = rows.slice(0, ACCOUNT_ENDPOINTS_PAGE);
  const health = await endpointHealth(
    ctx,
    shown.map((r) => r.endpoint.id),
  );
  const now = ctx.clock.now();
  return {
    endpoints: shown.map((r) => ({
      ...serializeEndpoint(r.endpoint as EndpointRow, now),
      campaignName: r.campaignName,
      health: health.get(r.endpoint.id)!,
    })),
    more: rows.length > ACCOUNT_ENDPOINTS_PAGE,
    nextAfter: rows.length > ACCOUNT_ENDPOINTS_PAGE ? shown.at(-1)!.endpoint.id : null,
  };
}
