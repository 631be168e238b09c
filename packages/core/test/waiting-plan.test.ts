import {
  approvalStatement,
  type Ctx,
  removalStatement,
  systemClock,
  waitingFormQuery,
} from '@stampcard/core';
import { formSubmissions, participantRewards } from '@stampcard/db';
import { and, eq, sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeWorld } from '../../../test/support/factories';
import { indexesRead, planAsRun, rowsRead } from '../../../test/support/plans';
import { useTestDb } from '../../../test/support/use';

/**
 * What waits for an operator (rewards to approve, forms to review) has partial indexes of its own, for the
 * console's lists. Statistics taken while nothing waited leave them looking empty; then thousands wait (approval
 * switched on for a busy campaign). A statement that names one reward, or one participant's submission, must
 * read it by its key: through the waiting index it reads everything that waits. Each case reads the plan of the
 * statement the service runs, then of the same statement with the plain condition, to show that the statistics
 * this test makes do mislead the planner.
 */
const testDb = useTestDb();

const WAITING = 3000;

describe('look-ups of one waiting row, with statistics taken while nothing waited', () => {
  let campaignId: string;
  let rewardId: string;

  beforeAll(async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const w = await makeWorld(ctx);
    campaignId = w.campaign.id;
    rewardId = w.reward.id;
    // Rows of participants this test does not make: their foreign keys are not checked while it seeds.
    const seed = async (approved: boolean, status: string, tag: string) =>
      testDb.db.transaction(async (tx) => {
        await tx.execute(sql`set local session_replication_role = replica`);
        await tx.execute(sql`
          insert into ${participantRewards}
            (id, campaign_id, participant_id, reward_id, approved, earned_month, created_at)
          select ${`prw_${tag}_`} || g, ${w.campaign.id}, 'par_' || g, ${w.reward.id}, ${approved}, '2026-11',
            now()
          from generate_series(1, ${WAITING}::int) g`);
        await tx.execute(sql`
          insert into ${formSubmissions} (id, campaign_id, participant_id, reward_id, status, form_data, created_at)
          select ${`frm_${tag}_`} || g, ${w.campaign.id}, 'par_' || g, ${w.reward.id}, ${status}, '{}', now()
          from generate_series(1, ${WAITING}::int) g`);
      });
    await seed(true, 'REVIEWED', 'done');
    await testDb.db.execute(sql`analyze ${participantRewards}`);
    await testDb.db.execute(sql`analyze ${formSubmissions}`);
    await seed(false, 'UNREVIEWED', 'wait');
  });

  it('an approval reads its reward by primary key, not every reward that waits', async () => {
    const plan = await planAsRun(testDb.db, approvalStatement(testDb.db, 'prw_wait_7', new Date()));
    expect(indexesRead(plan)).not.toContain('participant_rewards_waiting_idx');
    expect(rowsRead(plan, 'participant_rewards')).toBeLessThanOrEqual(2);
    // The plain condition, for contrast: the waiting index, all of it.
    const misled = await planAsRun(
      testDb.db,
      sql`update ${participantRewards} set approved = true
        where ${and(eq(participantRewards.id, 'prw_wait_7'), eq(participantRewards.approved, false))}`,
    );
    expect(rowsRead(misled, 'participant_rewards')).toBeGreaterThanOrEqual(WAITING);
  });

  it('a removal reads its reward by primary key too', async () => {
    const plan = await planAsRun(testDb.db, removalStatement(testDb.db, campaignId, 'prw_wait_7'));
    expect(indexesRead(plan)).not.toContain('participant_rewards_waiting_idx');
    expect(rowsRead(plan, 'participant_rewards')).toBeLessThanOrEqual(2);
    const misled = await planAsRun(
      testDb.db,
      sql`delete from ${participantRewards}
        where ${and(
          eq(participantRewards.id, 'prw_wait_7'),
          eq(participantRewards.campaignId, campaignId),
          eq(participantRewards.approved, false),
        )}`,
    );
    expect(rowsRead(misled, 'participant_rewards')).toBeGreaterThanOrEqual(WAITING);
  });

  it('a submission’s check for one already waiting reads that participant’s, not every form that waits', async () => {
    const plan = await planAsRun(testDb.db, waitingFormQuery(testDb.db, 'par_7', rewardId));
    expect(indexesRead(plan)).not.toContain('form_submissions_waiting_idx');
    expect(rowsRead(plan, 'form_submissions')).toBeLessThanOrEqual(2);
    // The plain condition: the waiting index in its order, until it meets this participant's (most of it).
    const misled = await planAsRun(
      testDb.db,
      sql`select id from ${formSubmissions}
        where ${and(
          eq(formSubmissions.participantId, 'par_7'),
          eq(formSubmissions.rewardId, rewardId),
          eq(formSubmissions.status, 'UNREVIEWED'),
        )}
        limit 1`,
    );
    expect(rowsRead(misled, 'form_submissions')).toBeGreaterThan(WAITING / 2);
  });
});
