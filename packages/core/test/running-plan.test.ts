import { backlogOfStep, type Ctx, deliveryStatement, erasureOfStep, systemClock } from '@stampcard/core';
import { erasures, webhookEndpoints } from '@stampcard/db';
import { and, eq, sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeEndpoint, makeWorld } from '../../../test/support/factories';
import { burstOfMessages, indexesRead, planAsRun, planOf, rowsRead } from '../../../test/support/plans';
import { useTestDb } from '../../../test/support/use';

/**
 * Erasures and endpoints' backlog operations have a partial index of those RUNNING, for the relay's sweep.
 * Statistics taken while none ran leave it looking empty; then thousands run (a mass deletion of participants
 * with long histories, of endpoints). A statement that names one of them must read it by its key: through
 * that index it reads every one that runs. Each case reads the plan of the statement the service runs, then of
 * the same statement with the plain condition, to show that the statistics this test makes do mislead the
 * planner.
 */
const testDb = useTestDb();

const RUNNING = 3000;

describe('look-ups of one running erasure or backlog operation, with statistics taken while none ran', () => {
  let ctx: Ctx;
  let world: Awaited<ReturnType<typeof makeWorld>>;

  beforeAll(async () => {
    ctx = { db: testDb.db, clock: systemClock };
    world = await makeWorld(ctx);
    const w = world;
    // Rows of participants this test does not make: their foreign keys are not checked while it seeds.
    const seed = (state: string, tag: string) =>
      testDb.db.transaction(async (tx) => {
        await tx.execute(sql`set local session_replication_role = replica`);
        await tx.execute(sql`
          insert into ${erasures} (participant_id, account_id, campaign_id, state, phase, created_at, touched_at)
          select ${`par_${tag}_`} || g, ${w.account.id}, ${w.campaign.id}, ${state}, 'EVENTS', now(), now()
          from generate_series(1, ${RUNNING}::int) g`);
        await tx.execute(sql`
          insert into ${webhookEndpoints}
            (id, account_id, campaign_id, url, kind, secret, created_at, updated_at, backlog_kind, backlog_state,
             backlog_touched_at)
          select ${`wep_${tag}_`} || g, ${w.account.id}, ${w.campaign.id}, 'https://example.com/hook', 'FULFILMENT',
            'whsec_x', now(), now(), 'DISCARD', ${state}, now()
          from generate_series(1, ${RUNNING}::int) g`);
      });
    await seed('DONE', 'done');
    await testDb.db.execute(sql`analyze ${erasures}`);
    await testDb.db.execute(sql`analyze ${webhookEndpoints}`);
    await seed('RUNNING', 'running');
  });

  it("an erasure's step reads its erasure by the participant's key, not every erasure that runs", async () => {
    const plan = await planAsRun(
      testDb.db,
      erasureOfStep(testDb.db, { participantId: 'par_running_7', batch: 0 }),
    );
    expect(indexesRead(plan)).not.toContain('erasures_running_idx');
    expect(rowsRead(plan, 'erasures')).toBe(1);
    // The plain condition, for contrast: the running index, all of it.
    const misled = await planAsRun(
      testDb.db,
      sql`select * from ${erasures}
        where ${and(eq(erasures.participantId, 'par_running_7'), eq(erasures.batches, 0), eq(erasures.state, 'RUNNING'))}
        for update`,
    );
    expect(rowsRead(misled, 'erasures')).toBeGreaterThanOrEqual(RUNNING);
  });

  it("a backlog operation's step reads its endpoint by key, not every operation that runs", async () => {
    const step = { endpointId: 'wep_running_7', operation: 0, batch: 0 };
    const plan = await planAsRun(testDb.db, backlogOfStep(testDb.db, step));
    expect(indexesRead(plan)).not.toContain('webhook_endpoints_backlog_idx');
    expect(rowsRead(plan, 'webhook_endpoints')).toBe(1);
    const misled = await planAsRun(
      testDb.db,
      sql`select * from ${webhookEndpoints}
        where ${and(
          eq(webhookEndpoints.id, step.endpointId),
          eq(webhookEndpoints.backlogOperation, 0),
          eq(webhookEndpoints.backlogBatches, 0),
          eq(webhookEndpoints.backlogState, 'RUNNING'),
        )}
        for update`,
    );
    expect(rowsRead(misled, 'webhook_endpoints')).toBeGreaterThanOrEqual(RUNNING);
  });

  it("a load of deliveries looks each event's participant's erasure up by key, whatever erasures run", async () => {
    const endpointId = await makeEndpoint(ctx, {
      accountId: world.account.id,
      campaignId: world.campaign.id,
    });
    const ids = await burstOfMessages(ctx.db, {
      campaignId: world.campaign.id,
      endpointId,
      count: 64,
      tag: 'erasing',
      participantPrefix: 'par_running_',
      take: 64,
    });
    // Each message's erasure by its participant's key: 64 look-ups (each one found), not every erasure that runs.
    const plan = await planOf(ctx.db, deliveryStatement(ids));
    expect(indexesRead(plan)).not.toContain('erasures_running_idx');
    expect(rowsRead(plan, 'erasures')).toBe(64);
  });
});
