import { type Ctx, stillQueuedQuery, systemClock } from '@stampcard/core';
import { loyaltyActions } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeWorld } from '../../../test/support/factories';
import { indexesRead, indexFamily, planAsRun, rowsRead } from '../../../test/support/plans';
import { useTestDb } from '../../../test/support/use';
import { settleQueuedActions } from '../src/services/queued-actions';

/**
 * The ledger's statements where PostgreSQL's statistics mislead them the way they do in production: ANALYZE ran
 * while no action was QUEUED (the usual moment: a worker keeps up), so both indexes of QUEUED actions look
 * empty; then a backlog forms (a burst, a worker down, Redis lost). Each statement that names its actions by id
 * must read those, by primary key: through the index of QUEUED actions by participant it reads the whole
 * backlog, for every batch, just when the worker has most to catch up.
 */
const testDb = useTestDb();

/** QUEUED actions when the plans are read: the backlog. */
const BACKLOG = 5000;
/** A worker's batch. */
const BATCH = 32;

describe('the ledger’s look-ups by id, with statistics taken while nothing was QUEUED', () => {
  let campaignId: string;
  let batch: string[];
  let queuedIndexes: Set<string>;

  beforeAll(async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const w = await makeWorld(ctx);
    campaignId = w.campaign.id;
    const ledger = (status: string, tag: string, count: number) => sql`
      insert into ${loyaltyActions} (id, campaign_id, participant_id, reward_id, status, created_at)
      select ${`act_${tag}_`} || lpad(g::text, 6, '0'), ${w.campaign.id}, ${`par_${tag}_`} || (g % 500),
        ${w.reward.id}, ${status}, now()
      from generate_series(1, ${count}::int) g`;
    await testDb.db.execute(ledger('APPLIED', 'old', BACKLOG));
    await testDb.db.execute(sql`analyze ${loyaltyActions}`);
    await testDb.db.execute(ledger('QUEUED', 'new', BACKLOG));
    // One action of each of BATCH participants.
    batch = Array.from({ length: BATCH }, (_, i) => `act_new_${String(i + 1).padStart(6, '0')}`);
    queuedIndexes = new Set([
      ...(await indexFamily(testDb.db, 'loyalty_actions_participant_queued_idx')),
      ...(await indexFamily(testDb.db, 'loyalty_actions_inflight_uq')),
    ]);
  });

  it('the worker’s claim of a batch reads its actions, not the backlog', async () => {
    const claim = settleQueuedActions(
      testDb.db,
      { ids: batch },
      { status: 'APPLIED', appliedAt: new Date() },
    );
    const plan = await planAsRun(testDb.db, claim.returning({ id: loyaltyActions.id }));
    expect(indexesRead(plan).filter((name) => queuedIndexes.has(name))).toEqual([]);
    // Each of the batch looked up once for the lock and once for the update; the backlog is 5,000.
    expect(rowsRead(plan, 'loyalty_actions')).toBeLessThanOrEqual(4 * BATCH);
  });

  it('the relay’s second look reads the actions it names, not the backlog', async () => {
    const plan = await planAsRun(testDb.db, stillQueuedQuery(testDb.db, batch));
    expect(indexesRead(plan).filter((name) => queuedIndexes.has(name))).toEqual([]);
    expect(rowsRead(plan, 'loyalty_actions')).toBeLessThanOrEqual(2 * BATCH);
  });

  it('a participant’s removal still finds its QUEUED actions by the index of those', async () => {
    const reject = settleQueuedActions(
      testDb.db,
      { campaignId, participantId: 'par_new_7' },
      { status: 'REJECTED', reason: 'PARTICIPANT_DELETED' },
    );
    const plan = await planAsRun(testDb.db, reject.returning({ id: loyaltyActions.id }));
    expect(indexesRead(plan).some((name) => queuedIndexes.has(name))).toBe(true);
    // Its ten actions (5,000 over 500 participants), each read for the lock and for the update.
    expect(rowsRead(plan, 'loyalty_actions')).toBeLessThanOrEqual(4 * (BACKLOG / 500));
  });
});
