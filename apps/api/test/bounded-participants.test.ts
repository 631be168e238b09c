import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EMBEDDED_REWARDS, PAGE_BUDGET_BYTES, ParticipantView } from '@stampcard/core';
import { participantRewards, participants } from '@stampcard/db';
import { eq, sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { client, overHttp, type Reply } from '../../../test/support/client';
import { makeReward, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

// Over real HTTP: the sizes measured are the bytes a caller receives.
const stack = useTestStack({ http: true });

/** The history one participant is given: thousands of rewards, as the issue found (20,000 made 5.3 MB). */
const HISTORY = 3000;

const SECURITY_DOC = fileURLToPath(new URL('../../../docs/security.md', import.meta.url));

/** The bound docs/security.md's "Bounded answers" states for one Participant object: `B bytes + P bytes per reward`. */
function statedParticipantBound(): { base: number; perReward: number } {
  const text = readFileSync(SECURITY_DOC, 'utf8');
  const section = text.slice(text.indexOf('### Bounded answers'));
  const m =
    /A Participant object is at most ([\d,]+) bytes \+ ([\d,]+) bytes per reward of its campaign/.exec(
      section,
    );
  expect(m, 'docs/security.md states the bound of a Participant object').not.toBeNull();
  const n = (s: string) => Number(s.replaceAll(',', ''));
  return { base: n(m![1]!), perReward: n(m![2]!) };
}

/** A request over HTTP, answered with its exact size on the wire. */
async function sized(api: ReturnType<typeof client>, send: (a: typeof api) => Promise<Reply>) {
  const reply = await send(api);
  expect(reply.status, JSON.stringify(reply.body).slice(0, 500)).toBe(200);
  return { ...reply, bytes: Buffer.byteLength(JSON.stringify(reply.body)) };
}

/** Every reward of a participant in the paged list's order: oldest first, ties by id byte by byte. */
async function historyOf(participantId: string) {
  const rows = await stack.ctx.db
    .select({ id: participantRewards.id, createdAt: participantRewards.createdAt })
    .from(participantRewards)
    .where(eq(participantRewards.participantId, participantId));
  return rows
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((r) => r.id);
}

/**
 * Gives a participant `n` more rewards of `rewardId` in one statement, earned a day ago and before (three at a
 * time in the same millisecond, so ties go by id), and counts them on the participant as the service does.
 */
async function seedHistory(p: { id: string; campaignId: string }, rewardId: string, n: number) {
  await stack.ctx.db.execute(sql`
    insert into ${participantRewards} (id, campaign_id, participant_id, reward_id, status, approved, approved_at,
      is_fulfilled, fulfilled_at, unread, earned_month, created_at)
    select 'prew_' || substr(md5(${p.id} || g::text), 1, 20), ${p.campaignId}, ${p.id}, ${rewardId}, 'FULFILLED',
      true, now() - interval '1 day', true, now() - interval '1 day', false, to_char(now(), 'YYYY-MM'),
      now() - interval '1 day' - (${n} - g) / 3 * interval '1 millisecond'
    from generate_series(1, ${n}) as g`);
  await stack.ctx.db.execute(
    sql`update ${participants} set reward_count = reward_count + ${n} where id = ${p.id}`,
  );
}

describe('a participant with thousands of rewards', () => {
  let w: Awaited<ReturnType<typeof makeWorld>>;
  let api: ReturnType<typeof client>;
  let heavy: { id: string; email: string; campaignId: string };
  /** The heavy participant's rewards, oldest first. */
  let history: string[];

  /** What every answer that shows the heavy participant must carry: the newest rewards and the total. */
  function expectBounded(p: any) {
    expect(() => ParticipantView.parse(p)).not.toThrow();
    expect(p.rewards.map((r: { id: string }) => r.id)).toEqual(history.slice(-EMBEDDED_REWARDS).reverse());
    expect(p.rewardCount).toBe(history.length);
    expect(p.moreRewards).toBe(true);
    expect(p.rewardsUrl).toBe(`/v1/campaign/${heavy.campaignId}/participant/${heavy.id}/rewards`);
  }
  /** The heavy participant as shown: small whatever its history (20 rewards of about 270 bytes, and its fields). */
  const SMALL = 12 * 1024;

  beforeAll(async () => {
    // Rewards wait for approval here, so that one can be removed through the API below.
    w = await makeWorld(stack.ctx, {
      reward: { conversionsRequired: 1, isUnlimited: true },
      campaign: { requireRewardApproval: true },
    });
    api = client(overHttp(stack.baseUrl!), w.key);
    const email = uniqueEmail('heavy');
    const act = async (participantEmail: string) => {
      const res = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
        participantEmail,
        rewardId: w.reward.id,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.action.status).toBe('APPLIED');
      return res.body.action;
    };
    const first = await act(email);
    heavy = { id: first.participantId, email, campaignId: w.campaign.id };
    await seedHistory(heavy, w.reward.id, HISTORY);
    // Rewards earned through the pipeline after the seeded ones: the newest, counted by the worker.
    for (let i = 0; i < 3; i++) await act(email);
    for (let i = 0; i < 5; i++) await act(uniqueEmail('light'));
    history = await historyOf(heavy.id);
    expect(history).toHaveLength(HISTORY + 4);
  });

  it('GET participant, by email and by id, embeds the newest rewards and the total, not the history', async () => {
    for (const key of [heavy.email, heavy.id]) {
      const res = await sized(api, (a) => a.get(`/v1/campaign/${w.campaign.id}/participant/${key}`));
      expect(res.bytes).toBeLessThan(SMALL);
      expectBounded(res.body);
    }
  });

  it('the add and update answers, and the stored Idempotency-Key answer, are as small', async () => {
    const path = `/v1/campaign/${w.campaign.id}/participant`;
    const added = await sized(api, (a) => a.post(path, { email: heavy.email }));
    expect(added.body.id).toBe(heavy.id);
    expect(added.bytes).toBeLessThan(SMALL);
    expectBounded(added.body);

    const patched = await sized(api, (a) => a.patch(`${path}/${heavy.id}`, { notes: 'patched' }));
    expect(patched.body.notes).toBe('patched');
    expect(patched.bytes).toBeLessThan(SMALL);
    expectBounded(patched.body);

    const key = `bounded-${Date.now()}`;
    const update = (a: typeof api) =>
      a.post(`${path}/${heavy.email}`, { notes: 'posted' }, { 'Idempotency-Key': key });
    const first = await sized(api, update);
    expectBounded(first.body);
    const replay = await sized(api, update);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    expect(replay.bytes).toBeLessThan(SMALL);
    // Whatever form the store keeps it in, no stored answer is larger than what was answered, and a bit more.
    const [stored] = await stack.ctx.db.execute<{ bytes: number }>(
      sql`select max(octet_length(k::text))::integer as bytes from idempotency_keys as k`,
    );
    expect(stored!.bytes).toBeLessThan(2 * SMALL);
  });

  it('a participants page and a leaderboard page carry the newest rewards of each and stay small', async () => {
    const list = await sized(api, (a) => a.get(`/v1/campaign/${w.campaign.id}/participants?limit=100`));
    const board = await sized(api, (a) => a.get(`/v1/campaign/${w.campaign.id}/leaderboard?limit=100`));
    for (const page of [list, board]) {
      expect(page.body.participants).toHaveLength(6);
      expect(page.bytes).toBeLessThan(SMALL + 5 * 2048);
      const shown = page.body.participants.find((p: { id: string }) => p.id === heavy.id);
      expectBounded(shown);
      for (const light of page.body.participants.filter((p: { id: string }) => p.id !== heavy.id)) {
        expect(light.rewards).toHaveLength(1);
        expect(light.rewardCount).toBe(1);
        expect(light.moreRewards).toBe(false);
      }
    }
    expect(board.body.participants[0].id).toBe(heavy.id);
  });

  it('the paged rewards list walks the whole history exactly once, oldest first, in bounded pages', async () => {
    const seen: string[] = [];
    let url: string | null = `/v1/campaign/${w.campaign.id}/participant/${heavy.id}/rewards?limit=100`;
    let pages = 0;
    while (url && pages < 100) {
      const page = await sized(api, (a) => a.get(url!));
      pages += 1;
      expect(page.body.rewards.length).toBeLessThanOrEqual(100);
      // A reward is at most about 270 bytes: a full page stays under 100 of them and the envelope.
      expect(page.bytes).toBeLessThan(100 * 300);
      seen.push(...page.body.rewards.map((r: { id: string }) => r.id));
      url = page.body.more
        ? `/v1/campaign/${w.campaign.id}/participant/${heavy.id}/rewards?limit=100&nextId=${page.body.nextId}`
        : null;
    }
    expect(pages).toBe(Math.ceil(history.length / 100));
    expect(seen).toEqual(history);
  });

  it('rewardCount follows the pipeline and removals: the counter is kept in place', async () => {
    const before = (await api.get(`/v1/campaign/${w.campaign.id}/participant/${heavy.id}`)).body;
    // The newest reward is one the worker wrote, waiting for approval: removing it takes it off the count.
    const newest = before.rewards[0];
    expect(newest.approved).toBe(false);
    const removed = await api.delete(`/v1/campaign/${w.campaign.id}/reward/${newest.id}`);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    history = history.filter((id) => id !== newest.id);
    const after = await sized(api, (a) => a.get(`/v1/campaign/${w.campaign.id}/participant/${heavy.id}`));
    expectBounded(after.body);
    expect(after.body.rewardCount).toBe(before.rewardCount - 1);
    const [row] = await stack.ctx.db
      .select({ n: sql<number>`count(*)::integer` })
      .from(participantRewards)
      .where(eq(participantRewards.participantId, heavy.id));
    expect(after.body.rewardCount).toBe(row!.n);
  });
});

describe('the largest participants page', () => {
  it('stays within the page budget and the item bound docs/security.md states, 100 participants at every field limit', async () => {
    const { base, perReward } = statedParticipantBound();
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1, isUnlimited: true } });
    const rewardIds = [w.reward.id];
    for (let i = 0; i < 9; i++) rewardIds.push((await makeReward(stack.ctx, w.campaign.id)).id);
    const api = client(overHttp(stack.baseUrl!), w.key);
    // JSON writes a control character as six bytes (`\u0001`): the widest a string of the limit's length gets.
    const wide = (n: number) => '\u0001'.repeat(n);
    const domain = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(57)}.com`;
    const metadata: Record<string, string> = {};
    for (let i = 0; i < 99; i++) metadata[`k${String(i).padStart(2, '0')}`] = 'v'.repeat(150);
    while (Buffer.byteLength(JSON.stringify(metadata)) > 16 * 1024) metadata.k98 = metadata.k98!.slice(1);
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await api.post(`/v1/campaign/${w.campaign.id}/participant`, {
        email: `${`p${i}`.padEnd(64, 'x')}@${domain}`,
        firstName: wide(255),
        lastName: wide(255),
        notes: wide(10_000),
        metadata,
      });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
      expect(res.body.email).toHaveLength(254);
      ids.push(res.body.id);
    }
    // Every counter at its widest, a count for every reward of the campaign, and more rewards than are shown.
    const counts = Object.fromEntries(rewardIds.map((id) => [id, 2_147_483_647]));
    await stack.ctx.db.execute(sql`
      update ${participants} set loyalty_action_count = 2147483647, monthly_loyalty_action_count = 2147483647,
        prev_monthly_loyalty_action_count = 2147483647, counts_month = to_char(now(), 'YYYY-MM'),
        loyalty_action_counts_per_reward = ${JSON.stringify(counts)}::jsonb,
        monthly_loyalty_action_counts_per_reward = ${JSON.stringify(counts)}::jsonb
      where campaign_id = ${w.campaign.id}`);
    for (const id of ids) await seedHistory({ id, campaignId: w.campaign.id }, w.reward.id, 25);

    const bound = base + perReward * rewardIds.length;
    // 100 such participants made a page of 9 MB: a page now stops before the budget, and the cursor goes on.
    const operatorApi = client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
    const lists = [
      { api, path: `/v1/campaign/${w.campaign.id}/participants` },
      { api, path: `/v1/campaign/${w.campaign.id}/leaderboard` },
      { api: operatorApi, path: `/admin/v1/campaigns/${w.campaign.id}/participants` },
    ];
    for (const list of lists) {
      const seen: string[] = [];
      let url: string | null = `${list.path}?limit=100`;
      let pages = 0;
      while (url !== null && pages < 100) {
        const page = await sized(list.api, (a) => a.get(url!));
        pages += 1;
        expect(page.bytes).toBeLessThanOrEqual(PAGE_BUDGET_BYTES);
        expect(page.body.limit).toBe(100);
        for (const p of page.body.participants) {
          expect(p.rewards).toHaveLength(EMBEDDED_REWARDS);
          expect(p.rewardCount).toBe(25);
          expect(Buffer.byteLength(JSON.stringify(p))).toBeLessThanOrEqual(bound);
        }
        seen.push(...page.body.participants.map((p: { id: string }) => p.id));
        url = page.body.more ? `${list.path}?limit=100&nextId=${page.body.nextId}` : null;
      }
      expect(pages, list.path).toBeGreaterThan(1);
      expect(new Set(seen).size, list.path).toBe(seen.length);
      expect([...seen].sort(), list.path).toEqual([...ids].sort());
    }
    // One participant read carries all three ranks: still within the bound.
    const one = await sized(api, (a) => a.get(`/v1/campaign/${w.campaign.id}/participant/${ids[0]}`));
    expect(one.bytes).toBeLessThanOrEqual(bound);
  });
});
