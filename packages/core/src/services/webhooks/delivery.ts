import {
  anyOf,
  anyTime,
  builtOnce,
  decoded,
  erasures,
  events,
  statusByKey,
  webhookAttempts,
  webhookEndpoints,
  webhookMessages,
} from '@stampcard/db';
import { and, eq, isNotNull, isNull, or, type SQL, sql } from 'drizzle-orm';
import { QueryBuilder } from 'drizzle-orm/pg-core';
import { type Ctx, unitOfWork } from '../../context';
import { newId, timesOf } from '../../ids';
import {
  failedTooLong,
  judgeAttempt,
  nextRetryDelay,
  signingSecrets,
  type ThrottlePolicy,
  throttleStep,
} from '../../rules/delivery';
import { shownData } from '../../rules/erasure';
import { sentEventData } from '../../rules/event-data';
import { recordEvents } from '../events';
import { fulfilParticipantReward } from '../participant-rewards';
import { runningErasureOf, runningErasureOfEvent } from '../participants/erase';
import { missing } from '../retention/past';
import {
  eventAtBetween,
  eventAtRange,
  eventAtWithin,
  insertAttempt,
  pruneBeforeAttempt,
} from './attempt-log';
import type { Scheduled } from './messages';
import { orderedKeys, type Released, releaseNextOrdered, waits } from './ordering';
import { inScope, type WebhookScope } from './scope';
import type { EndpointRow, MessageRow } from './views';

/**
 * The columns of a message that a delivery reads, to send it, sign it, and judge and record its attempt: the load
 * maps these and no other (a row of every column of message and endpoint was a third of the load's cost).
 */
const MESSAGE_FIELDS = [
  'id',
  'endpointId',
  'campaignId',
  'eventId',
  'eventAt',
  'participantId',
  'sequence',
  'ordered',
  'previousId',
  'eventType',
  'testBody',
  'status',
  'attempts',
  'generation',
  'nextAttemptAt',
] as const satisfies readonly (keyof MessageRow)[];

/** The columns of an endpoint that a delivery reads (see `MESSAGE_FIELDS`). */
const ENDPOINT_FIELDS = [
  'id',
  'campaignId',
  'url',
  'kind',
  'enabled',
  'rateLimit',
  'traceContext',
  'secret',
  'previousSecret',
  'previousSecretExpiresAt',
  'failingSince',
  'throttledSince',
] as const satisfies readonly (keyof EndpointRow)[];

export type DeliveryMessage = Pick<MessageRow, (typeof MESSAGE_FIELDS)[number]>;
export type DeliveryEndpoint = Pick<EndpointRow, (typeof ENDPOINT_FIELDS)[number]>;

/** The named columns of a table, for a select. */
const columns = <T, K extends keyof T>(table: T, fields: readonly K[]) =>
  Object.fromEntries(fields.map((f) => [f, table[f]])) as Pick<T, K>;

/** Everything one delivery needs, read in one statement. */
export type Delivery = {
  message: DeliveryMessage;
  endpoint: DeliveryEndpoint;
  /** The exact bytes sent (and signed): `{ type, timestamp, data }`. */
  body: string;
  /** The secrets that sign it now (two while a rotation overlaps). */
  secrets: string[];
  /** When its event was recorded (the action applied); null for a test message. */
  recordedAt: Date | null;
};

/** Why a delivery job has nothing to send. */
export type SkippedDelivery = { skip: 'GONE' | 'NOT_PENDING' | 'STALE' | 'HELD' | 'WAITING' };

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
  const rows = await deliveryRows(ctx, [...new Set(requests.map((r) => r.messageId))]);
  return deliveriesOf(ctx, requests, rows);
}

/**
 * `loadDeliveries` that also claims (`claimDeliveries`), in the same statement, each message it loads that can
 * be sent at once: this generation's PENDING message, due (within 20 ms, by PostgreSQL's clock), claimed by no
 * one, its endpoint enabled and without a rate limit (whose turn may be far off). One round trip where the
 * load and then the claim took two, one after the other. Answers the deliveries and, per request in order,
 * whether its message was claimed for it (`true`), or left for its attempt to claim (`undefined`: not sendable
 * now, held by another claim, or asked twice in the list, whose first only is granted). A message claimed
 * that the load then finds it has nothing to send (its event gone) is released at once.
 */
export async function loadAndClaimDeliveries(
  ctx: Ctx,
  requests: readonly DeliveryRequest[],
  leaseMs: number,
): Promise<{ deliveries: (Delivery | SkippedDelivery)[]; claimed: (true | undefined)[] }> {
  const { statement, values } = loadAndClaimStatement(requests, leaseMs);
  const raw = await statement.rows(ctx.db, values);
  const rows = raw.map(deliveryRow);
  const deliveries = deliveriesOf(ctx, requests, rows);
  // The claim's column is the last of the select list.
  const granted = rows.flatMap((row, i) =>
    raw[i]![raw[i]!.length - 1] === true ? [[row.message.id, row.message.generation] as const] : [],
  );
  const claimed = grantedInOrder(granted, requests).map((mine) => (mine ? true : undefined));
  const unsent = deliveries.flatMap((d, i) =>
    claimed[i] && 'skip' in d
      ? [{ messageId: requests[i]!.messageId, generation: requests[i]!.generation }]
      : [],
  );
  if (unsent.length > 0) {
    const byId = new Map(rows.map((row) => [row.message.id, row.message.eventAt]));
    await releaseClaims(
      ctx,
      unsent.map((c) => ({ ...c, eventAt: byId.get(c.messageId)! })),
    ).catch(() => undefined);
    for (const [i, d] of deliveries.entries()) if ('skip' in d) claimed[i] = undefined;
  }
  return { deliveries, claimed };
}

/** The load's rows, as each request's delivery or why it has none (see `loadDeliveries`). */
function deliveriesOf(
  ctx: Ctx,
  requests: readonly DeliveryRequest[],
  rows: DeliveryRow[],
): (Delivery | SkippedDelivery)[] {
  const byId = new Map(rows.map((row) => [row.message.id, row]));
  const now = ctx.clock.now();
  return requests.map(({ messageId, generation }): Delivery | SkippedDelivery => {
    const row = byId.get(messageId);
    if (!row) return { skip: 'GONE' };
    const { message, endpoint } = row;
    if (message.generation !== generation) return { skip: 'STALE' };
    if (message.status !== 'PENDING') return { skip: 'NOT_PENDING' };
    // An ordered message behind an earlier one of its participant: that one's end makes it due, with a job.
    if (waits(message)) return { skip: 'WAITING' };
    if (!endpoint.enabled) return { skip: 'HELD' };
    const content = contentOf(row);
    if (!content) return { skip: 'GONE' };
    return {
      message,
      endpoint,
      body: JSON.stringify(content),
      secrets: signingSecrets(endpoint, now),
      recordedAt: row.event?.createdAt ?? null,
    };
  });
}

/**
 * A condition true for every row, whose first evaluation tells PostgreSQL not to wait for the disk when the
 * statement's own transaction commits (`synchronous_commit` off until its end): for the claims, which are leases.
 */
const COMMIT_WITHOUT_FLUSH = sql.raw(`(select set_config('synchronous_commit', 'off', true)) = 'off'`);

/**
 * `loadDeliveries`'s one statement, built once by drizzle (`builtOnce`): with the messages' times, which name
 * the partitions to read (ids made since partitioning carry them), and without, for a list with an id that does
 * not. Placeholders: `ids`, and `times` (ISO strings).
 */
function buildLoad(withTimes: boolean, claiming: boolean) {
  const qb = new QueryBuilder();
  const times = sql.placeholder('times');
  // Each message's event, looked up by its primary key. A lateral subquery with a limit is not merged into the
  // join: a plain join let the planner, with statistics older than a burst of events, hash the whole partition
  // of events for each load (110 ms a load of 64 where the look-ups take a few).
  const event = qb
    .select({ type: events.type, createdAt: events.createdAt, data: events.data })
    .from(events)
    .where(
      and(eq(events.id, webhookMessages.eventId), withTimes ? anyTime(events.createdAt, times) : undefined),
    )
    .limit(1)
    .as('event');
  const query = qb
    .select({
      message: columns(webhookMessages, MESSAGE_FIELDS),
      endpoint: columns(webhookEndpoints, ENDPOINT_FIELDS),
      event: { type: event.type, createdAt: event.createdAt, data: event.data },
      erasing: erasures.participantId,
      // Last: whether the statement's claim (below) took the message.
      ...(claiming
        ? { claimed: sql<boolean>`exists (select 1 from claimed c where c.id = ${webhookMessages.id})` }
        : {}),
    })
    .from(webhookMessages)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookMessages.endpointId))
    .leftJoinLateral(event, sql`true`)
    // A deleted participant's event not yet reached by its erasure is sent erased all the same.
    .leftJoin(erasures, runningErasureOf(event.data))
    .where(
      and(
        anyOf(webhookMessages.id, sql.placeholder('ids')),
        withTimes ? anyTime(webhookMessages.eventAt, times) : undefined,
      ),
    );
  if (!claiming) return builtOnce(query);
  // The claim of `loadAndClaimDeliveries`, of the messages it can send at once: the select beside it reads the
  // rows as they were before it.
  const sendableNow = sql`and m.next_attempt_at <= now() + interval '20 milliseconds'
        -- Its endpoint's, per message: a join let the planner read every message of the endpoint.
        and exists (select 1 from ${webhookEndpoints} e where e.id = m.endpoint_id and e.enabled and e.rate_limit is null)`;
  return builtOnce(sql`with claimed as (${claimUpdate(withTimes, sendableNow)}) ${query}`);
}

const DELIVERY_STATEMENTS = {
  withTimes: { plain: buildLoad(true, false), claiming: buildLoad(true, true) },
  without: { plain: buildLoad(false, false), claiming: buildLoad(false, true) },
};

/** The load's statements for `ids` (with their times, or without), and the values they share. */
function loadStatements(ids: string[]) {
  const times = timesOf(ids);
  return {
    times,
    statements: times ? DELIVERY_STATEMENTS.withTimes : DELIVERY_STATEMENTS.without,
    values: { ids, times: times?.map((t) => t.toISOString()) ?? [] },
  };
}

/** The load's statement for `ids` (distinct) and its values. */
export function deliveryStatement(ids: string[]) {
  const { statements, values } = loadStatements(ids);
  return { statement: statements.plain, values };
}

/**
 * `loadAndClaimDeliveries`'s statement for `requests` and its values: every request's id in order beside its
 * generation, which the claim joins pairwise (the load reads each once), and the range of their times, which
 * names the partitions the claim reads (as `claimDeliveries`'s does).
 */
export function loadAndClaimStatement(requests: readonly DeliveryRequest[], leaseMs: number) {
  const { times, statements, values } = loadStatements(requests.map((r) => r.messageId));
  const range = times ? eventAtRange(times) : undefined;
  return {
    statement: statements.claiming,
    values: {
      ...values,
      generations: requests.map((r) => String(r.generation)),
      from: range?.from,
      to: range?.to,
      leaseMs: String(leaseMs),
    },
  };
}

type DeliveryRow = ContentSource & { message: DeliveryMessage; endpoint: DeliveryEndpoint };

/** `loadDeliveries`'s one statement: the rows of the messages `ids` (distinct), with their endpoints and events. */
export async function deliveryRows(ctx: Ctx, ids: string[]): Promise<DeliveryRow[]> {
  const { statement, values } = deliveryStatement(ids);
  return (await statement.rows(ctx.db, values)).map(deliveryRow);
}

/** One row of the load, its columns in the order of its select list, as drizzle would have mapped it. */
function deliveryRow(row: unknown[]): DeliveryRow {
  let i = 0;
  const message: Record<string, unknown> = {};
  for (const f of MESSAGE_FIELDS) message[f] = decoded(webhookMessages[f], row[i++]);
  const endpoint: Record<string, unknown> = {};
  for (const f of ENDPOINT_FIELDS) endpoint[f] = decoded(webhookEndpoints[f], row[i++]);
  // The event's columns, all null when the message has none (a test message) or it is gone.
  const type = row[i++] as string | null;
  const createdAt = decoded(events.createdAt, row[i++]) as Date | null;
  const data = decoded(events.data, row[i++]) as Record<string, unknown> | null;
  return {
    message: message as DeliveryMessage,
    endpoint: endpoint as DeliveryEndpoint,
    event: type === null || createdAt === null || data === null ? null : { type, createdAt, data },
    erasing: row[i] as string | null,
  };
}

type ContentSource = {
  message: Pick<MessageRow, 'testBody'>;
  event: { type: string; createdAt: Date; data: Record<string, unknown> } | null;
  erasing: string | null;
};

/** What a message sends, `{ type, timestamp, data }` (erased when its participant is); null when it is gone. */
const contentOf = ({ message, event, erasing }: ContentSource) =>
  message.testBody ??
  (event && {
    type: event.type,
    timestamp: event.createdAt.getTime(),
    data: sentEventData(shownData(event.data, erasing)),
  });

/**
 * The body a message sends (and sent), as a receiver gets it, for the console and the portal: the same
 * statement's joins as a delivery, for one message in the caller's scope; 404 when it is not there.
 */
export async function messageBody(ctx: Ctx, messageId: string, scope: WebhookScope = {}) {
  const [row] = await ctx.db
    .select({
      message: webhookMessages,
      event: { type: events.type, createdAt: events.createdAt, data: events.data },
      erasing: erasures.participantId,
    })
    .from(webhookMessages)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookMessages.endpointId))
    .leftJoin(events, eq(events.id, webhookMessages.eventId))
    .leftJoin(erasures, runningErasureOfEvent)
    .where(
      and(
        eq(webhookMessages.id, messageId),
        isNull(webhookEndpoints.deletedAt),
        inScope(webhookMessages.campaignId, scope),
      ),
    );
  if (!row) throw await missing(ctx, 'webhook_messages', `Webhook message ${messageId}`, messageId);
  return contentOf(row);
}

/** `loadDeliveries` for one message. */
export async function loadDelivery(
  ctx: Ctx,
  messageId: string,
  generation: number,
): Promise<Delivery | SkippedDelivery> {
  return (await loadDeliveries(ctx, [{ messageId, generation }]))[0]!;
}

/** A delivery about to be sent: its message, the generation its job loaded, and its partition key. */
export type Claim = { messageId: string; generation: number; eventAt: Date };

/**
 * Claims messages for the attempts about to be sent, so that no two dispatchers, nor a job run twice (its lock
 * lost to a stalled event loop), send one message at once, and none sends it after its success is recorded:
 * a claim is taken when the message is still that generation's PENDING message and no claim in force holds it,
 * and lasts `leaseMs` (longer than an attempt can take, by PostgreSQL's clock). The attempt's record ends it,
 * whatever its outcome, so that a replay is sent at once. Answers, per claim in order, whether it is the caller's. One
 * statement for the whole list, with the same text whatever its length.
 *
 * The claim's commit does not wait for its WAL to reach the disk (`synchronous_commit` off for its own
 * transaction only): a claim is a lease, seen by every other transaction as soon as it commits, and the
 * attempt's record, whose commit does wait, carries it to the disk before it. What a crash of PostgreSQL can lose
 * is a claim of its last few hundred ms, whose message may then go out twice (at least once, as a dispatcher's
 * death does), never a record. The claim is on the path of every delivery, inside its endpoint's window: waiting
 * for the disk there, behind the other writes' flushes, held each slot of the window longer than its request.
 */
export async function claimDeliveries(
  ctx: Ctx,
  claims: readonly Claim[],
  leaseMs: number,
): Promise<boolean[]> {
  if (claims.length === 0) return [];
  const { statement, values } = claimStatement(claims, leaseMs);
  const rows = await statement.rows(ctx.db, values);
  return grantedInOrder(rows as [string, number][], claims);
}

/**
 * Per claim in order, whether `granted` (the `[id, generation]` a claim's statement returned) holds it. A message
 * claimed twice in one list (a job run twice) is updated once: its first claim only is granted.
 */
function grantedInOrder(
  granted: readonly (readonly [unknown, unknown])[],
  claims: readonly { messageId: string; generation: number }[],
): boolean[] {
  const mine = new Set(granted.map(([id, generation]) => `${id}\n${generation}`));
  return claims.map((c) => mine.delete(`${c.messageId}\n${c.generation}`));
}

/**
 * The claim's `update`, of the messages named (`claimedMessages`, `ranged` or not) that are that generation's
 * PENDING message with no claim in force, `also` true: its rows are the claims granted, `[id, generation]`.
 */
function claimUpdate(ranged: boolean, also: SQL = sql``): SQL {
  return sql`
      update ${webhookMessages} m
      set claimed_until = now() + ${sql.placeholder('leaseMs')}::int * interval '1 millisecond'
      ${claimedMessages(ranged)} and ${statusByKey(sql.raw('m.status'), 'PENDING')} and ${COMMIT_WITHOUT_FLUSH}
        and (m.claimed_until is null or m.claimed_until <= now()) ${also}
      returning m.id, m.generation`;
}

/**
 * `from … where …` joining the claims' messages, `m`, by id and generation (placeholders `ids`, `generations`),
 * and, `ranged`, their partitions' range (`from`, `to`).
 */
function claimedMessages(ranged: boolean): SQL {
  const p = (name: string) => sql.placeholder(name);
  return sql`from unnest(${p('ids')}::text[], ${p('generations')}::text[]::int[]) as i(id, generation)
    where m.id = i.id and m.generation = i.generation
      ${ranged ? sql`and ${eventAtBetween(sql.raw('m.event_at'), p('from'), p('to'))}` : sql``}`;
}

/**
 * The claim and its release, built once (`builtOnce`) as the load and the successes are: with the range of the
 * claims' partitions, and without (a message from before partitioning).
 */
function buildClaims(ranged: boolean) {
  return {
    claim: builtOnce(claimUpdate(ranged)),
    release: builtOnce(sql`
      update ${webhookMessages} m set claimed_until = null
      ${claimedMessages(ranged)} and m.claimed_until > now() and ${COMMIT_WITHOUT_FLUSH}`),
  };
}

const CLAIM_STATEMENTS = { ranged: buildClaims(true), unranged: buildClaims(false) };

/** The values naming `claims` in the claim's and the release's statements, and which of the two to run. */
function claimValues(claims: readonly Claim[]) {
  const range = eventAtRange(claims.map((c) => c.eventAt));
  return {
    statements: range ? CLAIM_STATEMENTS.ranged : CLAIM_STATEMENTS.unranged,
    values: {
      ids: claims.map((c) => c.messageId),
      generations: claims.map((c) => String(c.generation)),
      from: range?.from,
      to: range?.to,
    },
  };
}

/**
 * `claimDeliveries`'s one statement for a list that is not empty, and its values: its rows are the claims
 * granted, `[id, generation]`.
 */
export function claimStatement(claims: readonly Claim[], leaseMs: number) {
  const { statements, values } = claimValues(claims);
  return { statement: statements.claim, values: { ...values, leaseMs: String(leaseMs) } };
}

/**
 * Ends claims of the caller's that it took ahead of attempts which then stepped aside before their request went
 * (`claimDeliveries`), so that the messages' next jobs claim them at once instead of after the lease. Only for
 * claims taken moments ago, well within their lease (no other could hold them yet). One statement; its commit,
 * like the claim's, does not wait for the disk.
 */
export async function releaseClaims(ctx: Ctx, claims: readonly Claim[]): Promise<void> {
  if (claims.length === 0) return;
  const { statements, values } = claimValues(claims);
  await statements.release.rows(ctx.db, values);
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
  | { next: 'DONE'; status: 'SUCCEEDED' | 'FAILED' }
  /** Try again at `at` (a retry, or once the endpoint's pause is over). */
  | { next: 'RETRY'; at: Date }
  /** The endpoint was disabled by this attempt; the message waits for it. */
  | { next: 'HELD' }
) & {
  /** The endpoint throttled: every dispatcher leaves it alone this long, in ms. */
  pauseMs?: number;
  /** The next ordered message of the participant, made due by this one's end: to schedule once committed. */
  released?: Scheduled[];
};

const clipped = (s: string | null, max: number) => (s === null ? null : s.slice(0, max));

/**
 * Records an attempt and moves its message on. A plain success (the common case) is written apart, with the
 * others finishing at once (`writeSuccess`); any other outcome in one transaction, by the handler of its
 * verdict: `succeeded` (ends the endpoint's run of failures or throttles, and fulfils a FULFILMENT endpoint's
 * goal once), `throttled` (held at least the growing floor of `throttleStep`, and not counted until the
 * endpoint's run of throttles passes its bound), `gone` (410: the endpoint is disabled, its messages kept),
 * `failed` (retried on the schedule, dead-lettered once it is spent, or held when the endpoint has failed too
 * long and is disabled). A disabled endpoint gets an event saying why. The message's attempt log keeps its
 * first and last `ATTEMPT_LOG_KEEP` attempts (`insertAttempt`). Answers the ids of the events it wrote.
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
  writeSuccess: (success: Success) => Promise<Scheduled[]> = (one) => recordSuccesses(ctx, [one]),
): Promise<AttemptOutcome> {
  const { message, endpoint } = delivery;
  const now = result.attemptedAt;
  const verdict = judgeAttempt(result.statusCode, result.retryAfter, now);
  const attempt = {
    id: newId('delivery'),
    messageId: message.id,
    since: message.eventAt,
    endpointId: endpoint.id,
    attemptedAt: now,
    statusCode: result.statusCode,
    latencyMs: Math.min(result.latencyMs, 2_147_483_647),
    responseExcerpt: clipped(result.responseExcerpt, 4096),
    errorClass: verdict.kind === 'SUCCEEDED' ? null : (result.errorClass ?? 'HTTP_STATUS'),
    succeeded: verdict.kind === 'SUCCEEDED',
    throttled: verdict.kind === 'THROTTLED',
  };
  if (
    verdict.kind === 'SUCCEEDED' &&
    !fulfils(message, endpoint) &&
    !endpoint.failingSince &&
    !endpoint.throttledSince
  ) {
    const released = await writeSuccess({
      id: attempt.id,
      messageId: message.id,
      generation: message.generation,
      eventAt: message.eventAt,
      endpointId: endpoint.id,
      attemptedAt: now,
      statusCode: result.statusCode!,
      latencyMs: attempt.latencyMs,
      responseExcerpt: attempt.responseExcerpt,
      orderedParticipantId: message.ordered ? message.participantId : null,
    });
    return { next: 'DONE', status: 'SUCCEEDED', released };
  }
  return unitOfWork(ctx, async (tx) => {
    await insertAttempt(tx, attempt);
    const a: Attempt = {
      tx,
      message,
      endpoint,
      result,
      policy,
      now,
      lastError:
        result.statusCode === null ? (result.errorClass ?? 'CONNECTION') : `HTTP ${result.statusCode}`,
    };
    switch (verdict.kind) {
      case 'SUCCEEDED':
        return succeeded(a);
      case 'THROTTLED':
        return throttled(a, verdict.retryAfterMs);
      case 'GONE':
        return gone(a);
      case 'FAILED':
        return failed(a, { failingSince: endpoint.failingSince });
    }
  });
}

/** What each outcome's handler works with, inside the attempt's transaction (its row already inserted). */
type Attempt = {
  tx: Ctx;
  message: DeliveryMessage;
  endpoint: DeliveryEndpoint;
  result: AttemptResult;
  policy: DeliveryPolicy;
  now: Date;
  /** The message's `lastError` for an attempt that did not succeed. */
  lastError: string;
};

/** Whether a 2xx to this message fulfils a reward: a FULFILMENT endpoint's goal. */
const fulfils = (message: DeliveryMessage, endpoint: DeliveryEndpoint) =>
  endpoint.kind === 'FULFILMENT' &&
  message.eventType === 'PARTICIPANT_REACHED_A_GOAL' &&
  Boolean(message.eventId);

/** The message, if it is still the PENDING one of the generation the attempt was made for. */
const thisGeneration = (message: DeliveryMessage) =>
  and(
    eq(webhookMessages.id, message.id),
    eventAtWithin(webhookMessages.eventAt, [message.eventAt]),
    eq(webhookMessages.generation, message.generation),
    statusByKey(webhookMessages.status, 'PENDING'),
  );

/** A 2xx that is not a plain success: ends the endpoint's run of failures or throttles, fulfils a goal. */
async function succeeded({ tx, message, endpoint, result, now }: Attempt): Promise<AttemptOutcome> {
  await tx.db
    .update(webhookMessages)
    .set({
      status: 'SUCCEEDED',
      attempts: sql`${webhookMessages.attempts} + 1`,
      lastStatusCode: result.statusCode,
      lastError: null,
      succeededAt: now,
      claimedUntil: null,
      updatedAt: now,
    })
    .where(thisGeneration(message));
  if (endpoint.failingSince || endpoint.throttledSince) {
    await tx.db
      .update(webhookEndpoints)
      .set({ failingSince: null, throttles: 0, throttledSince: null })
      .where(
        and(
          eq(webhookEndpoints.id, endpoint.id),
          or(isNotNull(webhookEndpoints.failingSince), isNotNull(webhookEndpoints.throttledSince)),
        ),
      );
  }
  if (fulfils(message, endpoint)) await fulfil(tx, message.eventId!, now);
  return {
    next: 'DONE',
    status: 'SUCCEEDED',
    released: await releaseNextOrdered(tx, orderedKeys([message]), null, now),
  };
}

/**
 * A 429/503 with a usable Retry-After: the endpoint's run of throttles grows (counted by every dispatcher in
 * its row) and it is left alone for `throttleStep`'s pause. Within its free throttles the message only waits
 * that pause; past them the answer counts as a failure, which still waits out the pause.
 */
async function throttled(a: Attempt, retryAfterMs: number): Promise<AttemptOutcome> {
  const { tx, message, endpoint, result, policy, now } = a;
  const [run] = await tx.db
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
    retryAfterMs,
    {
      throttles: run?.throttles ?? 1,
      throttledForMs: run?.throttledSince ? Math.max(0, now.getTime() - run.throttledSince.getTime()) : 0,
    },
    policy.throttle,
    policy.schedule,
  );
  if (step.counts) {
    return failed(a, { failingSince: run ? run.failingSince : endpoint.failingSince, pauseMs: step.pauseMs });
  }
  const at = new Date(now.getTime() + step.pauseMs);
  await tx.db
    .update(webhookMessages)
    .set({
      nextAttemptAt: at,
      lastStatusCode: result.statusCode,
      lastError: a.lastError,
      claimedUntil: null,
      updatedAt: now,
    })
    .where(thisGeneration(message));
  return { next: 'RETRY', at, pauseMs: step.pauseMs };
}

/** 410 Gone: the attempt counts, and the endpoint is disabled (`GONE`); the message waits for it. */
async function gone(a: Attempt): Promise<AttemptOutcome> {
  await countFailure(a, a.endpoint.failingSince, { status: 'PENDING', at: a.now });
  await disableEndpoint(a.tx, a.endpoint, 'GONE', null, a.now);
  return { next: 'HELD' };
}

/**
 * A failed attempt (or a throttle past its free ones, `pauseMs` its pause): retried on the schedule, no sooner
 * than the pause; dead-lettered when the schedule is spent; or held, once the endpoint has failed for
 * `disableAfterMs` and is disabled (`FAILING`).
 * @param failingSince - the endpoint's, as it was before this attempt
 */
async function failed(
  a: Attempt,
  opts: { failingSince: Date | null; pauseMs?: number },
): Promise<AttemptOutcome> {
  const { message, policy, now } = a;
  const { pauseMs } = opts;
  const failingSince = opts.failingSince ?? now;
  if (failedTooLong(failingSince, now, policy.disableAfterMs)) {
    await countFailure(a, opts.failingSince, { status: 'PENDING', at: now });
    await disableEndpoint(a.tx, a.endpoint, 'FAILING', failingSince, now);
    return { next: 'HELD', pauseMs };
  }
  const delay = nextRetryDelay(policy.schedule, message.attempts + 1, policy.random);
  if (delay === null) {
    await countFailure(a, opts.failingSince, { status: 'FAILED', at: now });
    // Parked: the next message of its participant goes on, naming it.
    const released = await releaseNextOrdered(a.tx, orderedKeys([message]), message.id, now);
    return { next: 'DONE', status: 'FAILED', pauseMs, released };
  }
  const at = new Date(now.getTime() + Math.max(delay, pauseMs ?? 0));
  await countFailure(a, opts.failingSince, { status: 'PENDING', at });
  return { next: 'RETRY', at, pauseMs };
}

/**
 * A counted failure: the endpoint is failing from now if it was not (`failingSince` as it was before this
 * attempt), and the message's attempt is counted, with its next state.
 */
async function countFailure(
  { tx, message, endpoint, result, now, lastError }: Attempt,
  failingSince: Date | null,
  next: { status: 'PENDING' | 'FAILED'; at: Date },
): Promise<void> {
  if (!failingSince) {
    await tx.db
      .update(webhookEndpoints)
      .set({ failingSince: now })
      .where(and(eq(webhookEndpoints.id, endpoint.id), isNull(webhookEndpoints.failingSince)));
  }
  await tx.db
    .update(webhookMessages)
    .set({
      attempts: message.attempts + 1,
      status: next.status,
      nextAttemptAt: next.at,
      lastStatusCode: result.statusCode,
      lastError,
      claimedUntil: null,
      updatedAt: now,
    })
    .where(thisGeneration(message));
}

/** A 2xx from an endpoint that was not failing, for a message that fulfils nothing. */
export type Success = {
  /** The attempt's id (`del_…`). */
  id: string;
  messageId: string;
  /** The message's generation when its job loaded it: a message replayed since is left alone. */
  generation: number;
  /** The message's partition key: the statement reads only the partitions of its successes. */
  eventAt: Date;
  endpointId: string;
  attemptedAt: Date;
  statusCode: number;
  latencyMs: number;
  responseExcerpt: string | null;
  /** For an ordered message: its participant, whose next ordered message its success makes due. */
  orderedParticipantId?: string | null;
};

/**
 * Plain successes, however many, in one statement: each attempt recorded, its message's log kept bounded
 * (`pruneBeforeAttempt`), and its message marked SUCCEEDED (if it is still that generation's PENDING message).
 * Atomic without a transaction's extra round trips, with one statement text whatever the number (each column is
 * one array parameter).
 */
export async function recordSuccesses(ctx: Ctx, list: readonly Success[]): Promise<Released[]> {
  if (list.length === 0) return [];
  const { statement, values } = successesStatement(list);
  const ordered = list.filter((x) => x.orderedParticipantId);
  if (ordered.length === 0) {
    await statement.rows(ctx.db, values);
    return [];
  }
  // With ordered messages: the successes, then (a statement of its own, so that it sees a message a fan-out
  // committed while it waited for one of these rows) the next message of each of their participants.
  return unitOfWork(ctx, async (tx) => {
    await statement.rows(tx.db, values);
    const keys = ordered.map((x) => ({ endpointId: x.endpointId, participantId: x.orderedParticipantId! }));
    return releaseNextOrdered(tx, keys, null, tx.clock.now());
  });
}

/**
 * `recordSuccesses`'s one statement, built once (`builtOnce`): with the range of the successes' partitions, and
 * without (a message from before partitioning). Every column is one array placeholder, sent as text[] (the
 * driver serializes text arrays only) and cast by PostgreSQL; `since` bounds the attempts' partitions read.
 */
function buildSuccesses(ranged: boolean) {
  const p = (name: string) => sql.placeholder(name);
  // The partitions of the successes' messages (none named when one is from before partitioning).
  const within = (alias: string) =>
    ranged ? sql`and ${eventAtBetween(sql.raw(`${alias}.event_at`), p('from'), p('to'))}` : sql``;
  return builtOnce(
    sql`
    with input as (
      select * from unnest(${p('id')}::text[], ${p('messageId')}::text[], ${p('generation')}::text[]::int[],
        ${p('endpointId')}::text[], ${p('attemptedAt')}::text[]::timestamptz[], ${p('statusCode')}::text[]::int[],
        ${p('latencyMs')}::text[]::int[], ${p('responseExcerpt')}::text[])
        as t(id, message_id, generation, endpoint_id, attempted_at, status_code, latency_ms, response_excerpt)
    ), pruned as (${pruneBeforeAttempt(sql`select message_id from input`, sql`${p('since')}::timestamptz`)}),
    live as (
      select i.message_id from input i join ${webhookMessages} x
        on x.id = i.message_id and x.generation = i.generation
          and ${statusByKey(sql.raw('x.status'), 'PENDING')} ${within('x')}
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
      last_status_code = i.status_code, last_error = null, succeeded_at = i.attempted_at, claimed_until = null,
      updated_at = i.attempted_at
    from input i
    where m.id = i.message_id and m.generation = i.generation
      and ${statusByKey(sql.raw('m.status'), 'PENDING')} ${within('m')}`,
  );
}

const SUCCESSES_STATEMENTS = { ranged: buildSuccesses(true), unranged: buildSuccesses(false) };

/** `recordSuccesses`'s one statement for a list that is not empty, and its values. */
export function successesStatement(list: readonly Success[]) {
  const range = eventAtRange(list.map((x) => x.eventAt));
  const col = (f: (x: Success) => string | null) => list.map(f);
  return {
    statement: range ? SUCCESSES_STATEMENTS.ranged : SUCCESSES_STATEMENTS.unranged,
    values: {
      id: col((x) => x.id),
      messageId: col((x) => x.messageId),
      generation: col((x) => String(x.generation)),
      endpointId: col((x) => x.endpointId),
      attemptedAt: col((x) => x.attemptedAt.toISOString()),
      statusCode: col((x) => String(x.statusCode)),
      latencyMs: col((x) => String(x.latencyMs)),
      responseExcerpt: col((x) => x.responseExcerpt),
      // No attempt is older than its message's event: a message from before partitioning reads them all.
      since: range ? range.from : '-infinity',
      from: range?.from,
      to: range?.to,
    },
  };
}

/** Disables an endpoint that the receiver or its failures turned off, and records why, once. */
async function disableEndpoint(
  ctx: Ctx,
  endpoint: DeliveryEndpoint,
  reason: 'GONE' | 'FAILING',
  failingSince: Date | null,
  now: Date,
): Promise<void> {
  const [changed] = await ctx.db
    .update(webhookEndpoints)
    .set({ enabled: false, disabledReason: reason, disabledAt: now, updatedAt: now })
    .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.enabled, true)))
    .returning({ id: webhookEndpoints.id });
  if (!changed) return;
  await recordEvents(ctx, [
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
async function fulfil(ctx: Ctx, eventId: string, now: Date): Promise<void> {
  const [goal] = await ctx.db.select({ data: events.data }).from(events).where(eq(events.id, eventId));
  const participantRewardId = (goal?.data as { reward?: { id?: unknown } } | undefined)?.reward?.id;
  if (typeof participantRewardId !== 'string') return;
  await fulfilParticipantReward(ctx, participantRewardId, now);
}
