import {
  type Claim,
  type Ctx,
  claimStatement,
  deliveryStatement,
  loadAndClaimStatement,
  loadDeliveries,
  type Success,
  successesStatement,
  systemClock,
} from '@stampcard/core';
import { events, webhookMessages } from '@stampcard/db';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { makeEndpoint, makeWorld } from '../../../test/support/factories';
import { burstOfMessages, planAsRun, planOf, rowsRead } from '../../../test/support/plans';
import { useTestDb } from '../../../test/support/use';

/**
 * The dispatcher's claim and its batch of successes name their messages by id. After a replay (or a backlog)
 * made thousands of messages PENDING, PostgreSQL's statistics still say what they said before: that the
 * pending index is all but empty. These tests make that moment and read, in `EXPLAIN ANALYZE`, how many rows
 * of the messages' table each statement went through: the messages it names, not every pending one.
 */
const testDb = useTestDb();

describe("the dispatcher's statements, against statistics taken before a replay", () => {
  it('a claim and a batch of successes read the messages they name, not every pending one', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const w = await makeWorld(ctx);
    const endpointId = await makeEndpoint(ctx, { accountId: w.account.id, campaignId: w.campaign.id });
    // 3,000 delivered messages, and statistics that say so.
    await ctx.db.execute(sql`
      insert into ${webhookMessages}
        (id, endpoint_id, campaign_id, event_type, status, next_attempt_at, created_at, updated_at, event_at)
      select 'msg_plan_' || lpad(g::text, 5, '0'), ${endpointId}, ${w.campaign.id}, 'TEST', 'SUCCEEDED',
        now(), now(), now(), now()
      from generate_series(1, 3000) g`);
    await ctx.db.execute(sql`analyze ${webhookMessages}`);
    // A replay makes every one of them PENDING again.
    await ctx.db
      .update(webhookMessages)
      .set({ status: 'PENDING', generation: 1 })
      .where(eq(webhookMessages.endpointId, endpointId));
    const named = await ctx.db
      .select({ id: webhookMessages.id, eventAt: webhookMessages.eventAt })
      .from(webhookMessages)
      .where(eq(webhookMessages.endpointId, endpointId))
      .orderBy(webhookMessages.id)
      .limit(16);
    const claims: Claim[] = named.map((m) => ({ messageId: m.id, generation: 1, eventAt: m.eventAt }));

    // Without the planner's misstep this reads the 16 claimed (the join may look each up more than once);
    // with it, every pending message of the endpoint: 3,000.
    const claimRead = rowsRead(await planOf(ctx.db, claimStatement(claims, 60_000)), 'webhook_messages');
    expect(claimRead).toBeGreaterThanOrEqual(16);
    expect(claimRead).toBeLessThan(100);
    // A batch's load, which claims as it reads: its claim and its read, 16 each (not every pending message).
    const loadRead = rowsRead(
      await planAsRun(
        testDb.db,
        loadAndClaimStatement(
          named.map((m) => ({ messageId: m.id, generation: 1 })),
          60_000,
        ),
      ),
      'webhook_messages',
    );
    expect(loadRead).toBeGreaterThanOrEqual(32);
    expect(loadRead).toBeLessThan(200);

    const now = new Date();
    const successes: Success[] = named.map((m, i) => ({
      id: `del_plan_${i}`,
      messageId: m.id,
      generation: 1,
      eventAt: m.eventAt,
      endpointId,
      attemptedAt: now,
      statusCode: 200,
      latencyMs: 5,
      responseExcerpt: null,
    }));
    const successRead = rowsRead(await planOf(ctx.db, successesStatement(successes)), 'webhook_messages');
    expect(successRead).toBeGreaterThanOrEqual(16);
    expect(successRead).toBeLessThan(200);
    // The statements did their work: the 16 messages are recorded delivered, the others still pending.
    const counts = await ctx.db.execute<{ status: string; n: number }>(sql`
      select status, count(*)::int as n from ${webhookMessages} where endpoint_id = ${endpointId} group by status`);
    expect(Object.fromEntries(counts.map((c) => [c.status, c.n]))).toEqual({ PENDING: 2984, SUCCEEDED: 16 });
  });

  it("a load of deliveries looks each message's event up, whatever a burst of events did to the statistics", async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const w = await makeWorld(ctx);
    const endpointId = await makeEndpoint(ctx, { accountId: w.account.id, campaignId: w.campaign.id });
    // Statistics taken while the tables are still small, then a burst: 3,000 events recorded in one moment and a
    // message of each, to deliver.
    await ctx.db.execute(sql`analyze ${events}`);
    await ctx.db.execute(sql`analyze ${webhookMessages}`);
    const ids = await burstOfMessages(ctx.db, {
      campaignId: w.campaign.id,
      endpointId,
      count: 3000,
      tag: 'load',
      participantPrefix: 'par_plan_',
      take: 64,
    });

    // 64 messages and their 64 events (the join may look one up more than once); the plan that hashed the
    // events' partition read all 3,000.
    const read = rowsRead(await planOf(ctx.db, deliveryStatement(ids)), 'events');
    expect(read).toBeGreaterThanOrEqual(64);
    expect(read).toBeLessThan(300);
    // So does the load that claims as it reads (a batch's).
    const claiming = await planAsRun(
      testDb.db,
      loadAndClaimStatement(
        ids.map((messageId) => ({ messageId, generation: 0 })),
        60_000,
      ),
    );
    expect(rowsRead(claiming, 'events')).toBeGreaterThanOrEqual(64);
    expect(rowsRead(claiming, 'events')).toBeLessThan(300);
    // And each delivery carries its event.
    const loaded = await loadDeliveries(
      ctx,
      ids.map((messageId) => ({ messageId, generation: 0 })),
    );
    expect(
      loaded.filter((d) => 'body' in d && JSON.parse(d.body).type === 'LOYALTY_ACTION_APPLIED'),
    ).toHaveLength(64);
    const first = loaded[0] as { body: string; recordedAt: Date | null };
    expect(JSON.parse(first.body).data.participant.id).toBe('par_plan_1');
    expect(first.recordedAt).toBeInstanceOf(Date);
  });
});
