import { accounts, campaigns, events, loyaltyActions, participants } from '@stampcard/db';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, expectErrorShape, overHttp, type Reply } from '../../../test/support/client';
import { makeCampaign, makeReward, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';

/**
 * 402: the participant quota is exact under concurrency on every path that creates participants (adding one,
 * and a trigger by email that adds one). Requests go over HTTP, all at once. The worker does not run: a
 * trigger's action stays QUEUED, and only the requests under test write.
 */
const stack = useTestStack({ http: true, worker: false });

/** High enough that no rate limit, slowdown or concurrency limit refuses the parallel requests. */
const GENEROUS = {
  second: 1_000_000,
  minute: 1_000_000,
  hour: 1_000_000,
  concurrency: 1000,
  slowdownAfter: 0,
};
const PARALLEL = 10;
const ROUNDS = 3;
const QUOTA_MESSAGE = 'Participant quota has been exhausted: upgrade the plan to add more participants';

type World = Awaited<ReturnType<typeof makeWorld>>;
type Campaign = World['campaign'];
type Create = (w: World, campaign: Campaign, email: string) => Promise<Reply>;

const api = (key: string) => client(overHttp(stack.baseUrl!), key);
let requests = 0;

const PATHS: Record<string, { create: Create; actions: boolean }> = {
  'POST …/participant': {
    create: (w, campaign, email) => api(w.key).post(`/v1/campaign/${campaign.id}/participant`, { email }),
    actions: false,
  },
  'POST …/loyalty-action (by email, adding the participant)': {
    create: async (w, campaign, email) => {
      const [reward] = campaign.id === w.campaign.id ? [w.reward] : [await rewardOf(campaign)];
      // A metadata of its own: identical triggers in flight would be refused as duplicates (409).
      return api(w.key).post(`/v1/campaign/${campaign.id}/loyalty-action`, {
        participantEmail: email,
        rewardId: reward!.id,
        metadata: { request: String(requests++) },
      });
    },
    actions: true,
  },
};

const rewards = new Map<string, Awaited<ReturnType<typeof makeReward>>>();
async function rewardOf(campaign: Campaign) {
  let reward = rewards.get(campaign.id);
  if (!reward) {
    reward = await makeReward(stack.ctx, campaign.id);
    rewards.set(campaign.id, reward);
  }
  return reward;
}

/** What the database says about the account's participants: its counter, the campaigns' counters, the rows. */
async function counts(accountId: string) {
  const [account] = await stack.ctx.db.select().from(accounts).where(eq(accounts.id, accountId));
  const campaignRows = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.accountId, accountId));
  const ids = campaignRows.map((c) => c.id);
  const [rows] = await stack.ctx.db
    .select({ n: sql<number>`count(*)::int` })
    .from(participants)
    .where(inArray(participants.campaignId, ids));
  const [added] = await stack.ctx.db
    .select({ n: sql<number>`count(*)::int` })
    .from(events)
    .where(and(inArray(events.campaignId, ids), eq(events.type, 'NEW_PARTICIPANT_ADDED')));
  const [actions] = await stack.ctx.db
    .select({ n: sql<number>`count(*)::int` })
    .from(loyaltyActions)
    .where(inArray(loyaltyActions.campaignId, ids));
  return {
    quota: account!.participantQuota!,
    accountCount: account!.participantCount,
    campaignCounts: campaignRows.reduce((n, c) => n + c.participantCount, 0),
    participantRows: rows!.n,
    addedEvents: added!.n,
    actions: actions!.n,
  };
}

/** The account one participant short of its quota. */
async function oneBelowQuota(accountId: string) {
  await stack.ctx.db
    .update(accounts)
    .set({ participantQuota: sql`${accounts.participantCount} + 1` })
    .where(eq(accounts.id, accountId));
}

/** Exactly one 200; every other answer the documented 402. */
function expectOneAdmitted(replies: Reply[]) {
  const admitted = replies.filter((r) => r.status === 200);
  expect(admitted, JSON.stringify(replies.map((r) => [r.status, r.body?.code]))).toHaveLength(1);
  for (const r of replies.filter((x) => x.status !== 200)) {
    const body = expectErrorShape(r, 402, 'USAGE_LIMIT');
    expect(body.name).toBe('UsageLimit');
    expect(body.message).toBe(QUOTA_MESSAGE);
  }
  return admitted[0]!;
}

describe('402 USAGE_LIMIT is exact under concurrency', () => {
  for (const [name, path] of Object.entries(PATHS)) {
    it(`${name}: ${PARALLEL} parallel creations one below the quota admit exactly one`, async () => {
      const w = await makeWorld(stack.ctx, { account: { participantQuota: 2, rateLimits: GENEROUS } });
      // Two participants already: the quota is then raised to one more than the count, round after round.
      for (const email of [uniqueEmail(), uniqueEmail()]) {
        expect((await path.create(w, w.campaign, email)).status).toBe(200);
      }
      for (let round = 1; round <= ROUNDS; round++) {
        await oneBelowQuota(w.account.id);
        const before = await counts(w.account.id);
        expect(before.accountCount).toBe(before.quota - 1);
        const emails = Array.from({ length: PARALLEL }, () => uniqueEmail('quota'));
        const replies = await Promise.all(emails.map((email) => path.create(w, w.campaign, email)));
        const winner = expectOneAdmitted(replies);

        const after = await counts(w.account.id);
        expect(after).toEqual({
          quota: before.quota,
          accountCount: before.quota,
          campaignCounts: before.quota,
          participantRows: before.quota,
          addedEvents: before.quota,
          actions: before.actions + (path.actions ? 1 : 0),
        });
        // The one admitted is the one stored.
        const email = path.actions ? null : (winner.body.email as string);
        if (email) {
          const [row] = await stack.ctx.db.select().from(participants).where(eq(participants.email, email));
          expect(row?.id).toBe(winner.body.id);
        } else {
          const [row] = await stack.ctx.db
            .select()
            .from(participants)
            .where(eq(participants.id, winner.body.action.participantId));
          expect(emails).toContain(row?.email);
        }
      }
    });
  }

  it('across both paths and two campaigns of one account: one admitted in all', async () => {
    const w = await makeWorld(stack.ctx, { account: { participantQuota: 1, rateLimits: GENEROUS } });
    const second = await makeCampaign(stack.ctx, w.account.id);
    expect((await PATHS['POST …/participant']!.create(w, w.campaign, uniqueEmail())).status).toBe(200);
    for (let round = 1; round <= ROUNDS; round++) {
      await oneBelowQuota(w.account.id);
      const before = await counts(w.account.id);
      const creates = Object.values(PATHS).flatMap((path) =>
        [w.campaign, second].flatMap((campaign) =>
          Array.from(
            { length: PARALLEL / 4 + 1 },
            () => () => path.create(w, campaign, uniqueEmail('mixed')),
          ),
        ),
      );
      const replies = await Promise.all(creates.map((create) => create()));
      expectOneAdmitted(replies);
      const after = await counts(w.account.id);
      expect(after.accountCount).toBe(before.quota);
      expect(after.campaignCounts).toBe(before.quota);
      expect(after.participantRows).toBe(before.quota);
      expect(after.addedEvents).toBe(before.quota);
    }
  });

  it('an existing participant is never refused at the quota, on either path', async () => {
    const w = await makeWorld(stack.ctx, { account: { participantQuota: 1, rateLimits: GENEROUS } });
    const email = uniqueEmail();
    expect((await PATHS['POST …/participant']!.create(w, w.campaign, email)).status).toBe(200);
    const replies = await Promise.all(
      Array.from({ length: PARALLEL }, (_, i) =>
        Object.values(PATHS)[i % 2]!.create(w, w.campaign, email.toUpperCase()),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(replies.map(() => 200));
    expect(await counts(w.account.id)).toMatchObject({ accountCount: 1, participantRows: 1, addedEvents: 1 });
  });
});
