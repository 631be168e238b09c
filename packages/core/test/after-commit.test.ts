import { campaigns, createDb, erasures, events, loyaltyActions } from '@stampcard/db';
import { eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestDb } from '../../../test/support/use';
import { systemClock } from '../src/clock';
import {
  type AfterCommit,
  type CommitState,
  type Created,
  type Ctx,
  commitWrite,
  type ErasureStep,
  handOff,
  unitOfWork,
} from '../src/context';
import { DomainError } from '../src/errors';
import { recordEvents } from '../src/services/events';
import { recordQueuedActions } from '../src/services/ledger';
import { ensureParticipant } from '../src/services/participants/ensure';
import { ERASE_BATCH, runErasureStep } from '../src/services/participants/erase';
import { deleteParticipant } from '../src/services/participants/remove';

const db = useTestDb();

/**
 * A second connection of its own, outside every transaction of the test: what it sees is what has committed.
 */
let other: ReturnType<typeof createDb>;
beforeAll(() => {
  other = createDb(db.url, { max: 1 });
});
afterAll(async () => {
  await other.close();
});

type Call = { created: Created; seen: { events: string[]; actions: string[] } };

/**
 * A hand-off that records each call with what the second connection sees of its rows at that very moment:
 * rows handed on before their COMMIT would not be there yet.
 */
function recordingPort(): { port: AfterCommit; calls: Call[] } {
  const calls: Call[] = [];
  const port: AfterCommit = async (created) => {
    const seenEvents = created.eventIds.length
      ? await other.db.select({ id: events.id }).from(events).where(inArray(events.id, created.eventIds))
      : [];
    const seenActions = created.actionIds.length
      ? await other.db
          .select({ id: loyaltyActions.id })
          .from(loyaltyActions)
          .where(inArray(loyaltyActions.id, created.actionIds))
      : [];
    calls.push({
      created: {
        eventIds: [...created.eventIds],
        actionIds: [...created.actionIds],
        erasureSteps: [...created.erasureSteps],
        importSteps: [...created.importSteps],
      },
      seen: { events: seenEvents.map((r) => r.id).sort(), actions: seenActions.map((r) => r.id).sort() },
    });
  };
  return { port, calls };
}

async function world() {
  const ctx: Ctx = { db: db.db, clock: systemClock };
  const w = await makeWorld(ctx);
  const [campaign] = await db.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
  return { ...w, campaign: campaign! };
}

const testEvent = (campaignId: string) => ({
  campaignId,
  type: 'CAMPAIGN_ENDED' as const,
  data: { campaign: { id: campaignId } } as never,
});

describe('the after-commit hand-off', () => {
  it('a unit of work hands on once, after its COMMIT, the ids of every event and QUEUED action it wrote', async () => {
    const w = await world();
    const { port, calls } = recordingPort();
    const ctx: Ctx = { db: db.db, clock: systemClock, afterCommit: port };
    const written = await unitOfWork(ctx, async (tx) => {
      const { participant } = await ensureParticipant(tx, w.campaign, { email: uniqueEmail() }, 'DIRECT');
      const actions = await recordQueuedActions(tx, [
        { campaignId: w.campaign.id, participantId: participant.id, rewardId: w.reward.id },
        { campaignId: w.campaign.id, participantId: participant.id, rewardId: w.reward.id },
      ]);
      const eventIds = await recordEvents(tx, [testEvent(w.campaign.id)]);
      // Nothing is handed on while the transaction is open.
      expect(calls).toEqual([]);
      return { actionIds: actions.map((a) => a.id), eventIds };
    });

    expect(calls).toHaveLength(1);
    const [call] = calls;
    // The participant's NEW_PARTICIPANT_ADDED, registered by ensureParticipant's own recordEvents, then ours.
    expect(call!.created.eventIds).toHaveLength(2);
    expect(call!.created.eventIds).toContain(written.eventIds[0]);
    expect(call!.created.actionIds).toEqual(written.actionIds);
    // When the port ran, another connection saw every row: it ran after the COMMIT.
    expect(call!.seen.events).toEqual([...call!.created.eventIds].sort());
    expect(call!.seen.actions).toEqual([...written.actionIds].sort());
  });

  it('a unit of work that throws rolls back and hands on nothing', async () => {
    const w = await world();
    const { port, calls } = recordingPort();
    const ctx: Ctx = { db: db.db, clock: systemClock, afterCommit: port };
    let eventIds: string[] = [];
    await expect(
      unitOfWork(ctx, async (tx) => {
        eventIds = await recordEvents(tx, [testEvent(w.campaign.id)]);
        throw new Error('refused after writing');
      }),
    ).rejects.toThrow('refused after writing');
    expect(eventIds).toHaveLength(1);
    expect(calls).toEqual([]);
    expect(await other.db.select().from(events).where(inArray(events.id, eventIds))).toEqual([]);
  });

  it('a unit of work whose caller stopped waiting before COMMIT rolls back and hands on nothing', async () => {
    const w = await world();
    const { port, calls } = recordingPort();
    const controller = new AbortController();
    const commit: CommitState = { sent: 0 };
    const ctx: Ctx = { db: db.db, clock: systemClock, afterCommit: port, signal: controller.signal, commit };
    let eventIds: string[] = [];
    const err = await unitOfWork(ctx, async (tx) => {
      eventIds = await recordEvents(tx, [testEvent(w.campaign.id)]);
      controller.abort();
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('UNAVAILABLE');
    expect(commit.outcome).toBeUndefined();
    expect(calls).toEqual([]);
    expect(await other.db.select().from(events).where(inArray(events.id, eventIds))).toEqual([]);
  });

  it('a nested unit joins the outer one: handed on once with the outer COMMIT, and not at all if rolled back', async () => {
    const w = await world();
    const { port, calls } = recordingPort();
    const ctx: Ctx = { db: db.db, clock: systemClock, afterCommit: port };
    const ids = await unitOfWork(ctx, async (tx) => {
      const kept = await unitOfWork(tx, (inner) => recordEvents(inner, [testEvent(w.campaign.id)]));
      let dropped: string[] = [];
      await unitOfWork(tx, async (inner) => {
        dropped = await recordEvents(inner, [testEvent(w.campaign.id)]);
        throw new Error('savepoint rolled back');
      }).catch(() => {});
      // Neither savepoint's release handed anything on: only the outer COMMIT does.
      expect(calls).toEqual([]);
      return { kept, dropped };
    });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.created).toEqual({
      eventIds: ids.kept,
      actionIds: [],
      erasureSteps: [],
      importSteps: [],
    });
    expect(calls[0]!.seen.events).toEqual(ids.kept);
    expect(await other.db.select().from(events).where(inArray(events.id, ids.dropped))).toEqual([]);
  });

  it('hands on once per committed write, and not for a write that created nothing', async () => {
    const w = await world();
    const { port, calls } = recordingPort();
    const ctx: Ctx = { db: db.db, clock: systemClock, afterCommit: port };
    const first = await unitOfWork(ctx, (tx) => recordEvents(tx, [testEvent(w.campaign.id)]));
    const second = await unitOfWork(ctx, (tx) => recordEvents(tx, [testEvent(w.campaign.id)]));
    await unitOfWork(ctx, async (tx) => {
      await tx.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
    });
    expect(calls.map((c) => c.created.eventIds)).toEqual([first, second]);
  });

  it('commitWrite outside a unit hands its write on once it committed, after the commit state says LANDED', async () => {
    const w = await world();
    const { participant } = await unitOfWork({ db: db.db, clock: systemClock }, (tx) =>
      ensureParticipant(tx, w.campaign, { email: uniqueEmail() }, 'DIRECT'),
    );
    const commit: CommitState = { sent: 0 };
    const outcomes: (string | undefined)[] = [];
    const { port, calls } = recordingPort();
    const ctx: Ctx = {
      db: db.db,
      clock: systemClock,
      commit,
      afterCommit: async (created) => {
        outcomes.push(commit.outcome);
        await port(created);
      },
    };
    const [action] = await commitWrite(ctx, (w2) =>
      recordQueuedActions(w2, [
        { campaignId: w.campaign.id, participantId: participant.id, rewardId: w.reward.id },
      ]),
    );
    expect(calls).toEqual([
      {
        created: { eventIds: [], actionIds: [action!.id], erasureSteps: [], importSteps: [] },
        seen: { events: [], actions: [action!.id] },
      },
    ]);
    expect(outcomes).toEqual(['LANDED']);
    expect(commit.sent).toBe(0);
  });

  it('a write that fails hands nothing on, and a port that fails never reaches the writer', async () => {
    const w = await world();
    const { port, calls } = recordingPort();
    const ctx: Ctx = { db: db.db, clock: systemClock, afterCommit: port };
    const action = {
      id: 'act_once',
      campaignId: w.campaign.id,
      participantId: 'pt_x',
      rewardId: w.reward.id,
    };
    await commitWrite(ctx, (w2) => recordQueuedActions(w2, [action]));
    // The same id again: the primary key refuses the insert.
    await expect(commitWrite(ctx, (w2) => recordQueuedActions(w2, [action]))).rejects.toThrow();
    expect(calls.map((c) => c.created.actionIds)).toEqual([['act_once']]);

    const failing: Ctx = {
      db: db.db,
      clock: systemClock,
      afterCommit: async () => {
        throw new Error('the queue is down');
      },
    };
    const eventIds = await unitOfWork(failing, (tx) => recordEvents(tx, [testEvent(w.campaign.id)]));
    expect(await other.db.select({ id: events.id }).from(events).where(inArray(events.id, eventIds))).toEqual(
      [{ id: eventIds[0] }],
    );
  });

  it('outside any unit (a group commit that has committed its rows), handOff hands on at once', async () => {
    const { port, calls } = recordingPort();
    await handOff(
      { db: db.db, clock: systemClock, afterCommit: port },
      { actionIds: ['act_committed_elsewhere'] },
    );
    expect(calls.map((c) => c.created)).toEqual([
      { eventIds: [], actionIds: ['act_committed_elsewhere'], erasureSteps: [], importSteps: [] },
    ]);
  });

  it("an erasure's next step is handed on once the deletion committed, then once each batch that leaves work committed", async () => {
    const w = await world();
    const ctx0: Ctx = { db: db.db, clock: systemClock };
    const { participant } = await unitOfWork(ctx0, (tx) =>
      ensureParticipant(tx, w.campaign, { email: uniqueEmail() }, 'DIRECT'),
    );
    // More events showing the person than one batch erases: copies of its NEW_PARTICIPANT_ADDED.
    await db.db.execute(sql`
      insert into ${events} (id, campaign_id, type, data, created_at)
      select 'evt_er' || g || ${participant.id}, campaign_id, type, data, created_at
      from ${events}, generate_series(1, ${ERASE_BATCH * 2}) g
      where campaign_id = ${w.campaign.id} and type = 'NEW_PARTICIPANT_ADDED'`);
    const handed: { steps: ErasureStep[]; batchesSeen: number | undefined }[] = [];
    const ctx: Ctx = {
      db: db.db,
      clock: systemClock,
      afterCommit: async (created) => {
        // What another connection sees of the erasure when its step is handed on: the batch has committed.
        const [row] = await other.db
          .select({ batches: erasures.batches })
          .from(erasures)
          .where(eq(erasures.participantId, participant.id));
        handed.push({ steps: [...created.erasureSteps], batchesSeen: row?.batches });
      },
    };
    const removed = await deleteParticipant(ctx, w.campaign, participant.id);
    expect(removed.erasure.status).toBe('PENDING');
    const first = { participantId: participant.id, batch: 1 };
    expect(handed).toEqual([{ steps: [first], batchesSeen: 1 }]);
    // The step's batch leaves one more; the last batch (DONE) hands no step on.
    const second = await runErasureStep(ctx, first);
    expect(second.next).toEqual({ participantId: participant.id, batch: 2 });
    expect(handed.slice(1)).toEqual([{ steps: [second.next], batchesSeen: 2 }]);
    const last = await runErasureStep(ctx, second.next!);
    expect(last.next).toBeNull();
    expect(handed).toHaveLength(2);
    // A step run again (its job twice) does nothing, and hands nothing on.
    expect((await runErasureStep(ctx, first)).ran).toBe(false);
    expect(handed).toHaveLength(2);
  });
});
