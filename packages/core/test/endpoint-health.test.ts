import {
  type Ctx,
  DomainError,
  endpointsWithHealth,
  HEALTH_HOURS,
  newId,
  PENDING_COUNT_CAP,
  pendingMessages,
} from '@stampcard/core';
import { type MessageStatus, webhookMessages } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { makeCampaign, makeEndpoint, makeWorld } from '../../../test/support/factories';
import { useTestDb } from '../../../test/support/use';

/**
 * The list of endpoints the console and the portal show, against PostgreSQL: a scope's endpoints only, one
 * campaign's or every campaign's, paged by (created_at, id); each with its pending messages (counted up to a
 * bound) and its last 24 hours hour by hour.
 */
const testDb = useTestDb();

const HOUR = 3600_000;
/** A fixed "now", half past an hour, so that "n hours ago" falls in the n-th hour before the current one. */
const NOW = new Date(Date.UTC(2026, 4, 12, 14, 30));
const clock = { now: () => new Date(NOW) };

describe('endpointsWithHealth', () => {
  it("lists a scope's endpoints, paged and filtered by campaign, with pending counts and hourly health", async () => {
    const ctx: Ctx = { db: testDb.db, clock };
    const mine = await makeWorld(ctx);
    const second = await makeCampaign(ctx, mine.account.id);
    const theirs = await makeWorld(ctx);
    let made = 0;
    const endpoint = async (campaignId: string, more: { deletedAt?: Date } = {}) => {
      const accountId = campaignId === theirs.campaign.id ? theirs.account.id : mine.account.id;
      // Each a second apart: the list's order is (created_at, id).
      const at = new Date(NOW.getTime() - 3600_000 * 48 + 1000 * made++);
      return makeEndpoint(ctx, { accountId, campaignId }, { createdAt: at, updatedAt: at, ...more });
    };
    const a = await endpoint(mine.campaign.id);
    const b = await endpoint(mine.campaign.id);
    const gone = await endpoint(mine.campaign.id, { deletedAt: NOW });
    const c = await endpoint(second.id);
    const d = await endpoint(mine.campaign.id);
    const other = await endpoint(theirs.campaign.id);

    const message = (endpointId: string, status: MessageStatus, hoursAgo: number) => {
      const at = new Date(NOW.getTime() - hoursAgo * HOUR);
      return {
        id: newId('webhookMessage'),
        endpointId,
        campaignId: mine.campaign.id,
        eventType: 'WEBHOOK_TEST',
        status,
        nextAttemptAt: at,
        createdAt: at,
        updatedAt: at,
      };
    };
    await ctx.db
      .insert(webhookMessages)
      .values([
        message(a, 'SUCCEEDED', 0),
        message(a, 'SUCCEEDED', 0),
        message(a, 'PENDING', 0),
        message(a, 'FAILED', 3),
        message(a, 'DISCARDED', 3),
        message(a, 'SUCCEEDED', 23),
        message(a, 'SUCCEEDED', 25),
        message(a, 'PENDING', 30),
      ]);

    const scope = { accountId: mine.account.id };
    const first = await endpointsWithHealth(ctx, scope, { limit: 2 });
    expect(first.endpoints.map((e) => e.id)).toEqual([a, b]);
    expect(first.more).toBe(true);
    expect(first.nextAfter).toBe(b);
    const rest = await endpointsWithHealth(ctx, scope, { limit: 2, after: first.nextAfter! });
    expect(rest.endpoints.map((e) => e.id)).toEqual([c, d]);
    expect(rest.more).toBe(false);
    expect(rest.nextAfter).toBeNull();
    expect(rest.endpoints[0]!.campaignName).toBe(second.name);
    expect([...first.endpoints, ...rest.endpoints].some((e) => e.id === gone || e.id === other)).toBe(false);

    const [shown] = first.endpoints;
    expect(shown!.pending).toBe(2);
    expect(shown!.pendingCapped).toBe(false);
    const hours = shown!.health;
    expect(hours).toHaveLength(HEALTH_HOURS);
    expect(hours.at(-1)).toMatchObject({ delivered: 2, failed: 0, pending: 1 });
    expect(hours.at(-1)!.at).toBe(Date.UTC(2026, 4, 12, 14));
    expect(hours.at(-4)).toMatchObject({ delivered: 0, failed: 2, pending: 0 });
    expect(hours[0]).toMatchObject({ delivered: 1, failed: 0, pending: 0 });
    // The 25 and 30 hours old ones are outside the window; every other hour is empty.
    const total = hours.reduce((n, h) => n + h.delivered + h.failed + h.pending, 0);
    expect(total).toBe(6);
    expect(first.endpoints[1]!.health.every((h) => h.delivered + h.failed + h.pending === 0)).toBe(true);

    // One campaign's; another account's campaign shows nothing through this scope; the operator's sees all.
    const one = await endpointsWithHealth(ctx, scope, { limit: 10, campaignId: second.id });
    expect(one.endpoints.map((e) => e.id)).toEqual([c]);
    const foreign = await endpointsWithHealth(ctx, scope, { limit: 10, campaignId: theirs.campaign.id });
    expect(foreign.endpoints).toEqual([]);
    const everyone = await endpointsWithHealth(ctx, {}, { limit: 200 });
    expect(everyone.endpoints.map((e) => e.id)).toEqual(expect.arrayContaining([a, b, c, d, other]));
    // A portal link made for one campaign: that campaign's only.
    const link = await endpointsWithHealth(ctx, { ...scope, campaignId: mine.campaign.id }, { limit: 10 });
    expect(link.endpoints.map((e) => e.id)).toEqual([a, b, d]);

    // A cursor outside the scope is not found, as if it did not exist.
    const refused = await endpointsWithHealth(ctx, scope, { limit: 2, after: other }).catch((e) => e);
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused.code).toBe('NOT_FOUND');
  });

  it('counts pending messages up to a bound, and says when there are more', async () => {
    const ctx: Ctx = { db: testDb.db, clock };
    const w = await makeWorld(ctx);
    const id = await makeEndpoint(
      ctx,
      { accountId: w.account.id, campaignId: w.campaign.id },
      { enabled: false, createdAt: NOW, updatedAt: NOW },
    );
    const at = NOW.toISOString();
    await ctx.db.execute(sql`
      insert into ${webhookMessages}
        (id, endpoint_id, campaign_id, event_type, status, next_attempt_at, created_at, updated_at)
      select 'msg_cap_' || n, ${id}, ${w.campaign.id}, 'WEBHOOK_TEST', 'PENDING', ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
      from generate_series(1, ${PENDING_COUNT_CAP + 5}) as n`);
    expect(await pendingMessages(ctx, id)).toEqual({ pending: PENDING_COUNT_CAP, pendingCapped: true });
    const [listed] = (await endpointsWithHealth(ctx, { accountId: w.account.id }, { limit: 5 })).endpoints;
    expect(listed).toMatchObject({ id, pending: PENDING_COUNT_CAP, pendingCapped: true });

    const empty = await makeWorld(ctx);
    const none = await makeEndpoint(
      ctx,
      { accountId: empty.account.id, campaignId: empty.campaign.id },
      { createdAt: NOW, updatedAt: NOW },
    );
    expect(await pendingMessages(ctx, none)).toEqual({ pending: 0, pendingCapped: false });
  });
});
