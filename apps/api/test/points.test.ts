import { createApp } from '@stampcard/api';
import { createLogger } from '@stampcard/config';
import { EVENT_SCHEMAS, MAX_POINTS_CONVERSIONS } from '@stampcard/core';
import { campaigns, events, loyaltyActions, participantRewards, participants } from '@stampcard/db';
import { and, asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, inProcess, type Reply } from '../../../test/support/client';
import { type makeReward, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { queueDown } from '../../../test/support/queue-down';
import { refusals } from '../../../test/support/refused';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

const stack = useTestStack();
const expectRefused = refusals(stack);

type World = Awaited<ReturnType<typeof makeWorld>>;
type Issue = { location: string; param: string; value: unknown; msg: string };

const HEADER = 'stampcard-loyalty-action-ids';
const api = (key?: string) => client(inProcess(stack.app), key);
const op = () => client(inProcess(stack.app), OPERATOR_TOKEN);
const one = (w: World, idOrEmail: string) =>
  `/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(idOrEmail)}`;
const increment = (w: World, idOrEmail: string, by: Record<string, number>, extra = {}) =>
  api(w.key).patch(one(w, idOrEmail), { metadataIncrement: by, ...extra });
const params = (body: { errors: Issue[] }) => body.errors.map((e) => e.param);

/** A running campaign whose reward (unlimited unless told otherwise) is earned per points conversion. */
async function pointsWorld(
  conversion: { metadataKey?: string; threshold?: number } = {},
  reward: Parameters<typeof makeReward>[2] = { isUnlimited: true },
) {
  const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1, ...reward } });
  const pointsConversion = { metadataKey: 'points', threshold: 10, rewardId: w.reward.id, ...conversion };
  const r = await op().patch(`/admin/v1/campaigns/${w.campaign.id}`, { pointsConversion });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return w;
}

/** Adds a participant and answers it. */
async function added(w: World, metadata: Record<string, unknown> = {}) {
  const r = await api(w.key).post(`/v1/campaign/${w.campaign.id}/participant`, {
    email: uniqueEmail(),
    metadata,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { id: string; email: string };
}

/** The action ids the update's header names (none when the header is absent). */
const actionIds = (r: Reply) => r.headers.get(HEADER)?.split(',') ?? [];

const actionsOf = (participantId: string) =>
  stack.ctx.db
    .select()
    .from(loyaltyActions)
    .where(eq(loyaltyActions.participantId, participantId))
    .orderBy(asc(loyaltyActions.createdAt), asc(loyaltyActions.id));

const participantRow = async (id: string) =>
  (await stack.ctx.db.select().from(participants).where(eq(participants.id, id)))[0]!;

const rewardsOf = (participantId: string) =>
  stack.ctx.db.select().from(participantRewards).where(eq(participantRewards.participantId, participantId));

/** Waits until the worker has applied every action of the participant; answers them. */
const allApplied = (participantId: string, count: number) =>
  eventually(
    () => actionsOf(participantId),
    (rows) => rows.length === count && rows.every((a) => a.status === 'APPLIED'),
  );

describe('points conversion on metadataIncrement', () => {
  it('converts once when an increment reaches the threshold: points decremented, one action applied, the reward unlocked', async () => {
    const w = await pointsWorld();
    const p = await added(w, { points: 4 });
    const r = await increment(w, p.id, { points: 6 });
    expect(r.status).toBe(200);
    expect(r.body.metadata).toEqual({ points: 0 });
    const ids = actionIds(r);
    expect(ids).toHaveLength(1);
    expect(ids[0]).toMatch(/^act_/);

    const [action] = await allApplied(p.id, 1);
    expect(action).toMatchObject({
      id: ids[0],
      rewardId: w.reward.id,
      campaignId: w.campaign.id,
      requestHash: null,
      metadata: { source: 'POINTS_CONVERSION', metadataKey: 'points', threshold: 10 },
    });
    expect(action!.unlockedRewardIds).toHaveLength(1);
    const got = await api(w.key).get(one(w, p.id));
    expect(got.body).toMatchObject({ metadata: { points: 0 }, loyaltyActionCount: 1 });
    expect(got.body.rewards).toHaveLength(1);
    // The action reads like any other.
    const read = await api(w.key).get(`/v1/campaign/${w.campaign.id}/loyalty-action/${ids[0]}`);
    expect(read.body).toMatchObject({ id: ids[0], status: 'APPLIED', participantId: p.id });

    // PARTICIPANT_UPDATED shows the points as stored after the conversion.
    const [updated] = await stack.ctx.db
      .select()
      .from(events)
      .where(and(eq(events.campaignId, w.campaign.id), eq(events.type, 'PARTICIPANT_UPDATED')));
    const data = EVENT_SCHEMAS.PARTICIPANT_UPDATED.parse(updated!.data);
    expect(data.participant.metadata).toEqual({ points: 0 });
    expect(data.changed).toEqual(['metadata']);
  });

  it('converts as many times as the threshold fits in one increment; other keys are left alone', async () => {
    const w = await pointsWorld();
    const p = await added(w, { points: 3, visits: 1 });
    const r = await api(w.key).post(one(w, p.email), {
      metadataIncrement: { points: 35, visits: 1 },
      metadata: { tier: 'gold' },
    });
    expect(r.status).toBe(200);
    expect(r.body.metadata).toEqual({ points: 8, visits: 2, tier: 'gold' });
    const ids = actionIds(r);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
    const rows = await allApplied(p.id, 3);
    expect(rows.map((a) => a.id).sort()).toEqual([...ids].sort());
    expect(await rewardsOf(p.id)).toHaveLength(3);
    expect((await participantRow(p.id)).loyaltyActionCount).toBe(3);
  });

  it('sends no PARTICIPANT_UPDATED when the value ends where it began; LOYALTY_ACTION_APPLIED follows per action', async () => {
    const w = await pointsWorld();
    const p = await added(w, { points: 3 });
    const r = await increment(w, p.id, { points: 20 });
    expect(r.body.metadata).toEqual({ points: 3 });
    const ids = actionIds(r);
    expect(ids).toHaveLength(2);
    await allApplied(p.id, 2);
    const rows = await stack.ctx.db
      .select()
      .from(events)
      .where(eq(events.campaignId, w.campaign.id))
      .orderBy(asc(events.seq));
    expect(rows.filter((e) => e.type === 'PARTICIPANT_UPDATED')).toEqual([]);
    const applied = rows
      .filter((e) => e.type === 'LOYALTY_ACTION_APPLIED')
      .map((e) => EVENT_SCHEMAS.LOYALTY_ACTION_APPLIED.parse(e.data));
    expect(applied.map((e) => e.action.id).sort()).toEqual([...ids].sort());
    expect(applied.every((e) => e.participant.id === p.id && e.action.rewardId === w.reward.id)).toBe(true);
  });

  it('converts nothing below the threshold, then converts on the increment that reaches it exactly', async () => {
    const w = await pointsWorld();
    const p = await added(w);
    const below = await increment(w, p.id, { points: 9.5 });
    expect(below.status).toBe(200);
    expect(below.body.metadata).toEqual({ points: 9.5 });
    expect(below.headers.get(HEADER)).toBeNull();
    expect(await actionsOf(p.id)).toEqual([]);

    const reached = await increment(w, p.id, { points: 0.5 });
    expect(reached.body.metadata).toEqual({ points: 0 });
    expect(actionIds(reached)).toHaveLength(1);
    // A negative increment never converts back.
    const down = await increment(w, p.id, { points: -3 });
    expect(down.body.metadata).toEqual({ points: -3 });
    expect(down.headers.get(HEADER)).toBeNull();
    await allApplied(p.id, 1);
  });

  it('counts thresholds in decimal: 0.3 points at a threshold of 0.1 are 3 conversions with nothing left', async () => {
    const w = await pointsWorld({ threshold: 0.1 });
    const p = await added(w);
    const r = await increment(w, p.id, { points: 0.3 });
    expect(r.body.metadata).toEqual({ points: 0 });
    expect(actionIds(r)).toHaveLength(3);
    const w2 = await pointsWorld({ threshold: 2.5 });
    const p2 = await added(w2, { points: 0.2 });
    const r2 = await increment(w2, p2.id, { points: 7.4 });
    expect(r2.body.metadata).toEqual({ points: 0.1 });
    expect(actionIds(r2)).toHaveLength(3);
  });

  it('a plain metadata set of the key does not convert; the next increment of the key converts it all', async () => {
    const w = await pointsWorld();
    const p = await added(w);
    const set = await api(w.key).patch(one(w, p.id), { metadata: { points: 42 } });
    expect(set.body.metadata).toEqual({ points: 42 });
    expect(set.headers.get(HEADER)).toBeNull();
    // Incrementing another key does not convert either.
    const other = await increment(w, p.id, { visits: 1 });
    expect(other.headers.get(HEADER)).toBeNull();
    expect(await actionsOf(p.id)).toEqual([]);

    const next = await increment(w, p.id, { points: 0 });
    expect(next.body.metadata).toEqual({ points: 2, visits: 1 });
    expect(actionIds(next)).toHaveLength(4);
    await allApplied(p.id, 4);
  });

  it(`converts at most ${MAX_POINTS_CONVERSIONS} times per update and keeps the rest for the next increment`, async () => {
    const w = await pointsWorld();
    const p = await added(w);
    const r = await increment(w, p.id, { points: 2505 });
    expect(r.status).toBe(200);
    expect(actionIds(r)).toHaveLength(MAX_POINTS_CONVERSIONS);
    expect(r.body.metadata).toEqual({ points: 2505 - 10 * MAX_POINTS_CONVERSIONS });
    const again = await increment(w, p.id, { points: 0 });
    expect(actionIds(again)).toHaveLength(MAX_POINTS_CONVERSIONS);
    expect(again.body.metadata).toEqual({ points: 505 });
    const rows = await allApplied(p.id, 2 * MAX_POINTS_CONVERSIONS);
    expect(new Set(rows.map((a) => a.id)).size).toBe(2 * MAX_POINTS_CONVERSIONS);
  });

  it('adds points but converts nothing while the campaign is not IN_PROGRESS; once it is, the next increment converts', async () => {
    const w = await pointsWorld();
    const p = await added(w);
    for (const status of ['DRAFT', 'COMPLETE'] as const) {
      expect((await op().patch(`/admin/v1/campaigns/${w.campaign.id}`, { status })).status).toBe(200);
      const r = await increment(w, p.id, { points: 15 });
      expect(r.status).toBe(200);
      expect(r.headers.get(HEADER)).toBeNull();
    }
    expect((await participantRow(p.id)).metadata).toEqual({ points: 30 });
    expect(await actionsOf(p.id)).toEqual([]);

    expect((await op().patch(`/admin/v1/campaigns/${w.campaign.id}`, { status: 'IN_PROGRESS' })).status).toBe(
      200,
    );
    const r = await increment(w, p.id, { points: 1 });
    expect(r.body.metadata).toEqual({ points: 1 });
    expect(actionIds(r)).toHaveLength(3);
    await allApplied(p.id, 3);
  });

  it('converts nothing in a campaign without pointsConversion, or once it is removed', async () => {
    const w = await pointsWorld();
    const p = await added(w);
    expect(
      (await op().patch(`/admin/v1/campaigns/${w.campaign.id}`, { pointsConversion: null })).status,
    ).toBe(200);
    const r = await increment(w, p.id, { points: 100 });
    expect(r.body.metadata).toEqual({ points: 100 });
    expect(r.headers.get(HEADER)).toBeNull();
    expect(await actionsOf(p.id)).toEqual([]);
  });

  it('the unlock rule decides what the converted actions earn: a limit of 1 gives one reward for every count', async () => {
    const w = await pointsWorld({}, { limit: 1 });
    const p = await added(w);
    const r = await increment(w, p.id, { points: 30 });
    expect(actionIds(r)).toHaveLength(3);
    await allApplied(p.id, 3);
    expect(await rewardsOf(p.id)).toHaveLength(1);
    expect((await participantRow(p.id)).loyaltyActionCount).toBe(3);
  });

  it('loses none of 20 concurrent increments and converts exactly 14 times, never the same points twice', async () => {
    const w = await pointsWorld();
    const p = await added(w);
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0
          ? increment(w, p.id, { points: 7 })
          : api(w.key).post(one(w, p.email), { metadataIncrement: { points: 7 } }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    const ids = replies.flatMap(actionIds);
    expect(ids).toHaveLength(14);
    expect(new Set(ids).size).toBe(14);
    // Every answer holds what was left after its own conversion: always below the threshold.
    for (const r of replies) expect(r.body.metadata.points).toBeLessThan(10);
    expect((await participantRow(p.id)).metadata).toEqual({ points: 0 });

    const rows = await allApplied(p.id, 14);
    expect(rows.map((a) => a.id).sort()).toEqual([...ids].sort());
    expect(await rewardsOf(p.id)).toHaveLength(14);
    const after = await participantRow(p.id);
    expect(after.loyaltyActionCount).toBe(14);
    expect(after.loyaltyActionCountsPerReward).toEqual({ [w.reward.id]: 14 });
    const [campaign] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
    expect(campaign!.loyaltyActionCount).toBe(14);
  });

  it('converted actions do not collide with an identical trigger in flight (no request hash)', async () => {
    const w = await pointsWorld();
    const p = await added(w);
    await stack.stopWorker();
    try {
      const body = { participantEmail: p.email, rewardId: w.reward.id };
      const trigger = await api(w.key).post(`/v1/campaign/${w.campaign.id}/loyalty-action`, body);
      expect(trigger.status).toBe(200);
      const r = await increment(w, p.id, { points: 20 });
      expect(actionIds(r)).toHaveLength(2);
      // The trigger's 409 rule still holds for the trigger itself.
      const again = await api(w.key).post(`/v1/campaign/${w.campaign.id}/loyalty-action`, body);
      expect(again.status).toBe(409);
    } finally {
      stack.startWorker();
    }
    await allApplied(p.id, 3);
  });

  it('refuses an update that would convert but fails, and writes nothing: no action, no points', async () => {
    const w = await pointsWorld();
    const p = await added(w, { points: 5 });
    // Past the metadata limits (100 keys): the conversion rolls back with the increment.
    const many = Object.fromEntries(Array.from({ length: 99 }, (_, i) => [`k${i}`, i]));
    const b = await expectRefused(
      () => increment(w, p.id, { points: 10 }, { metadata: { ...many, extra: 1 } }),
      400,
      'VALIDATION_ERROR',
    );
    expect(params(b)).toEqual(['metadata']);
    // A stored value that is not a number.
    const q = await added(w, { points: 'ten' });
    const nan = await expectRefused(() => increment(w, q.id, { points: 10 }), 400, 'VALIDATION_ERROR');
    expect(params(nan)).toEqual(['metadataIncrement.points']);
    // Unknown participant.
    await expectRefused(() => increment(w, 'nosuchparticipant', { points: 10 }), 404, 'NOT_FOUND');
    expect(await actionsOf(p.id)).toEqual([]);
  });

  it('answers 200 with the actions recorded when the queue is down; the relay queues them and the worker applies them', async () => {
    const logger = createLogger({ level: 'silent', name: 'points-test' });
    const down = queueDown();
    try {
      const app = createApp({ ...stack.deps, redis: down.redis, queues: down.queues, logger });
      const w = await pointsWorld();
      const p = await added(w);
      const r = await client(inProcess(app), w.key).patch(one(w, p.id), {
        metadataIncrement: { points: 20 },
      });
      expect(r.status).toBe(200);
      expect(actionIds(r)).toHaveLength(2);
      expect((await actionsOf(p.id)).map((a) => a.status)).toEqual(['QUEUED', 'QUEUED']);
      await stack.worker!.relay.runOnce();
      await allApplied(p.id, 2);
    } finally {
      await down.close();
    }
  });
});

describe('pointsConversion on the operator API', () => {
  it('refuses a bad pointsConversion with 400 naming the field, and changes nothing', async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeWorld(stack.ctx);
    const good = { metadataKey: 'points', threshold: 10, rewardId: w.reward.id };
    const cases: [unknown, string][] = [
      [{ ...good, metadataKey: '' }, 'pointsConversion.metadataKey'],
      [{ ...good, metadataKey: 'k'.repeat(256) }, 'pointsConversion.metadataKey'],
      [{ ...good, metadataKey: '__proto__' }, 'pointsConversion.metadataKey'],
      [{ ...good, metadataKey: 'constructor' }, 'pointsConversion.metadataKey'],
      [{ ...good, metadataKey: 'prototype' }, 'pointsConversion.metadataKey'],
      [{ ...good, metadataKey: 7 }, 'pointsConversion.metadataKey'],
      [{ ...good, threshold: 0 }, 'pointsConversion.threshold'],
      [{ ...good, threshold: -5 }, 'pointsConversion.threshold'],
      [{ ...good, threshold: '10' }, 'pointsConversion.threshold'],
      [{ ...good, threshold: 2 ** 53 }, 'pointsConversion.threshold'],
      [{ ...good, rewardId: other.reward.id }, 'pointsConversion.rewardId'],
      [{ ...good, rewardId: 'crew_nosuchreward' }, 'pointsConversion.rewardId'],
      [{ ...good, rewardId: '' }, 'pointsConversion.rewardId'],
      [{ metadataKey: 'points', threshold: 10 }, 'pointsConversion.rewardId'],
      [{ ...good, extra: 1 }, 'pointsConversion.extra'],
      ['points', 'pointsConversion'],
    ];
    for (const [pointsConversion, param] of cases) {
      const b = await expectRefused(
        () => op().patch(`/admin/v1/campaigns/${w.campaign.id}`, { name: 'Changed', pointsConversion }),
        400,
        'VALIDATION_ERROR',
      );
      expect(params(b), JSON.stringify(pointsConversion)).toContain(param);
    }
    // A key no body may carry is refused inside pointsConversion too, JSON as written.
    const raw = await expectRefused(
      () =>
        op().patch(
          `/admin/v1/campaigns/${w.campaign.id}`,
          `{"pointsConversion":{"metadataKey":"points","threshold":10,"rewardId":"${w.reward.id}","__proto__":{}}}`,
          { 'content-type': 'application/json' },
        ),
      400,
      'VALIDATION_ERROR',
    );
    expect(params(raw)).toContain('pointsConversion.__proto__');
    // A new campaign has no reward yet: its pointsConversion cannot name one (set it with PATCH).
    const created = await expectRefused(
      () =>
        op().post(`/admin/v1/accounts/${w.account.id}/campaigns`, {
          name: 'Points',
          pointsConversion: good,
        }),
      400,
      'VALIDATION_ERROR',
    );
    expect(params(created)).toEqual(['pointsConversion.rewardId']);
    // The same body on the right campaign is taken.
    const ok = await op().patch(`/admin/v1/campaigns/${w.campaign.id}`, { pointsConversion: good });
    expect(ok.body.pointsConversion).toEqual(good);
  });
});
