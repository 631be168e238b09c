import {
  type Ctx,
  fanOutEvents,
  fanOutStatement,
  type NewEvent,
  recordEvents,
  systemClock,
} from '@stampcard/core';
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeEndpoint, makeWorld } from '../../../test/support/factories';
import { indexesRead, indexFamily, nodesOf, planAsRun } from '../../../test/support/plans';
import { useTestDb } from '../../../test/support/use';

/**
 * The fan-out's plan where PostgreSQL's statistics mislead it the way they do in production: ANALYZE ran while
 * no event was in flight, so both partial indexes of undispatched events look empty, then hundreds of events
 * are in flight. Each look-up by id or by participant must stay on its own index: on the sweep's index of every
 * undispatched event it reads them all, for each event of the fan-out.
 */
const testDb = useTestDb();

/** Events in flight when the plans are read. */
const IN_FLIGHT = 300;

/**
 * A campaign with an endpoint that takes every event (ordered by participant with `ordered`), and its events:
 * `events(count, tag)` is one LOYALTY_ACTION_APPLIED event for each of participants `<tag>_0` to `<tag>_<count-1>`.
 */
async function campaignWithEndpoint(ctx: Ctx, ordered = false) {
  const w = await makeWorld(ctx);
  const owner = { accountId: w.account.id, campaignId: w.campaign.id };
  await makeEndpoint(ctx, owner, {
    eventTypes: [],
    ...(ordered ? { ordering: 'PARTICIPANT' as const } : {}),
  });
  const campaign = { id: w.campaign.id, name: 'c', status: 'IN_PROGRESS' as const, currencyISO: 'USD' };
  return {
    events: (count: number, tag: string): NewEvent[] =>
      Array.from(
        { length: count },
        (_, n) =>
          ({
            campaignId: w.campaign.id,
            type: 'LOYALTY_ACTION_APPLIED',
            data: { participant: { id: `${tag}_${n}` }, campaign },
          }) as NewEvent,
      ),
  };
}

describe("fan-out's plan with statistics taken while nothing was in flight", () => {
  let ctx: Ctx;
  let inFlight: string[];
  let sweepIndexes: Set<string>;

  beforeAll(async () => {
    ctx = { db: testDb.db, clock: systemClock };
    const { events } = await campaignWithEndpoint(ctx);
    await recordEvents(ctx, events(2000, 'prt'));
    await testDb.db.execute(sql`update events set dispatched_at = now()`);
    await testDb.db.execute(sql`analyze events`);
    inFlight = await recordEvents(ctx, events(IN_FLIGHT, 'prt'));
    sweepIndexes = await indexFamily(testDb.db, 'events_undispatched_idx');
  });

  it('a worker’s fan-out finds its events by id and each one’s earlier event by participant, reading none of the others in flight', async () => {
    const plan = await planAsRun(testDb.db, fanOutStatement(new Date(), inFlight.slice(-20)));
    const onEvents = [...nodesOf(plan)].filter((n) => n['Relation Name']?.startsWith('events'));
    expect(onEvents.map((n) => n['Index Name']).filter((name) => name && sweepIndexes.has(name))).toEqual([]);
    // Rows read and thrown away across the loops: with the sweep's index, every event in flight for each of 20.
    const removed = onEvents.reduce((sum, n) => sum + (n['Rows Removed by Filter'] ?? 0), 0);
    expect(removed).toBeLessThan(IN_FLIGHT);
  });

  it('the sweep takes the oldest undispatched events by its own index', async () => {
    const plan = await planAsRun(testDb.db, fanOutStatement(new Date()));
    expect(indexesRead(plan).some((name) => sweepIndexes.has(name))).toBe(true);
  });
});

describe("an ordered endpoint's fan-out with statistics taken while nothing was pending", () => {
  it('looks each pair’s pending messages up by the index of those, not by the index of every pending message', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const { events } = await campaignWithEndpoint(ctx, true);
    await fanOutEvents(ctx, await recordEvents(ctx, events(2000, 'ord')));
    await testDb.db.execute(sql`update webhook_messages set status = 'SUCCEEDED'`);
    await testDb.db.execute(sql`analyze events`);
    await testDb.db.execute(sql`analyze webhook_messages`);
    // A message pending for each of IN_FLIGHT participants, then an event more for 20 of them.
    await fanOutEvents(ctx, await recordEvents(ctx, events(IN_FLIGHT, 'ord')));
    const next = await recordEvents(ctx, events(20, 'ord'));
    const orderedIndexes = await indexFamily(testDb.db, 'webhook_messages_ordered_idx');
    const plan = await planAsRun(testDb.db, fanOutStatement(new Date(), next));
    const used = [...nodesOf(plan)]
      .filter((n) => n['Relation Name']?.startsWith('webhook_messages') && n['Index Name'])
      .map((n) => n['Index Name']!);
    expect(used.length).toBeGreaterThan(0);
    expect(used.filter((name) => !orderedIndexes.has(name))).toEqual([]);
  });
});
