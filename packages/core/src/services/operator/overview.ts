import { loyaltyActions, webhookAttempts, webhookEndpoints } from '@stampcard/db';
import { and, asc, count, gte, isNotNull, isNull, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';

/** The overview's window: the last hour, minute by minute. */
export const OVERVIEW_MINUTES = 60;

/**
 * Longest each of the overview's statements may run (`SET LOCAL statement_timeout`): a page polled every few
 * seconds must never hold a connection for long, whatever the tables hold.
 */
export const OVERVIEW_STATEMENT_TIMEOUT_MS = 1000;

/** Endpoints failing now, at most this many (the oldest failures first). */
export const OVERVIEW_FAILING_LIMIT = 20;

/** One minute of the window. Latencies are null in a minute without attempts. */
export type OverviewMinute = {
  /** The minute's start, ms since the epoch. */
  at: number;
  accepted: number;
  applied: number;
  delivered: number;
  failed: number;
  throttled: number;
  p50Ms: number | null;
  p99Ms: number | null;
};

export type FailingEndpoint = {
  id: string;
  campaignId: string;
  url: string;
  failingSince: Date;
  enabled: boolean;
};

export type OperationsOverview = {
  /** The window's first minute start, and the minutes in order (the last is the current, partial one). */
  since: Date;
  minutes: OverviewMinute[];
  totals: { accepted: number; applied: number; delivered: number; failed: number; throttled: number };
  /** Delivery attempts' latency over the whole window, ms (null without attempts). */
  latency: { p50Ms: number | null; p99Ms: number | null };
  failingEndpoints: FailingEndpoint[];
};

const minute = (column: unknown) => sql<Date>`date_trunc('minute', ${column})`;
const msOf = (d: Date | string) => new Date(d).getTime();
const num = (v: unknown): number | null => (v === null || v === undefined ? null : Math.round(Number(v)));

/**
 * What the service did in the last hour, for the operator console: loyalty actions accepted (`created_at`) and
 * applied (`applied_at`) per minute, webhook delivery attempts per minute by outcome with their p50/p99
 * latency, and the endpoints failing now. Each figure is one statement over an index on its time column,
 * bounded to the window and to `OVERVIEW_STATEMENT_TIMEOUT_MS`, in one read-only transaction.
 */
export async function operationsOverview(ctx: Ctx): Promise<OperationsOverview> {
  const now = ctx.clock.now();
  const current = Math.floor(now.getTime() / 60_000) * 60_000;
  const since = new Date(current - (OVERVIEW_MINUTES - 1) * 60_000);
  return ctx.db.transaction(
    async (tx) => {
      await tx.execute(sql.raw(`set local statement_timeout = ${OVERVIEW_STATEMENT_TIMEOUT_MS}`));
      const accepted = await tx
        .select({ at: minute(loyaltyActions.createdAt), n: count() })
        .from(loyaltyActions)
        .where(gte(loyaltyActions.createdAt, since))
        .groupBy(sql`1`);
      const applied = await tx
        .select({ at: minute(loyaltyActions.appliedAt), n: count() })
        .from(loyaltyActions)
        .where(gte(loyaltyActions.appliedAt, since))
        .groupBy(sql`1`);
      const a = webhookAttempts;
      const latency = (p: number) =>
        sql<number | null>`percentile_cont(${sql.raw(String(p))}) within group (order by ${a.latencyMs})`;
      const deliveries = await tx
        .select({
          at: minute(a.attemptedAt),
          delivered: sql<number>`count(*) filter (where ${a.succeeded})`.mapWith(Number),
          throttled: sql<number>`count(*) filter (where not ${a.succeeded} and ${a.throttled})`.mapWith(
            Number,
          ),
          failed: sql<number>`count(*) filter (where not ${a.succeeded} and not ${a.throttled})`.mapWith(
            Number,
          ),
          p50: latency(0.5),
          p99: latency(0.99),
        })
        .from(a)
        .where(gte(a.attemptedAt, since))
        .groupBy(sql`1`);
      const [overall] = await tx
        .select({ p50: latency(0.5), p99: latency(0.99) })
        .from(a)
        .where(gte(a.attemptedAt, since));
      const e = webhookEndpoints;
      const failing = await tx
        .select({
          id: e.id,
          campaignId: e.campaignId,
          url: e.url,
          failingSince: e.failingSince,
          enabled: e.enabled,
        })
        .from(e)
        .where(and(isNotNull(e.failingSince), isNull(e.deletedAt)))
        .orderBy(asc(e.failingSince))
        .limit(OVERVIEW_FAILING_LIMIT);

      const minutes: OverviewMinute[] = Array.from({ length: OVERVIEW_MINUTES }, (_, i) => ({
        at: since.getTime() + i * 60_000,
        accepted: 0,
        applied: 0,
        delivered: 0,
        failed: 0,
        throttled: 0,
        p50Ms: null,
        p99Ms: null,
      }));
      const slot = (at: Date | string) => minutes[(msOf(at) - since.getTime()) / 60_000];
      for (const r of accepted) {
        const m = slot(r.at);
        if (m) m.accepted = r.n;
      }
      for (const r of applied) {
        const m = slot(r.at);
        if (m) m.applied = r.n;
      }
      for (const r of deliveries) {
        const m = slot(r.at);
        if (!m) continue;
        Object.assign(m, {
          delivered: r.delivered,
          failed: r.failed,
          throttled: r.throttled,
          p50Ms: num(r.p50),
          p99Ms: num(r.p99),
        });
      }
      const sum = (k: 'accepted' | 'applied' | 'delivered' | 'failed' | 'throttled') =>
        minutes.reduce((s, m) => s + m[k], 0);
      return {
        since,
        minutes,
        totals: {
          accepted: sum('accepted'),
          applied: sum('applied'),
          delivered: sum('delivered'),
          failed: sum('failed'),
          throttled: sum('throttled'),
        },
        latency: { p50Ms: num(overall?.p50), p99Ms: num(overall?.p99) },
        failingEndpoints: failing.map((f) => ({ ...f, failingSince: f.failingSince! })),
      };
    },
    { accessMode: 'read only' },
  );
}
