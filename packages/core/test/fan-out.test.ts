import { type Ctx, fanOutEvents, type NewEvent, recordEvents, systemClock } from '@stampcard/core';
import { events, WAITING_AT, webhookMessages } from '@stampcard/db';
import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { heldTransaction } from '../../../test/support/db';
import { makeEndpoint, makeWorld } from '../../../test/support/factories';
import { useTestDb } from '../../../test/support/use';

/**
 * Which endpoint gets which event is decided in the fan-out's SQL (`event_types` empty: every type; otherwise
 * the types listed), the one place that rule runs: tested here against PostgreSQL.
 */
const testDb = useTestDb();

/** An endpoint of the world's campaign that takes `eventTypes` (every type when empty). */
const insertEndpoint = (
  ctx: Ctx,
  w: { account: { id: string }; campaign: { id: string } },
  eventTypes: string[],
  more: { enabled?: boolean; deletedAt?: Date } = {},
) => makeEndpoint(ctx, { accountId: w.account.id, campaignId: w.campaign.id }, { eventTypes, ...more });

describe("fan-out's event filter, in PostgreSQL", () => {
  it('an endpoint gets the types it lists, every type when it lists none, and a deleted one gets nothing', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const w = await makeWorld(ctx);
    const campaignId = w.campaign.id;
    const endpoint = (eventTypes: string[], more: { enabled?: boolean; deletedAt?: Date } = {}) =>
      insertEndpoint(ctx, w, eventTypes, more);
    const all = await endpoint([]);
    const ended = await endpoint(['CAMPAIGN_ENDED']);
    const deletions = await endpoint(['PARTICIPANT_REWARD_DELETED']);
    const both = await endpoint(['PARTICIPANT_REWARD_DELETED', 'CAMPAIGN_ENDED']);
    const heldEnded = await endpoint(['CAMPAIGN_ENDED'], { enabled: false });
    const deletedAll = await endpoint([], { deletedAt: new Date() });

    const campaign = { id: campaignId, name: 'c', status: 'COMPLETE' as const, currencyISO: 'USD' };
    const [endedEvent, deletedEvent] = await recordEvents(ctx, [
      { campaignId, type: 'CAMPAIGN_ENDED', data: { campaign } },
      {
        campaignId,
        type: 'PARTICIPANT_REWARD_DELETED',
        data: { participantRewardId: 'pr_1', rewardId: 'rew_1', participantId: 'par_1', campaign },
      },
    ]);
    const out = await fanOutEvents(ctx, [endedEvent!, deletedEvent!]);
    expect(out.events).toBe(2);

    const made = await ctx.db
      .select({ endpointId: webhookMessages.endpointId, eventId: webhookMessages.eventId })
      .from(webhookMessages)
      .where(eq(webhookMessages.campaignId, campaignId));
    const receivers = (eventId: string) =>
      made
        .filter((m) => m.eventId === eventId)
        .map((m) => m.endpointId)
        .sort();
    expect(receivers(endedEvent!)).toEqual([all, ended, both, heldEnded].sort());
    expect(receivers(deletedEvent!)).toEqual([all, deletions, both].sort());
    expect(made.some((m) => m.endpointId === deletedAll)).toBe(false);
    // The disabled endpoint's message is kept for when it is enabled again, but not scheduled now.
    expect(out.scheduled.map((s) => s.endpointId).sort()).toEqual(
      [all, all, ended, deletions, both, both].sort(),
    );
  });

  describe('sequence numbers per (endpoint, participant)', () => {
    /** A world with an endpoint taking every type and one taking only rewards reached. */
    async function world() {
      const ctx: Ctx = { db: testDb.db, clock: systemClock };
      const w = await makeWorld(ctx);
      const all = await insertEndpoint(ctx, w, []);
      const goals = await insertEndpoint(ctx, w, ['PARTICIPANT_REACHED_A_GOAL']);
      const campaign = { id: w.campaign.id, name: 'c', status: 'IN_PROGRESS' as const, currencyISO: 'USD' };
      // Only the participant's id matters to the fan-out: the rest of each event's data is left out.
      const event = (participantId: string, type = 'LOYALTY_ACTION_APPLIED') =>
        ({
          campaignId: w.campaign.id,
          type,
          data: { participant: { id: participantId }, campaign },
        }) as NewEvent;
      /** (event, sequence) of an endpoint's messages of a participant, in event order. */
      const numbers = async (endpointId: string, participantId: string | null) =>
        (
          await ctx.db
            .select({ eventId: webhookMessages.eventId, sequence: webhookMessages.sequence })
            .from(webhookMessages)
            .innerJoin(events, eq(events.id, webhookMessages.eventId))
            .where(
              and(
                eq(webhookMessages.endpointId, endpointId),
                participantId === null
                  ? isNull(webhookMessages.participantId)
                  : eq(webhookMessages.participantId, participantId),
              ),
            )
            .orderBy(asc(events.seq))
        ).map((m) => [m.eventId, m.sequence]);
      return { ctx, w, all, goals, campaign, event, numbers };
    }

    it('numbers each pair 1, 2, 3… in event order, an endpoint counting only what it gets, none without a participant', async () => {
      const { ctx, all, goals, campaign, event, numbers, w } = await world();
      const first = await recordEvents(ctx, [
        event('prt_a'),
        event('prt_b'),
        event('prt_a', 'PARTICIPANT_REACHED_A_GOAL'),
        { campaignId: w.campaign.id, type: 'CAMPAIGN_ENDED', data: { campaign } },
      ]);
      await fanOutEvents(ctx, first);
      const second = await recordEvents(ctx, [event('prt_a'), event('prt_a', 'PARTICIPANT_REACHED_A_GOAL')]);
      await fanOutEvents(ctx, second);
      expect(await numbers(all, 'prt_a')).toEqual([
        [first[0], 1],
        [first[2], 2],
        [second[0], 3],
        [second[1], 4],
      ]);
      expect(await numbers(all, 'prt_b')).toEqual([[first[1], 1]]);
      expect(await numbers(goals, 'prt_a')).toEqual([
        [first[2], 1],
        [second[1], 2],
      ]);
      expect(await numbers(all, null)).toEqual([[first[3], null]]);
    });

    it('an event waits while an earlier one of its participant is held by another fan-out, then follows it', async () => {
      const { ctx, all, event, numbers } = await world();
      const [early] = await recordEvents(ctx, [event('prt_c')]);
      const [late, other] = await recordEvents(ctx, [event('prt_c'), event('prt_d')]);
      // Another fan-out holds the earlier event (its transaction has it locked and has not committed).
      const holder = await heldTransaction(testDb.db, (tx) =>
        tx.execute(sql`select 1 from ${events} where id = ${early!} for update`),
      );
      const out = await fanOutEvents(ctx, [late!, other!]);
      expect(out.events).toBe(1);
      expect(out.deferred).toEqual([late]);
      expect(await numbers(all, 'prt_c')).toEqual([]);
      expect(await numbers(all, 'prt_d')).toEqual([[other, 1]]);
      await holder.release();
      // The sweep (no ids) takes both, the earlier first.
      expect((await fanOutEvents(ctx)).events).toBeGreaterThanOrEqual(2);
      expect(await numbers(all, 'prt_c')).toEqual([
        [early, 1],
        [late, 2],
      ]);
    });

    describe('a PARTICIPANT-ordered endpoint whose pending message another transaction holds', () => {
      /**
       * An ordered endpoint with one PENDING message of `prt_o` (its first event's), a later event of `prt_o`
       * and one of `prt_p`, and a transaction that holds that message's row (as a dispatcher's claim or the
       * write of its end does) until `holder.release()`.
       */
      async function held(hold: 'claim' | 'end') {
        const { ctx, w, event, numbers } = await world();
        const ordered = await makeEndpoint(
          ctx,
          { accountId: w.account.id, campaignId: w.campaign.id },
          { eventTypes: [], ordering: 'PARTICIPANT' },
        );
        const [first] = await recordEvents(ctx, [event('prt_o')]);
        await fanOutEvents(ctx, [first!]);
        const [head] = await ctx.db
          .select({ id: webhookMessages.id })
          .from(webhookMessages)
          .where(and(eq(webhookMessages.eventId, first!), eq(webhookMessages.endpointId, ordered)));
        const [late, other] = await recordEvents(ctx, [event('prt_o'), event('prt_p')]);
        const holder = await heldTransaction(testDb.db, (tx) =>
          tx.execute(
            hold === 'claim'
              ? sql`update webhook_messages set claimed_until = now() + interval '1 minute' where id = ${head!.id}`
              : sql`update webhook_messages set status = 'SUCCEEDED' where id = ${head!.id}`,
          ),
        );
        return { ctx, ordered, numbers, first: first!, late: late!, other: other!, holder };
      }

      const waiting = (ctx: Ctx, eventId: string, endpointId: string) =>
        ctx.db
          .select({ next: webhookMessages.nextAttemptAt })
          .from(webhookMessages)
          .where(and(eq(webhookMessages.eventId, eventId), eq(webhookMessages.endpointId, endpointId)))
          .then(([m]) => m!.next.getTime() === WAITING_AT.getTime());

      /** A fan-out while the row is held: it must answer without waiting for the holder to end. */
      const atOnce = async (ctx: Ctx, eventIds: string[]) => {
        const out = await Promise.race([
          fanOutEvents(ctx, eventIds),
          new Promise<'waited'>((r) => setTimeout(() => r('waited'), 2000)),
        ]);
        if (out === 'waited') throw new Error('the fan-out waited for the row another transaction holds');
        return out;
      };

      it('defers its participant’s events at once instead of waiting for the row, then numbers them after it', async () => {
        const h = await held('claim');
        try {
          // Waiting for the row here (while holding others) is what deadlocked with the dispatcher's claims.
          const out = await atOnce(h.ctx, [h.late, h.other]);
          expect(out.deferred).toEqual([h.late]);
          expect(out.events).toBe(1);
          expect(await h.numbers(h.ordered, 'prt_o')).toEqual([[h.first, 1]]);
          expect(await h.numbers(h.ordered, 'prt_p')).toEqual([[h.other, 1]]);
        } finally {
          await h.holder.release();
        }
        // The claim committed and the message is still PENDING: the later one waits behind it.
        const again = await fanOutEvents(h.ctx, [h.late]);
        expect(again.deferred).toEqual([]);
        expect(await h.numbers(h.ordered, 'prt_o')).toEqual([
          [h.first, 1],
          [h.late, 2],
        ]);
        expect(await waiting(h.ctx, h.late, h.ordered)).toBe(true);
        expect(again.scheduled.filter((m) => m.endpointId === h.ordered)).toEqual([]);
      });

      it('an event deferred while the message ended goes out due, not waiting for it', async () => {
        const h = await held('end');
        let out: Awaited<ReturnType<typeof fanOutEvents>>;
        try {
          out = await atOnce(h.ctx, [h.late]);
        } finally {
          await h.holder.release();
        }
        expect(out.deferred).toEqual([h.late]);
        const again = await fanOutEvents(h.ctx, [h.late]);
        expect(again.events).toBe(1);
        expect(await waiting(h.ctx, h.late, h.ordered)).toBe(false);
        expect(again.scheduled.map((m) => [m.eventId, m.endpointId])).toContainEqual([h.late, h.ordered]);
      });
    });

    it('fan-outs racing over one participant’s events still number them in event order, with no gap', async () => {
      const { ctx, all, event, numbers } = await world();
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push(...(await recordEvents(ctx, [event('prt_e'), event('prt_e')])));
      // Each batch fanned out on its own, all at once and newest first, as dispatchers may take their jobs.
      await Promise.all(
        [...ids.keys()]
          .filter((i) => i % 2 === 0)
          .reverse()
          .map((i) => fanOutEvents(ctx, [ids[i]!, ids[i + 1]!])),
      );
      for (let pass = 0; pass < 5; pass++) await fanOutEvents(ctx);
      const left = await ctx.db
        .select({ id: events.id })
        .from(events)
        .where(and(inArray(events.id, ids), isNull(events.dispatchedAt)));
      expect(left).toEqual([]);
      expect(await numbers(all, 'prt_e')).toEqual(ids.map((id, i) => [id, i + 1]));
    });
  });
});
