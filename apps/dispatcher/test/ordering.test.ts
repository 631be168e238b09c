import { webhookMessages } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { uniqueEmail } from '../../../test/support/factories';
import { type Received, useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

/**
 * `ordering: PARTICIPANT`: each participant's messages to the endpoint go one at a time, in `sequence` order,
 * each once the one before it succeeded or was dead-lettered; the order is decided in PostgreSQL (a waiting
 * message is not due until the end of the one before makes it so), whatever the receiver does.
 */
const stack = useTestStack({
  dispatcher: true,
  sweep: true,
  // Ten quick retries: a message fails for good only if eleven attempts in a row fail.
  retrySchedule: '20,20,20,20,20,20,20,20,20,20',
  webhookTimeoutMs: 1000,
});

const receiver = useReceivers();

const participantOf = (r: Received): string => r.json?.data?.participant?.id;
const sequenceOf = (r: Received) => Number(r.headers['webhook-sequence']);

/** The sequences a receiver answered 2xx, per participant, in the order it answered them. */
function successes() {
  const byParticipant = new Map<string, number[]>();
  return {
    byParticipant,
    ok(r: Received) {
      const p = participantOf(r);
      byParticipant.set(p, [...(byParticipant.get(p) ?? []), sequenceOf(r)]);
    },
  };
}

describe('ordered delivery per participant', () => {
  it('each participant’s successes are exactly 1, 2, 3… in order, however often and slowly the receiver fails', {
    timeout: 60_000,
  }, async () => {
    const got = successes();
    let inFlightPerParticipant = 0;
    const inFlight = new Map<string, number>();
    const rx = await receiver((r) => {
      const p = participantOf(r);
      const now = (inFlight.get(p) ?? 0) + 1;
      inFlight.set(p, now);
      inFlightPerParticipant = Math.max(inFlightPerParticipant, now);
      const fails = Math.random() < 0.3;
      const delayMs = Math.floor(Math.random() * 25);
      setTimeout(() => inFlight.set(p, (inFlight.get(p) ?? 1) - 1), delayMs);
      if (!fails) got.ok(r);
      return { status: fails ? 500 : 200, delayMs };
    });
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, ordering: 'PARTICIPANT' });
    expect(ep.ordering).toBe('PARTICIPANT');
    const emails = Array.from({ length: 4 }, () => uniqueEmail());
    // Their actions interleaved: each action sends LOYALTY_ACTION_APPLIED and PARTICIPANT_REACHED_A_GOAL, the
    // first NEW_PARTICIPANT_ADDED too.
    for (let round = 0; round < 25; round++) await Promise.all(emails.map((e) => w.act(e)));
    const total = emails.length * (1 + 25 * 2);
    await eventually(
      async () => [...got.byParticipant.values()].reduce((n, s) => n + s.length, 0),
      (n) => n >= total,
      45_000,
    );
    expect(got.byParticipant.size).toBe(emails.length);
    for (const sequences of got.byParticipant.values()) {
      expect(sequences).toEqual(Array.from({ length: 51 }, (_, i) => i + 1));
    }
    // One request at a time per participant: the next went only once the one before had its answer.
    expect(inFlightPerParticipant).toBe(1);
    // Each recorded once its answer came back, none parked.
    const rows = async () =>
      stack.ctx.db.execute<{ status: string; n: number; parked: number }>(sql`
        select status, count(*)::int as n, count(previous_id)::int as parked from ${webhookMessages}
        where endpoint_id = ${ep.id} group by status`);
    expect(await eventually(rows, (r) => r.length === 1 && r[0]!.n === total)).toEqual([
      { status: 'SUCCEEDED', n: total, parked: 0 },
    ]);
  });

  it('a dead-lettered message is parked: the next goes on naming it, and its replay sends its old number', {
    timeout: 30_000,
  }, async () => {
    let refuseSecond = true;
    const got = successes();
    const rx = await receiver((r) => {
      if (refuseSecond && sequenceOf(r) === 2) return { status: 500 };
      got.ok(r);
      return {};
    });
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, ordering: 'PARTICIPANT' });
    const email = uniqueEmail();
    await w.act(email);
    await w.act(email);
    // 1 NEW_PARTICIPANT_ADDED, then (LOYALTY_ACTION_APPLIED, PARTICIPANT_REACHED_A_GOAL) twice: 5 messages.
    const [participant] = await eventually(
      async () => [...got.byParticipant.values()],
      (all) => all.length === 1 && all[0]!.length === 4,
      20_000,
    );
    expect(participant).toEqual([1, 3, 4, 5]);
    const messages = await messagesOf(stack, ep.id, '?limit=100');
    const bySequence = new Map(messages.map((m) => [m.sequence, m]));
    const parked = bySequence.get(2)!;
    expect(parked).toMatchObject({ status: 'FAILED', attempts: 11 });
    expect(bySequence.get(3)).toMatchObject({ status: 'SUCCEEDED', previousId: parked.id });
    const third = rx.received.find((r) => sequenceOf(r) === 3)!;
    expect(third.headers['webhook-previous-id']).toBe(parked.id);
    expect(bySequence.get(4)!.previousId).toBeNull();

    refuseSecond = false;
    const replay = await operator(stack).post(`/admin/v1/webhook-messages/${parked.id}/replay`, {});
    expect(replay.status, JSON.stringify(replay.body)).toBe(200);
    await eventually(
      async () => got.byParticipant.get(participantOf(third))!,
      (s) => s.length === 5,
    );
    expect(got.byParticipant.get(participantOf(third))).toEqual([1, 3, 4, 5, 2]);
    const replayed = rx.received.filter((r) => r.headers['webhook-id'] === parked.id).at(-1)!;
    expect(sequenceOf(replayed)).toBe(2);
  });

  it('a rate limit and the endpoint disabled and enabled again mid-stream keep each participant’s order', {
    timeout: 60_000,
  }, async () => {
    const got = successes();
    const rx = await receiver((r) => {
      const fails = Math.random() < 0.3;
      if (!fails) got.ok(r);
      return { status: fails ? 500 : 200, delayMs: Math.floor(Math.random() * 10) };
    });
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      ordering: 'PARTICIPANT',
      rateLimit: 200,
    });
    const emails = Array.from({ length: 3 }, () => uniqueEmail());
    const rounds = 10;
    for (let round = 0; round < rounds; round++) {
      await Promise.all(emails.map((e) => w.act(e)));
      if (round === 3) {
        const off = await operator(stack).patch(`/admin/v1/webhook-endpoints/${ep.id}`, { enabled: false });
        expect(off.status, JSON.stringify(off.body)).toBe(200);
      }
      if (round === 6) {
        const on = await operator(stack).patch(`/admin/v1/webhook-endpoints/${ep.id}`, { enabled: true });
        expect(on.status, JSON.stringify(on.body)).toBe(200);
      }
    }
    const perParticipant = 1 + rounds * 2;
    await eventually(
      async () => [...got.byParticipant.values()].reduce((n, s) => n + s.length, 0),
      (n) => n >= emails.length * perParticipant,
      45_000,
    );
    for (const sequences of got.byParticipant.values()) {
      expect(sequences).toEqual(Array.from({ length: perParticipant }, (_, i) => i + 1));
    }
  });
});
