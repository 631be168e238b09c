import { loyaltyActions } from '@stampcard/db';
import { eq, sql } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import { eventually } from './client';
import { startReceiver } from './receiver';
import { queueSizes } from './redis-keys';
import type { TestStack } from './stack';
import { goalWorldOverHttp } from './webhooks';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Why a run's actions are not all applied, for the failure's message: the campaign's actions by status, and what
 * the stack's queues hold, read on the workers' own connection, or that connection's state when it is not serving
 * (one that gave up is the finding).
 */
async function whereTheyStand(stack: TestStack, campaignId: string): Promise<string> {
  const statuses = await stack.ctx.db
    .select({ status: loyaltyActions.status, n: sql<number>`count(*)::int` })
    .from(loyaltyActions)
    .where(eq(loyaltyActions.campaignId, campaignId))
    .groupBy(loyaltyActions.status);
  const redis = stack.redis;
  const queues =
    redis.status !== 'ready'
      ? `the workers' Redis connection is ${redis.status}`
      : redis.isCluster
        ? 'on a Redis Cluster (not read)'
        : await queueSizes(redis as Redis, stack.prefix);
  return `actions by status ${JSON.stringify(statuses)}; queues: ${queues}`;
}

export type FailoverRun = {
  accepted: number;
  /** From the failure to the store serving again, in ms (what `fail` answers once it resolves). */
  failoverMs: number;
  /** From the failure to every action of the run applied, in ms. */
  allAppliedMs: number;
  /** Answers by status: how many, and the slowest, in ms. */
  answers: Record<string, { count: number; maxMs: number }>;
};

/**
 * Four callers send actions over HTTP (a new participant each, whose goal's webhook a receiver of the run's
 * own gets) while `fail` breaks a store and resolves once it serves again; the load goes on 1.5 s more. Then:
 * every action the ledger holds (each accepted one among them) is applied and its webhook received, once per
 * message. Answers what it measured.
 */
export async function failoverUnderLoad(stack: TestStack, fail: () => Promise<void>): Promise<FailoverRun> {
  const rx = await startReceiver();
  try {
    const { api, path, ...w } = await goalWorldOverHttp(stack, rx.url);
    const accepted: string[] = [];
    const answers: FailoverRun['answers'] = {};
    let stop = false;
    let n = 0;
    const load = async () => {
      while (!stop) {
        const i = n++;
        const started = performance.now();
        const r = await api.post(path, { participantEmail: `load${i}@example.com`, rewardId: w.reward.id });
        const seen = answers[r.status] ?? { count: 0, maxMs: 0 };
        answers[r.status] = seen;
        seen.count += 1;
        seen.maxMs = Math.max(seen.maxMs, Math.round(performance.now() - started));
        if (r.status === 200) accepted.push(r.body.action.id);
      }
    };
    const loaders = Array.from({ length: 4 }, load);
    await sleep(1000);
    const before = accepted.length;
    const failedAt = performance.now();
    await fail();
    const failoverMs = Math.round(performance.now() - failedAt);
    await sleep(1500);
    stop = true;
    await Promise.all(loaders);
    expect(accepted.length).toBeGreaterThan(before);

    const rows = await stack.ctx.db
      .select({ id: loyaltyActions.id })
      .from(loyaltyActions)
      .where(eq(loyaltyActions.campaignId, w.campaign.id));
    const held = new Set(rows.map((r) => r.id));
    expect(accepted.filter((id) => !held.has(id))).toEqual([]);
    await eventually(
      () =>
        stack.ctx.db
          .select({ n: sql<number>`count(*)::int` })
          .from(loyaltyActions)
          .where(
            sql`${loyaltyActions.campaignId} = ${w.campaign.id} and ${loyaltyActions.status} = 'APPLIED'`,
          ),
      (r) => r[0]!.n === rows.length,
      60_000,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}; ${await whereTheyStand(stack, w.campaign.id)}`);
    });
    const allAppliedMs = Math.round(performance.now() - failedAt);
    // Every action's webhook, each counted once: a delivery repeated across the failover (at least once) is not
    // another action's.
    const distinct = () => new Set(rx.received.map((r) => r.headers['webhook-id'])).size;
    await eventually(
      async () => distinct(),
      (n) => n >= rows.length,
      60_000,
    );
    expect(distinct()).toBe(rows.length);
    return { accepted: accepted.length, failoverMs, allAppliedMs, answers };
  } finally {
    await rx.close();
  }
}
