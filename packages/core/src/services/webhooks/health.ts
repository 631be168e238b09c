import { campaigns, webhookEndpoints, webhookMessages } from '@stampcard/db';
import { and, asc, eq, gt, gte, inArray, isNull, or, type SQL, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { Ctx } from '../../context';
import { notFound } from '../../errors';
import { inScope, type WebhookScope } from './scope';
import { type EndpointRow, serializeEndpoint } from './views';

/** The health window: the last 24 hours, hour by hour. */
export const HEALTH_HOURS = 24;

/** Most endpoints one page of `endpointsWithHealth` holds. */
export const ENDPOINTS_PAGE_MAX = 200;

/** An endpoint's pending messages are counted up to this many; past it the list says "more than". */
export const PENDING_COUNT_CAP = 10_000;

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
 * The endpoint's PENDING messages, at most `PENDING_COUNT_CAP + 1` of them: one range of
 * `webhook_messages_pending_idx`, bounded however many a disabled endpoint holds.
 */
const pendingOf = (endpointId: SQL | AnyPgColumn | string) =>
  sql<number>`(select count(*)::int from (select 1 from ${webhookMessages}
    where ${webhookMessages.endpointId} = ${endpointId} and ${webhookMessages.status} = 'PENDING'
    limit ${PENDING_COUNT_CAP + 1}) as pending)`;

const pendingShown = (n: number) => ({
  pending: Math.min(n, PENDING_COUNT_CAP),
  /** More than `pending` wait (the count stopped at `PENDING_COUNT_CAP`). */
  pendingCapped: n > PENDING_COUNT_CAP,
});

/** An endpoint's pending messages, as the list of endpoints shows them (`pending`, `pendingCapped`). */
export async function pendingMessages(ctx: Ctx, endpointId: string) {
  const [row] = await ctx.db.execute<{ n: number }>(sql`select ${pendingOf(endpointId)} as n`);
  return pendingShown(Number(row?.n ?? 0));
}

/** Which endpoints a page of `endpointsWithHealth` shows. */
export type EndpointListQuery = {
  /** Only this campaign's (within the scope). @defaultValue undefined (every campaign of the scope) */
  campaignId?: string;
  /** The last endpoint id of the previous page. @defaultValue undefined (the first page) */
  after?: string;
  /** At most this many, 1 to `ENDPOINTS_PAGE_MAX`. */
  limit: number;
};

/**
 * The endpoints of a scope (an account's, one campaign's, or everyone's), oldest first, cursor-paged by
 * (created_at, id), each with its campaign's name, its pending messages (counted through
 * `webhook_messages_pending_idx`, at most `PENDING_COUNT_CAP`: `pendingCapped` says when there are more) and
 * its 24 hours of health (`endpointHealth`): the console's and the portal's list of endpoints.
 */
export async function endpointsWithHealth(ctx: Ctx, scope: WebhookScope, query: EndpointListQuery) {
  const limit = Math.min(Math.max(1, Math.floor(query.limit)), ENDPOINTS_PAGE_MAX);
  let cursor: SQL | undefined;
  if (query.after !== undefined) {
    const [from] = await ctx.db
      .select({ createdAt: webhookEndpoints.createdAt, id: webhookEndpoints.id })
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, query.after), inScope(webhookEndpoints.campaignId, scope)));
    if (!from) throw notFound(`Webhook endpoint ${query.after}`);
    cursor = or(
      gt(webhookEndpoints.createdAt, from.createdAt),
      and(eq(webhookEndpoints.createdAt, from.createdAt), gt(webhookEndpoints.id, from.id)),
    );
  }
  const rows = await ctx.db
    .select({
      endpoint: webhookEndpoints,
      campaignName: campaigns.name,
      pending: pendingOf(webhookEndpoints.id),
    })
    .from(webhookEndpoints)
    .innerJoin(campaigns, eq(campaigns.id, webhookEndpoints.campaignId))
    .where(
      and(
        inScope(webhookEndpoints.campaignId, scope),
        query.campaignId === undefined ? undefined : eq(webhookEndpoints.campaignId, query.campaignId),
        isNull(webhookEndpoints.deletedAt),
        cursor,
      ),
    )
    .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id))
    .limit(limit + 1);
  const shown = rows.slice(0, limit);
  const health = await endpointHealth(
    ctx,
    shown.map((r) => r.endpoint.id),
  );
  const now = ctx.clock.now();
  const more = rows.length > limit;
  return {
    endpoints: shown.map((r) => ({
      ...serializeEndpoint(r.endpoint as EndpointRow, now),
      campaignName: r.campaignName,
      ...pendingShown(r.pending),
      health: health.get(r.endpoint.id)!,
    })),
    more,
    nextAfter: more ? (shown.at(-1)?.endpoint.id ?? null) : null,
  };
}
