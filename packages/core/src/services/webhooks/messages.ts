import { events, type MessageStatus, webhookEndpoints, webhookMessages } from '@stampcard/db';
import { and, asc, desc, eq, gte, isNull, lt, lte, or, type SQL, sql } from 'drizzle-orm';
import { type Ctx, commitWrite } from '../../context';
import { invalidState, notFound } from '../../errors';
import { firstLeftOut, itemsWithinBudget, pageWithinBudget } from '../../paging';
import { missing } from '../retention/past';
import { attemptLogBytes, attemptsOf } from './attempt-log';
import { notWaiting } from './ordering';
import { inScope, type WebhookScope } from './scope';
import { type MessageRow, serializeMessage } from './views';

export type MessageFilter = {
  status?: MessageStatus;
  eventType?: string;
  /** Made at or after, UTC ms. */
  since?: number;
  /** Made before, UTC ms. */
  until?: number;
  /** Only messages of events about this participant (read through `events_participant_idx`). */
  participantId?: string;
};

/** A message to put in the delivery queue: at its current generation, with its endpoint when known. */
export type Scheduled = { messageId: string; generation: number; endpointId?: string };

const conditions = (f: MessageFilter): (SQL | undefined)[] => [
  f.status ? eq(webhookMessages.status, f.status) : undefined,
  f.eventType ? eq(webhookMessages.eventType, f.eventType) : undefined,
  f.since === undefined ? undefined : gte(webhookMessages.createdAt, new Date(f.since)),
  f.until === undefined ? undefined : lt(webhookMessages.createdAt, new Date(f.until)),
  f.participantId === undefined
    ? undefined
    : // The participant's events first (events_participant_idx), then their messages by event id (the unique
      // index on event and endpoint): as an array the planner looks each up, where `in (subquery)` scanned the
      // endpoint's whole log for the few that match.
      sql`${webhookMessages.eventId} = any(array(select ${events.id} from ${events} where (${events.data} #>> '{participant,id}') = ${f.participantId}))`,
];

/** The endpoint, not deleted and in the scope, with whether it is enabled; else 404. */
async function endpointOf(ctx: Ctx, endpointId: string, scope: WebhookScope) {
  const [endpoint] = await ctx.db
    .select({ id: webhookEndpoints.id, enabled: webhookEndpoints.enabled })
    .from(webhookEndpoints)
    .where(
      and(
        eq(webhookEndpoints.id, endpointId),
        isNull(webhookEndpoints.deletedAt),
        inScope(webhookEndpoints.campaignId, scope),
      ),
    );
  if (!endpoint) throw notFound(`Webhook endpoint ${endpointId}`);
  return endpoint;
}

/**
 * An endpoint's messages, newest first, each with its attempt log; paged by `after` (a message id from the
 * previous page). Filters: status, event type, a time range. A page holds at most `limit` messages, and what
 * fits in its byte budget (`itemsWithinBudget`).
 */
export async function listMessages(
  ctx: Ctx,
  endpointId: string,
  filter: MessageFilter & { limit: number; after?: string },
  scope: WebhookScope = {},
) {
  await endpointOf(ctx, endpointId, scope);
  let cursor: SQL | undefined;
  if (filter.after) {
    const [from] = await ctx.db
      .select({ createdAt: webhookMessages.createdAt, id: webhookMessages.id })
      .from(webhookMessages)
      .where(and(eq(webhookMessages.id, filter.after), eq(webhookMessages.endpointId, endpointId)));
    if (!from)
      throw await missing(
        ctx,
        'webhook_messages',
        `Message ${filter.after} of endpoint ${endpointId}`,
        filter.after,
      );
    // Older than the cursor's message, ties by id: the first condition bounds the index range
    // (`webhook_messages_endpoint_idx`), which an OR of the two alone would not.
    cursor = and(
      lte(webhookMessages.createdAt, from.createdAt),
      or(lt(webhookMessages.createdAt, from.createdAt), lt(webhookMessages.id, from.id)),
    );
  }
  // The window is sized in PostgreSQL, a message with its attempt log, so that only the messages the page may
  // carry are loaded, and their attempts alone (`pageWithinBudget`).
  const window = ctx.db
    .select({
      id: webhookMessages.id,
      createdAt: webhookMessages.createdAt,
      testBody: webhookMessages.testBody,
    })
    .from(webhookMessages)
    .where(and(eq(webhookMessages.endpointId, endpointId), cursor, ...conditions(filter)))
    .orderBy(desc(webhookMessages.createdAt), desc(webhookMessages.id))
    .limit(filter.limit + 1)
    .as('window');
  const kept = pageWithinBudget(ctx, window, {
    order: sql`${window.createdAt} desc, ${window.id} desc`,
    size: sql`coalesce(octet_length(${window.testBody}::text), 0) + ${attemptLogBytes(window.id)}`,
    limit: filter.limit,
  });
  const rows = await ctx.db
    .select({ message: webhookMessages, next: kept.rows.next })
    .from(kept.rows)
    .innerJoin(webhookMessages, eq(webhookMessages.id, kept.rows.id))
    .where(kept.within)
    .orderBy(asc(kept.rows.ord));
  const attempts = await attemptsOf(
    ctx,
    rows.map((r) => r.message.id),
  );
  const items = rows.map((r) => serializeMessage(r.message, attempts.get(r.message.id)!));
  const shown = items.slice(0, itemsWithinBudget(items));
  return {
    messages: shown,
    more:
      firstLeftOut(
        rows.map((r) => ({ id: r.message.id, next: r.next })),
        shown.length,
      ) !== null,
    nextAfter: shown.at(-1)?.id ?? null,
  };
}

/** A message of an endpoint that is not deleted (a deleted endpoint's messages are gone from the API at once). */
async function requireMessage(ctx: Ctx, id: string, scope: WebhookScope): Promise<MessageRow> {
  const [row] = await ctx.db
    .select({ message: webhookMessages })
    .from(webhookMessages)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookMessages.endpointId))
    .where(
      and(
        eq(webhookMessages.id, id),
        isNull(webhookEndpoints.deletedAt),
        inScope(webhookMessages.campaignId, scope),
      ),
    );
  if (!row) throw await missing(ctx, 'webhook_messages', `Webhook message ${id}`, id);
  return row.message;
}

/** One message with its attempt log. */
export async function getMessage(ctx: Ctx, id: string, scope: WebhookScope = {}) {
  const m = await requireMessage(ctx, id, scope);
  return serializeMessage(m, (await attemptsOf(ctx, [id])).get(id)!);
}

/** What a message replayed (or released by its endpoint's enabling) becomes: due now, on a fresh schedule. */
export const replayed = (now: Date) => ({
  status: 'PENDING' as const,
  attempts: 0,
  nextAttemptAt: now,
  lastError: null,
  updatedAt: now,
  generation: sql`${webhookMessages.generation} + 1`,
});

/**
 * Delivers one message again, whatever its status, on a fresh schedule and with the same `msg_` id (so a
 * receiver that keeps ids sees a repeat, not a new event). A message already PENDING is only made due now.
 * While its endpoint is disabled the message waits for it to be enabled again. An ordered message waiting for
 * an earlier one of its participant is refused (400 INVALID_STATE): it goes as soon as that one ends.
 */
export async function replayMessage(ctx: Ctx, id: string, scope: WebhookScope = {}) {
  await requireMessage(ctx, id, scope);
  const now = ctx.clock.now();
  const [row] = await commitWrite(ctx, (w) =>
    w.db
      .update(webhookMessages)
      .set(replayed(now))
      .where(and(eq(webhookMessages.id, id), notWaiting))
      .returning(),
  );
  if (!row) {
    throw invalidState(
      `Webhook message ${id} waits for an earlier message of its participant to this endpoint: it is sent once that one succeeds or is dead-lettered`,
    );
  }
  return {
    message: serializeMessage(row!, (await attemptsOf(ctx, [id])).get(id)!),
    scheduled: {
      messageId: row!.id,
      generation: row!.generation,
      endpointId: row!.endpointId,
    } satisfies Scheduled,
  };
}

/**
 * The condition "one of at most `limit` of the messages that match, oldest first (createdAt, id)", locking them
 * for the statement that uses it; messages another statement holds are skipped, so two at once never take the
 * same message. The picked ids are an array the statement looks up by primary key: an `in (subquery)` let the
 * planner hash-join them against a scan of the whole table, once per batch. Every bulk change of messages goes
 * through it: replay, and each batch of a backlog operation.
 */
export const pickedMessages = (ctx: Ctx, matching: SQL | undefined, limit: number): SQL =>
  sql`${webhookMessages.id} = any(array(${ctx.db
    .select({ id: webhookMessages.id })
    .from(webhookMessages)
    .where(matching)
    .orderBy(asc(webhookMessages.createdAt), asc(webhookMessages.id))
    .limit(limit)
    .for('update', { skipLocked: true })}))`;

/** At most this many messages are replayed by one request; the answer says when more matched. */
export const MAX_REPLAY = 10_000;

/**
 * Replays an endpoint's messages that match a filter (by default FAILED ones), each once: the messages are
 * unique per (event, endpoint), so replaying twice never makes a second message for an event, and a message
 * already PENDING does not match a second replay of FAILED ones.
 */
export async function replayMessages(
  ctx: Ctx,
  endpointId: string,
  filter: MessageFilter,
  scope: WebhookScope = {},
) {
  const endpoint = await endpointOf(ctx, endpointId, scope);
  const status = filter.status ?? 'FAILED';
  const now = ctx.clock.now();
  const matching = and(
    eq(webhookMessages.endpointId, endpointId),
    lte(webhookMessages.createdAt, now),
    // Not an ordered message waiting for an earlier one of its participant: that one's end makes it due.
    notWaiting,
    ...conditions({ ...filter, status }),
  );
  // One statement picks and replays, so two replays at once cannot both take a message.
  const rows = await commitWrite(ctx, (w) =>
    w.db
      .update(webhookMessages)
      .set(replayed(now))
      .where(pickedMessages(ctx, matching, MAX_REPLAY))
      .returning({ messageId: webhookMessages.id, generation: webhookMessages.generation }),
  );
  const [left] =
    rows.length < MAX_REPLAY
      ? []
      : await ctx.db.select({ id: webhookMessages.id }).from(webhookMessages).where(matching).limit(1);
  return {
    replayed: rows.length,
    more: left !== undefined,
    endpointEnabled: endpoint.enabled,
    scheduled: rows.map((r) => ({ ...r, endpointId })) satisfies Scheduled[],
  };
}
