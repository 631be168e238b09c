import { anyOf, erasures, events, webhookAttempts, webhookEndpoints, webhookMessages } from '@stampcard/db';
import { and, eq, isNotNull, isNull, or, sql } from 'drizzle-orm';
import { type Ctx, unitOfWork } from '../../context';
import { newId } from '../../ids';
import {
  failedTooLong,
  judgeAttempt,
  nextRetryDelay,
  signingSecrets,
  type ThrottlePolicy,
  throttleStep,
} from '../../rules/delivery';
import { shownData } from '../../rules/erasure';
import { recordEvents } from '../events';
import { fulfilParticipantReward } from '../participant-rewards';
import { runningErasureOfEvent } from '../participants/erase';
import { insertAttempt, pruneBeforeAttempt } from './attempt-log';
import type { EndpointRow, MessageRow } from './views';

/** Everything one delivery needs, read in one statement. */
export type Delivery = {
  message: MessageRow;
  endpoint: EndpointRow;
  /** The exact bytes sent (and signed): `{ type, timestamp, data }`. */
  body: string;
  /** The secrets that sign it now (two while a rotation overlaps). */
  secrets: string[];
};

/** Why a delivery job has nothing to send. */
export type SkippedDelivery = { skip: 'GONE' | 'NOT_PENDING' | 'STALE' | 'HELD' };

/** A delivery job's message: its id and the generation the job was made for. */
export type DeliveryRequest = { messageId: string; generation: number };

/**
 * For each request, in order: the message, its endpoint and its event, or why there is nothing to send: the
 * message is gone (its endpoint was deleted), no longer PENDING, of another generation (replayed since its job
 * was made), or its endpoint is disabled (the message waits for it). One statement for the whole list, with
 * the same text whatever its length (the dispatcher gathers the jobs that start together into one call).
 */
export async function loadDeliveries(
  ctx: Ctx,
  requests: readonly DeliveryRequest[],
): Promise<(Delivery | SkippedDelivery)[]> {
  const rows = await ctx.db
    .select({
      message: webhookMessages,
      endpoint: webhookEndpoints,
      event: { type: events.type, createdAt: events.createdAt, data: events.data },
      erasing: erasures.participantId,
    })
    .from(webhookMessages)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookMessages.endpointId))
    .leftJoin(events, eq(events.id, webhookMessages.eventId))
    // A deleted participant's event not yet reached by its erasure is sent erased all the same.
    .leftJoin(erasures, runningErasureOfEvent)
    .where(anyOf(webhookMessages.id, [...new Set(requests.map((r) => r.messageId))]));
  const byId = new Map(rows.map((row) => [row.message.id, row]));
  const now = ctx.clock.now();
  return requests.map(({ messageId, generation }): Delivery | SkippedDelivery => {
    const row = byId.get(messageId);
    if (!row) return { skip: 'GONE' };
    const { message, endpoint, event, erasing } = row;
    if (message.generation !== generation) return { skip: 'STALE' };
    if (message.status !== 'PENDING') return { skip: 'NOT_PENDING' };
    if (!endpoint.enabled) return { skip: 'HELD' };
    const content =
      message.testBody ??
      (event && {
        type: event.type,
        timestamp: event.createdAt.getTime(),
        data: shownData(event.data, erasing),
      });
    if (!content) return { skip: 'GONE' };
    return { message, endpoint, body: JSON.stringify(content), secrets: signingSecrets(endpoint, now) };
  });
}

/** `loadDeliveries` for one message. */
export async function loadDelivery(
  ctx: Ctx,
  messageId: string,
  generation: number,
): Promise<Delivery | SkippedDelivery> {
  return (await loadDeliveries(ctx, [{ messageId, generation }]))[0]!;
}

/** What one attempt saw. `statusCode` is null when no answer came. */
export type AttemptResult = {
  attemptedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  /** At most the first 4 KiB of the answer, as text. */
  responseExcerpt: string | null;
  /** The class of failure when there was no answer (`TIMEOUT`, `CONNECTION`, `REFUSED_ADDRESS`…). */
  errorClass: string | null;
  retryAfter: string | null;
};

export type DeliveryPolicy = {
  /** Delays before each retry, in ms (`WEBHOOK_RETRY_SCHEDULE`). */
  schedule: readonly number[];
  /** An endpoint failing for this long is disabled (`WEBHOOK_DISABLE_AFTER_MS`). */
  disableAfterMs: number;
  /** How long throttled answers hold an endpoint, and when they start to count as failures. */
  throttle: ThrottlePolicy;
  /** In [0, 1): the jitter of the next retry. */
  random: number;
};

/** What the dispatcher does next with the message's job. */
export type AttemptOutcome = (
  | { next: 'DONE'; status: 'SUCCEEDED' | 'FAILED'; eventIds: string[] }
  /** Try again at `at` (a retry, or once the endpoint's pause is over). */
  | { next: 'RETRY'; at: Date; eventIds: string[] }
  /** The endpoint was disabled by this attempt; the message waits for it. */
  | { next: 'HELD'; eventIds: string[] }
) & {
  /** The endpoint throttled: every dispatcher leaves it alone this long, in ms. */
  pauseMs?: number;
};

const clipped = (s: string | null, max: number) => (s === null ? null : s.slice(0, max));

/**
 * Records an attempt and moves its message on, in one transaction: delivered (and, for a FULFILMENT
 * endpoint's goal, the reward marked FULFILLED once); retried on the schedule; throttled (held at least the
 * growing floor of `throttleStep`, and not counted until the endpoint's run of throttles passes its bound);
 * dead-lettered when the schedule is spent; or held because the endpoint was disabled (410, or failing for too
 * long), with an event saying why. The message's attempt log keeps its first and last `ATTEMPT_LOG_KEEP`
 * attempts (`insertAttempt`). Answers the ids of the events it wrote.
 */
export async function recordAttempt(
  ctx: Ctx,
  delivery: Pick<Delivery, 'message' | 'endpoint'>,
  result: AttemptResult,
  policy: DeliveryPolicy,
  /**
   * Records a plain success (the common case). The dispatcher passes one that gathers the successes of
   * deliveries finishing together into one `recordSuccesses` statement.
   * @defaultValue one `recordSuccesses` call for this success alone
   */
  writeSuccess: (success: Success) => Promise<void> = (one) => recordSuccesses(ctx, [one]),
): Promise<AttemptOutcome> {
  const { message, endpoint } = delivery;
  const now = result.attemptedAt;
  const verdict = judgeAttempt(result.statusCode, result.retryAfter, now);
  const attempt = {
    id: newId('delivery'),
    messageId: message.id,
    endpointId: endpoint.id,
    attemptedAt: now,
    statusCode: result.statusCode,
    latencyMs: Math.min(result.latencyMs, 2_147_483_647),
    responseExcerpt: clipped(result.responseExcerpt, 4096),
    errorClass: verdict.kind === 'SUCCEEDED' ? null : (result.errorClass ?? 'HTTP_STATUS'),
    succeeded: verdict.kind === 'SUCCEEDED',
    throttled: verdict.kind === 'THROTTLED',
  };
  const fulfils =
    endpoint.kind === 'FULFILMENT' && message.eventType === 'PARTICIPANT_REACHED_A_GOAL' && message.eventId;
  // A plain success is written apart, in one statement with the others finishing at once (its log kept
  // bounded there too). The rest is the transaction's: fulfilling, and ending the endpoint's run of failures
  // or throttles.
  const plain = !fulfils && !endpoint.failingSince && !endpoint.throttledSince;
  if (verdict.kind === 'SUCCEEDED' && plain) {
    await writeSuccess({
      id: attempt.id,
      messageId: message.id,
      generation: message.generation,
      endpointId: endpoint.id,
      attemptedAt: now,
      statusCode: result.statusCode!,
      latencyMs: attempt.latencyMs,
      responseExcerpt: attempt.responseExcerpt,
    });
    return { next: 'DONE', status: 'SUCCEEDED', eventIds: [] };
  }
  return unitOfWork(ctx, async (tx) => {
    const { db } = tx;
    await insertAttempt(tx, attempt);
    const thisGeneration = and(
      eq(webhookMessages.id, message.id),
      eq(webhookMessages.generation, message.generation),
      eq(webhookMessages.status, 'PENDING'),
    );
    const lastError =
      result.statusCode === null ? (result.errorClass ?? 'CONNECTION') : `HTTP ${result.statusCode}`;

    if (verdict.kind === 'SUCCEEDED') {
      await db
        .update(webhookMessages)
        .set({
          status: 'SUCCEEDED',
          attempts: sql`${webhookMessages.attempts} + 1`,
          lastStatusCode: result.statusCode,
          lastError: null,
          succeededAt: now,
          updatedAt: now,
        })
        .where(thisGeneration);
      if (endpoint.failingSince || endpoint.throttledSince) {
        await db
          .update(webhookEndpoints)
          .set({ failingSince: null, throttles: 0, throttledSince: null })
          .where(
            and(
              eq(webhookEndpoints.id, endpoint.id),
              or(isNotNull(webhookEndpoints.failingSince), isNotNull(webhookEndpoints.throttledSince)),
            ),
          );
      }
      const fulfilled =
        endpoint.kind === 'FULFILMENT' &&
        message.eventType === 'PARTICIPANT_REACHED_A_GOAL' &&
        message.eventId
          ? await fulfil(tx, message.eventId, now)
          : [];
      return { next: 'DONE', status: 'SUCCEEDED', eventIds: fulfilled };
    }

    let pauseMs: number | undefined;
    let failingSinceBefore = endpoint.failingSince;
    if (verdict.kind === 'THROTTLED') {
      // The endpoint's run of throttles, counted by every dispatcher in its row.
      const [run] = await db
        .update(webhookEndpoints)
        .set({
          throttles: sql`${webhookEndpoints.throttles} + 1`,
          throttledSince: sql`coalesce(${webhookEndpoints.throttledSince}, ${now.toISOString()}::timestamptz)`,
        })
        .where(eq(webhookEndpoints.id, endpoint.id))
        .returning({
          throttles: webhookEndpoints.throttles,
          throttledSince: webhookEndpoints.throttledSince,
          failingSince: webhookEndpoints.failingSince,
        });
      const step = throttleStep(
        verdict.retryAfterMs,
        {
          throttles: run?.throttles ?? 1,
          throttledForMs: run?.throttledSince ? Math.max(0, now.getTime() - run.throttledSince.getTime()) : 0,
        },
        policy.throttle,
        policy.schedule,
      );
      pauseMs = step.pauseMs;
      if (!step.counts) {
        const at = new Date(now.getTime() + step.pauseMs);
        await db
          .update(webhookMessages)
          .set({ nextAttemptAt: at, lastStatusCode: result.statusCode, lastError, updatedAt: now })
          .where(thisGeneration);
        return { next: 'RETRY', at, eventIds: [], pauseMs };
      }
      // Past its free throttles the endpoint is failing: the answer counts like any other failure.
      failingSinceBefore = run ? run.failingSince : endpoint.failingSince;
    }

    const attempts = message.attempts + 1;
    const failingSince = failingSinceBefore ?? now;
    if (!failingSinceBefore) {
      await db
        .update(webhookEndpoints)
        .set({ failingSince: now })
        .where(and(eq(webhookEndpoints.id, endpoint.id), isNull(webhookEndpoints.failingSince)));
    }
    const disable =
      verdict.kind === 'GONE'
        ? ('GONE' as const)
        : failedTooLong(failingSince, now, policy.disableAfterMs)
          ? ('FAILING' as const)
          : null;
    const delay = disable ? null : nextRetryDelay(policy.schedule, attempts, policy.random);
    // A counted throttle still waits out the endpoint's pause.
    const at = delay === null ? now : new Date(now.getTime() + Math.max(delay, pauseMs ?? 0));
    const dead = !disable && delay === null;
    await db
      .update(webhookMessages)
      .set({
        attempts,
        status: dead ? 'FAILED' : 'PENDING',
        nextAttemptAt: at,
        lastStatusCode: result.statusCode,
        lastError,
        updatedAt: now,
      })
      .where(thisGeneration);
    if (disable) {
      const eventIds = await disableEndpoint(
        tx,
        endpoint,
        disable,
        disable === 'FAILING' ? failingSince : null,
        now,
      );
      return { next: 'HELD', eventIds, pauseMs };
    }
    if (dead) return { next: 'DONE', status: 'FAILED', eventIds: [], pauseMs };
    return { next: 'RETRY', at, eventIds: [], pauseMs };
  });
}

/** A 2xx from an endpoint that was not failing, for a message that fulfils nothing. */
export type Success = {
  /** The attempt's id (`del_…`). */
  id: string;
  messageId: string;
  /** The message's generation when its job loaded it: a message replayed since is left alone. */
  generation: number;
  endpointId: string;
  attemptedAt: Date;
  statusCode: number;
  latencyMs: number;
  responseExcerpt: string | null;
};

/**
 * Plain successes, however many, in one statement: each attempt recorded, its message's log kept bounded
 * (`pruneBeforeAttempt`), and its message marked SUCCEEDED (if it is still that generation's PENDING message). Atomic without a transaction's extra round trips, with
 * one statement text whatever the number (each column is one array parameter).
 */
export async function recordSuccesses(ctx: Ctx, list: readonly Success[]): Promise<void> {
  if (list.length === 0) return;
  // Every column goes as text[] (the driver serializes text arrays only) and is cast by PostgreSQL.
  const col = (f: (x: Success) => string | null) => sql.param(list.map(f));
  await ctx.db.execute(sql`
    with input as (
      select * from unnest(${col((x) => x.id)}::text[], ${col((x) => x.messageId)}::text[],
        ${col((x) => String(x.generation))}::text[]::int[], ${col((x) => x.endpointId)}::text[],
        ${col((x) => x.attemptedAt.toISOString())}::text[]::timestamptz[],
        ${col((x) => String(x.statusCode))}::text[]::int[], ${col((x) => String(x.latencyMs))}::text[]::int[],
        ${col((x) => x.responseExcerpt)}::text[])
        as t(id, message_id, generation, endpoint_id, attempted_at, status_code, latency_ms, response_excerpt)
    ), pruned as (${pruneBeforeAttempt(sql`select message_id from input`)}),
    live as (
      select i.message_id from input i join ${webhookMessages} x
        on x.id = i.message_id and x.generation = i.generation and x.status = 'PENDING'
    ), counted as (
      -- A message that is no longer this PENDING one (replayed, discarded meanwhile) is not updated below:
      -- its pruned rows are counted here, so that no row of one statement is updated twice.
      update ${webhookMessages} x set attempts_pruned = x.attempts_pruned + p.n
      from (select message_id, count(*) as n from pruned group by message_id) p
      where x.id = p.message_id and p.message_id not in (select message_id from live)
    ), attempt as (
      insert into ${webhookAttempts}
        (id, message_id, endpoint_id, attempted_at, status_code, latency_ms, response_excerpt, error_class,
         succeeded, throttled)
      select id, message_id, endpoint_id, attempted_at, status_code, latency_ms, response_excerpt, null, true, false
      from input where exists (select 1 from ${webhookMessages} x where x.id = input.message_id)
    )
    update ${webhookMessages} m set status = 'SUCCEEDED', attempts = m.attempts + 1,
      attempts_pruned = m.attempts_pruned + (select count(*) from pruned p where p.message_id = m.id),
      last_status_code = i.status_code, last_error = null, succeeded_at = i.attempted_at, updated_at = i.attempted_at
    from input i
    where m.id = i.message_id and m.generation = i.generation and m.status = 'PENDING'`);
}

/** Disables an endpoint that the receiver or its failures turned off, and records why, once. */
async function disableEndpoint(
  ctx: Ctx,
  endpoint: EndpointRow,
  reason: 'GONE' | 'FAILING',
  failingSince: Date | null,
  now: Date,
): Promise<string[]> {
  const [changed] = await ctx.db
    .update(webhookEndpoints)
    .set({ enabled: false, disabledReason: reason, disabledAt: now, updatedAt: now })
    .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.enabled, true)))
    .returning({ id: webhookEndpoints.id });
  if (!changed) return [];
  return recordEvents(ctx, [
    {
      campaignId: endpoint.campaignId,
      type: 'WEBHOOK_ENDPOINT_DISABLED',
      data: {
        // Its host only: a URL's path, query and `user:pass@` often carry the receiver's credentials, and this
        // event goes to every other subscriber of the campaign.
        endpoint: { id: endpoint.id, host: new URL(endpoint.url).host },
        reason,
        failingSince: failingSince ? failingSince.getTime() : null,
        campaign: { id: endpoint.campaignId },
      },
    },
  ]);
}

/**
 * A FULFILMENT endpoint took the goal: its reward becomes FULFILLED and `PARTICIPANT_REWARD_FULFILLED` is
 * recorded, by `fulfilParticipantReward`, the function the API's fulfil uses too. It changes only a reward not
 * yet fulfilled, so a second 2xx (a replay, a second FULFILMENT endpoint) changes nothing and records nothing.
 */
async function fulfil(ctx: Ctx, eventId: string, now: Date): Promise<string[]> {
  const [goal] = await ctx.db.select({ data: events.data }).from(events).where(eq(events.id, eventId));
  const participantRewardId = (goal?.data as { reward?: { id?: unknown } } | undefined)?.reward?.id;
  if (typeof participantRewardId !== 'string') return [];
  return (await fulfilParticipantReward(ctx, participantRewardId, now))?.eventIds ?? [];
}
