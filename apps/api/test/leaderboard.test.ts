import {
  countLeaderboardBuckets,
  LEADERBOARD_TYPES,
  type LeaderboardType,
  manualClock,
  RANK_FIELD,
  storedLeaderboardBuckets,
} from '@stampcard/core';
import { describe, expect, it } from 'vitest';
import { client, inProcess, type Reply } from '../../../test/support/client';
import { makeCampaign, makeUserWithKey, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { refusals } from '../../../test/support/refused';
import { useTestStack } from '../../../test/support/use';

/** The service's clock: each test sets the month it starts in, and moves it across month ends. */
const clock = manualClock('2026-03-10T12:00:00Z');
const stack = useTestStack({ clock });
const expectRefused = refusals(stack);

type World = Awaited<ReturnType<typeof makeWorld>>;
type Item = {
  id: string;
  email: string;
  rank?: number;
  monthlyRank?: number;
  prevMonthlyRank?: number;
} & Record<string, any>;

const api = (key?: string) => client(inProcess(stack.app), key);
const at = (w: World, campaignId = w.campaign.id) => `/v1/campaign/${campaignId}`;
const board = (w: World, query = '') => api(w.key).get(`${at(w)}/leaderboard${query ? `?${query}` : ''}`);

/** Adds a participant with no action, one second after the previous join (so join order is explicit). */
async function join(w: World, tag = 'p') {
  clock.advance(1000);
  const r = await api(w.key).post(`${at(w)}/participant`, { email: uniqueEmail(tag) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as Item;
}

/** `n` loyalty actions for a participant, each applied before the next is sent. */
async function act(w: World, p: { email: string }, n = 1) {
  for (let i = 0; i < n; i++) {
    const r = await api(w.key).post(`${at(w)}/loyalty-action?wait=true`, {
      participantEmail: p.email,
      rewardId: w.reward.id,
    });
    expect(r.body.action?.status, JSON.stringify(r.body)).toBe('APPLIED');
  }
}

/** One page (200 expected), its shape checked. */
async function page(
  w: World,
  query: string,
): Promise<{ participants: Item[]; nextId: string | null; more: boolean }> {
  const r = await board(w, query);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(Object.keys(r.body).sort()).toEqual(['limit', 'more', 'nextId', 'participants']);
  expect(r.body.nextId === null).toBe(!r.body.more);
  return r.body;
}

/** The whole leaderboard in one page. */
async function whole(w: World, type: LeaderboardType): Promise<Item[]> {
  const r = await page(w, `leaderboardType=${type}&limit=100`);
  expect(r.more).toBe(false);
  return r.participants;
}

const emails = (items: Item[]) => items.map((p) => p.email);

/** Pages through a leaderboard `limit` at a time: each page starts where the previous page's `nextId` said. */
async function walk(w: World, type: LeaderboardType, limit: number): Promise<Item[]> {
  const seen: Item[] = [];
  let nextId: string | null = null;
  do {
    const r = await page(w, `leaderboardType=${type}&limit=${limit}${nextId ? `&nextId=${nextId}` : ''}`);
    if (nextId) expect(r.participants[0]?.id).toBe(nextId);
    expect(r.participants.length).toBe(r.more ? limit : r.participants.length);
    seen.push(...r.participants);
    nextId = r.nextId;
  } while (nextId && seen.length < 1000);
  return seen;
}

/**
 * Every participant's own ranks (GET participant) are its positions on the three leaderboards: `rank` on
 * ALL_TIME, `monthlyRank` on CURRENT_MONTH (0 when not on it), `prevMonthlyRank` on PREV_MONTH (0 when not on
 * it, absent when it joined this month). And each leaderboard item carries its position as the rank of its board.
 */
async function expectRanksAgree(w: World, everyone: Item[]) {
  const boards = Object.fromEntries(
    await Promise.all(LEADERBOARD_TYPES.map(async (t) => [t, await whole(w, t)] as const)),
  ) as Record<LeaderboardType, Item[]>;
  for (const type of LEADERBOARD_TYPES) {
    boards[type].forEach((item, i) => {
      expect(item[RANK_FIELD[type]], `${type} #${i + 1}`).toBe(i + 1);
      for (const other of LEADERBOARD_TYPES)
        if (other !== type) expect(item).not.toHaveProperty(RANK_FIELD[other]);
    });
  }
  const position = (type: LeaderboardType, id: string) => boards[type].findIndex((p) => p.id === id) + 1;
  const monthStarted = Date.UTC(clock.now().getUTCFullYear(), clock.now().getUTCMonth(), 1);
  for (const p of everyone) {
    const r = await api(w.key).get(`${at(w)}/participant/${p.id}`);
    expect(r.status).toBe(200);
    expect(r.body.rank, p.email).toBe(position('ALL_TIME', p.id));
    expect(r.body.monthlyRank, p.email).toBe(position('CURRENT_MONTH', p.id));
    if (r.body.createdAt >= monthStarted) expect(r.body).not.toHaveProperty('prevMonthlyRank');
    else expect(r.body.prevMonthlyRank, p.email).toBe(position('PREV_MONTH', p.id));
  }
  return boards;
}

/** The buckets the worker and removals maintain are exactly a count of the participants' rows. */
async function expectBucketsExact(w: World) {
  expect(await storedLeaderboardBuckets(stack.ctx, w.campaign.id)).toEqual(
    await countLeaderboardBuckets(stack.ctx, w.campaign.id),
  );
}

/** Every way a caller can fail to reach the campaign: each a 403 that writes nothing. */
async function expectForbidden(w: World, send: (key: string | undefined) => Promise<Reply>) {
  const other = await makeWorld(stack.ctx);
  const member = await makeUserWithKey(stack.ctx, w.account.id, { role: 'MEMBER', campaignIds: [] });
  const b = await expectRefused(() => send(other.key), 403, 'NOT_AUTHORIZED');
  expect(b.message).toMatch(/another account/);
  await expectRefused(() => send(member.key), 403, 'NOT_AUTHORIZED');
  await expectRefused(() => send(undefined), 403, 'NOT_AUTHORIZED');
}

const unlimited = { reward: { isUnlimited: true, conversionsRequired: 2 } };

describe('GET /v1/campaign/{id}/leaderboard', () => {
  it('ranks by count descending, ties by earlier join; ALL_TIME lists everyone, the months only those who acted', async () => {
    clock.set('2026-03-10T12:00:00Z');
    const w = await makeWorld(stack.ctx, unlimited);
    const early = await join(w, 'early'); // 1 action
    const top = await join(w, 'top'); // 3
    const late = await join(w, 'late'); // 1, joined after early
    const idle = await join(w, 'idle'); // none
    const mid = await join(w, 'mid'); // 2
    await act(w, late);
    await act(w, top, 3);
    await act(w, mid, 2);
    await act(w, early);

    const all = await whole(w, 'ALL_TIME');
    expect(emails(all)).toEqual(emails([top, mid, early, late, idle]));
    expect(all.map((p) => [p.loyaltyActionCount, p.rank])).toEqual([
      [3, 1],
      [2, 2],
      [1, 3],
      [1, 4],
      [0, 5],
    ]);
    // Items are whole participants with their rewards (mid and top earned one at 2 actions).
    expect(all[0]).toMatchObject({ email: top.email, isWinner: true, rewards: [{ rewardId: w.reward.id }] });
    expect(all[4]).toMatchObject({ email: idle.email, rewards: [] });
    // ALL_TIME is the default.
    expect((await page(w, '')).participants).toEqual(all);

    const month = await whole(w, 'CURRENT_MONTH');
    expect(emails(month)).toEqual(emails([top, mid, early, late]));
    expect(month.map((p) => p.monthlyRank)).toEqual([1, 2, 3, 4]);
    // Nobody acted in February.
    expect((await board(w, 'leaderboardType=PREV_MONTH')).body).toEqual({
      participants: [],
      limit: 20,
      nextId: null,
      more: false,
    });
    await expectRanksAgree(w, [early, top, late, idle, mid]);

    // One more action for late moves it past early, and past mid (2 as well, but joined after late).
    await act(w, late);
    expect(emails(await whole(w, 'ALL_TIME'))).toEqual(emails([top, late, mid, early, idle]));
    expect(emails(await whole(w, 'CURRENT_MONTH'))).toEqual(emails([top, late, mid, early]));
    await expectRanksAgree(w, [early, top, late, idle, mid]);
    await expectBucketsExact(w);
  });

  it('breaks ties of the same join instant by id, byte by byte', async () => {
    clock.set('2026-03-10T12:00:00Z');
    const w = await makeWorld(stack.ctx, unlimited);
    // The clock stands still: all five join in the same millisecond.
    const tied: Item[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await api(w.key).post(`${at(w)}/participant`, { email: uniqueEmail('same') });
      tied.push(r.body as Item);
    }
    for (const p of tied) await act(w, p);
    const byId = tied.map((p) => p.id).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const type of ['ALL_TIME', 'CURRENT_MONTH'] as const) {
      expect((await whole(w, type)).map((p) => p.id)).toEqual(byId);
    }
    await expectRanksAgree(w, tied);
  });

  it('moves the month across its end with the clock: counts and ranks go to prev…, the month restarts at 0', async () => {
    clock.set('2026-03-05T09:00:00Z');
    const w = await makeWorld(stack.ctx, unlimited);
    const a = await join(w, 'a'); // March: 3
    const c = await join(w, 'c'); // March: 2
    const b = await join(w, 'b'); // March: 1, April: 2
    const e = await join(w, 'e'); // never acts
    await act(w, a, 3);
    await act(w, c, 2);
    await act(w, b);
    expect(emails(await whole(w, 'CURRENT_MONTH'))).toEqual(emails([a, c, b]));
    await expectRanksAgree(w, [a, b, c, e]);

    // The last millisecond of March, then the first of April: no write in between, no cron.
    clock.set('2026-03-31T23:59:59.999Z');
    expect(emails(await whole(w, 'CURRENT_MONTH'))).toEqual(emails([a, c, b]));
    clock.set('2026-04-01T00:00:00.000Z');
    expect(await whole(w, 'CURRENT_MONTH')).toEqual([]);
    const prev = await whole(w, 'PREV_MONTH');
    expect(emails(prev)).toEqual(emails([a, c, b]));
    expect(
      prev.map((p) => [p.monthlyLoyaltyActionCount, p.prevMonthlyLoyaltyActionCount, p.prevMonthlyRank]),
    ).toEqual([
      [0, 3, 1],
      [0, 2, 2],
      [0, 1, 3],
    ]);
    const aNow = await api(w.key).get(`${at(w)}/participant/${a.id}`);
    expect(aNow.body).toMatchObject({
      loyaltyActionCount: 3,
      monthlyLoyaltyActionCount: 0,
      prevMonthlyLoyaltyActionCount: 3,
      rank: 1,
      monthlyRank: 0,
      prevMonthlyRank: 1,
    });
    await expectRanksAgree(w, [a, b, c, e]);

    // April: b acts twice (its row rolls: March's count moves to prev…), d joins and acts once.
    clock.set('2026-04-02T10:00:00Z');
    await act(w, b, 2);
    const d = await join(w, 'd');
    await act(w, d);
    expect(emails(await whole(w, 'CURRENT_MONTH'))).toEqual(emails([b, d]));
    // March's leaderboard merges rows last written in March (a, c) with b's, written in April: still by count.
    expect(emails(await whole(w, 'PREV_MONTH'))).toEqual(emails([a, c, b]));
    // All-time: a and b both have 3, a joined first.
    expect(emails(await whole(w, 'ALL_TIME'))).toEqual(emails([a, b, c, d, e]));
    const dNow = await api(w.key).get(`${at(w)}/participant/${d.id}`);
    expect(dNow.body).toMatchObject({ monthlyRank: 2 });
    expect(dNow.body).not.toHaveProperty('prevMonthlyRank'); // joined in April
    expect((await api(w.key).get(`${at(w)}/participant/${e.id}`)).body).toMatchObject({
      monthlyRank: 0,
      prevMonthlyRank: 0,
    });
    await expectRanksAgree(w, [a, b, c, d, e]);

    // May: April's board is last month's; March's is history. Nobody acted in May yet.
    clock.set('2026-05-01T00:00:00Z');
    expect(await whole(w, 'CURRENT_MONTH')).toEqual([]);
    const april = await whole(w, 'PREV_MONTH');
    expect(emails(april)).toEqual(emails([b, d]));
    expect(april.map((p) => p.prevMonthlyLoyaltyActionCount)).toEqual([2, 1]);
    await expectRanksAgree(w, [a, b, c, d, e]);

    // A month skipped: June shows nothing for May, nor this month.
    clock.set('2026-06-15T00:00:00Z');
    expect(await whole(w, 'PREV_MONTH')).toEqual([]);
    expect(await whole(w, 'CURRENT_MONTH')).toEqual([]);
    expect(emails(await whole(w, 'ALL_TIME'))).toEqual(emails([a, b, c, d, e]));
    await expectRanksAgree(w, [a, b, c, d, e]);
    await expectBucketsExact(w);
  });

  it('pages through each leaderboard visiting every participant once, ranks running on across pages', async () => {
    clock.set('2026-03-03T08:00:00Z');
    const w = await makeWorld(stack.ctx, unlimited);
    // March counts, then April counts: ties within each month, some acting in one month only.
    const plan: [number, number][] = [
      [2, 0],
      [1, 1],
      [3, 2],
      [1, 0],
      [0, 2],
      [2, 1],
      [0, 0],
      [1, 3],
      [2, 2],
      [0, 1],
      [1, 0],
    ];
    const everyone: Item[] = [];
    for (const _ of plan) everyone.push(await join(w));
    for (const [i, [march]] of plan.entries()) await act(w, everyone[i]!, march);
    clock.set('2026-04-10T08:00:00Z');
    for (const [i, [, april]] of plan.entries()) await act(w, everyone[i]!, april);

    const sizes = { ALL_TIME: plan.length, CURRENT_MONTH: 7, PREV_MONTH: 8 };
    for (const type of LEADERBOARD_TYPES) {
      const full = await whole(w, type);
      expect(full).toHaveLength(sizes[type]);
      for (const limit of [1, 3, 4]) {
        const walked = await walk(w, type, limit);
        expect(walked, `${type} by ${limit}`).toEqual(full);
        expect(new Set(walked.map((p) => p.id)).size).toBe(walked.length);
      }
    }
    // Counts never rise along a leaderboard; within a count, join order.
    const march = await whole(w, 'PREV_MONTH');
    const counts = march.map((p) => p.prevMonthlyLoyaltyActionCount);
    expect(counts).toEqual([...counts].sort((x, y) => y - x));
    for (let i = 1; i < march.length; i++) {
      if (counts[i] === counts[i - 1]) expect(march[i]!.createdAt).toBeGreaterThan(march[i - 1]!.createdAt);
    }
    await expectRanksAgree(w, everyone);
    await expectBucketsExact(w);
  });

  it('keeps the leaderboards exact under concurrent actions and removals', async () => {
    clock.set('2026-03-20T08:00:00Z');
    const w = await makeWorld(stack.ctx, unlimited);
    const everyone: Item[] = [];
    for (let i = 0; i < 6; i++) everyone.push(await join(w));
    // 30 actions at once: the worker applies them in batches that share participants and buckets.
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        api(w.key).post(`${at(w)}/loyalty-action?wait=true`, {
          participantEmail: everyone[i % 4]!.email,
          rewardId: w.reward.id,
          metadata: { n: i }, // not the same request twice (that would be a 409)
        }),
      ),
    );
    for (const r of replies) expect(r.body.action?.status, JSON.stringify(r.body)).toBe('APPLIED');
    await expectBucketsExact(w);
    // Removing one takes it off every board; the others close up.
    const gone = everyone[0]!;
    expect((await api(w.key).delete(`${at(w)}/participant/${gone.id}`)).status).toBe(200);
    const rest = everyone.slice(1);
    const boards = await expectRanksAgree(w, rest);
    for (const type of LEADERBOARD_TYPES) expect(boards[type].map((p) => p.id)).not.toContain(gone.id);
    expect(boards.ALL_TIME).toHaveLength(5);
    await expectBucketsExact(w);
  });

  it('answers 404 for a nextId that is not on that leaderboard, and writes nothing', async () => {
    clock.set('2026-03-10T12:00:00Z');
    const w = await makeWorld(stack.ctx, unlimited);
    const active = await join(w);
    const idle = await join(w);
    const gone = await join(w);
    await act(w, active);
    await act(w, gone);
    expect((await api(w.key).delete(`${at(w)}/participant/${gone.id}`)).status).toBe(200);
    const stranger = await makeWorld(stack.ctx, unlimited);
    const theirs = await join(stranger);
    await act(stranger, theirs);

    for (const [type, nextId] of [
      ['ALL_TIME', 'nosuchparticipant'],
      ['ALL_TIME', theirs.id], // another campaign's
      ['ALL_TIME', gone.id], // removed
      ['ALL_TIME', encodeURIComponent(active.email)], // an email is not an id
      ['CURRENT_MONTH', idle.id], // no action this month
      ['PREV_MONTH', active.id], // no action last month
    ] as const) {
      const b = await expectRefused(
        () => board(w, `leaderboardType=${type}&nextId=${nextId}`),
        404,
        'NOT_FOUND',
      );
      expect(b.message).toContain(`${type} leaderboard`);
    }
    // The same ids that are on a leaderboard page fine.
    expect((await page(w, `nextId=${idle.id}`)).participants.map((p) => p.id)).toEqual([idle.id]);
    expect(
      (await page(w, `leaderboardType=CURRENT_MONTH&nextId=${active.id}`)).participants[0],
    ).toMatchObject({
      id: active.id,
      monthlyRank: 1,
    });
  });

  it('refuses bad input with 400, an unknown or DELETED campaign with 404, callers who cannot reach it with 403', async () => {
    clock.set('2026-03-10T12:00:00Z');
    const w = await makeWorld(stack.ctx, unlimited);
    for (const [q, param] of [
      ['leaderboardType=WEEKLY', 'leaderboardType'],
      ['leaderboardType=all_time', 'leaderboardType'],
      ['leaderboardType=', 'leaderboardType'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['nextId=', 'nextId'],
      [`nextId=${'x'.repeat(65)}`, 'nextId'],
      ['sort=desc', 'sort'],
    ] as const) {
      const b = await expectRefused(() => board(w, q), 400, 'VALIDATION_ERROR');
      expect(b.errors, q).toEqual([expect.objectContaining({ location: 'query', param })]);
    }
    await expectRefused(() => api(w.key).get('/v1/campaign/nosuchcampaign/leaderboard'), 404, 'NOT_FOUND');
    const deleted = await makeCampaign(stack.ctx, w.account.id, { status: 'DELETED' });
    await expectRefused(() => api(w.key).get(`${at(w, deleted.id)}/leaderboard`), 404, 'NOT_FOUND');
    // Every status but DELETED has leaderboards.
    for (const status of ['DRAFT', 'COMPLETE'] as const) {
      const c = await makeCampaign(stack.ctx, w.account.id, { status });
      expect((await api(w.key).get(`${at(w, c.id)}/leaderboard`)).status).toBe(200);
    }
    await expectForbidden(w, (key) => api(key).get(`${at(w)}/leaderboard`));
  });
});
