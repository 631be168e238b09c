import type { webhookAttempts, webhookEndpoints, webhookMessages } from '@stampcard/db';
import { waits } from './ordering';

export type EndpointRow = typeof webhookEndpoints.$inferSelect;
export type MessageRow = typeof webhookMessages.$inferSelect;
export type AttemptRow = typeof webhookAttempts.$inferSelect;

/**
 * A message's attempt log as shown: its first and last `ATTEMPT_LOG_KEEP` attempts, oldest first, and how many
 * rows the log holds (with the message's `attemptsPruned`, every attempt ever made; see `attemptsOf`).
 */
export type AttemptLog = { attempts: AttemptRow[]; rows: number };

const ms = (d: Date | null) => (d ? d.getTime() : null);

/**
 * The endpoint's latest release or discard of its messages, with its progress; null when it never had one. (A
 * deletion is never shown: the endpoint is gone from the API as soon as it is asked.)
 */
export function serializeBacklog(e: EndpointRow) {
  if (!e.backlogKind || e.backlogKind === 'DELETE' || !e.backlogState || !e.backlogStartedAt) return null;
  return {
    kind: e.backlogKind,
    state: e.backlogState,
    total: e.backlogTotal ?? e.backlogDone,
    done: e.backlogDone,
    startedAt: e.backlogStartedAt.getTime(),
    finishedAt: ms(e.backlogFinishedAt),
  };
}

/** An endpoint as the operator API shows it: never its secrets (those are shown once, when made). */
export function serializeEndpoint(e: EndpointRow, now: Date) {
  const overlapping = e.previousSecret && e.previousSecretExpiresAt && e.previousSecretExpiresAt > now;
  return {
    id: e.id,
    campaignId: e.campaignId,
    url: e.url,
    description: e.description,
    eventTypes: e.eventTypes,
    kind: e.kind,
    enabled: e.enabled,
    disabledReason: e.disabledReason,
    disabledAt: ms(e.disabledAt),
    rateLimit: e.rateLimit,
    traceContext: e.traceContext,
    ordering: e.ordering,
    failingSince: ms(e.failingSince),
    throttledSince: ms(e.throttledSince),
    /** While a rotation overlaps, the time the previous secret stops signing. */
    previousSecretExpiresAt: overlapping ? ms(e.previousSecretExpiresAt) : null,
    createdAt: e.createdAt.getTime(),
    updatedAt: e.updatedAt.getTime(),
    backlog: serializeBacklog(e),
  };
}

export function serializeAttempt(a: AttemptRow) {
  return {
    id: a.id,
    attemptedAt: a.attemptedAt.getTime(),
    statusCode: a.statusCode,
    latencyMs: a.latencyMs,
    responseExcerpt: a.responseExcerpt,
    errorClass: a.errorClass,
    succeeded: a.succeeded,
    throttled: a.throttled,
  };
}

/** A message with its attempt log: the first and last attempts (`ATTEMPT_LOG_KEEP` each) and how many. */
export function serializeMessage(m: MessageRow, log: AttemptLog) {
  const attemptCount = m.attemptsPruned + log.rows;
  return {
    id: m.id,
    endpointId: m.endpointId,
    campaignId: m.campaignId,
    eventId: m.eventId,
    eventType: m.eventType,
    participantId: m.participantId,
    sequence: m.sequence,
    previousId: m.previousId,
    status: m.status,
    attempts: m.attempts,
    waiting: waits(m),
    nextAttemptAt: m.status === 'PENDING' && !waits(m) ? m.nextAttemptAt.getTime() : null,
    lastStatusCode: m.lastStatusCode,
    lastError: m.lastError,
    createdAt: m.createdAt.getTime(),
    updatedAt: m.updatedAt.getTime(),
    succeededAt: ms(m.succeededAt),
    attemptLog: log.attempts.map(serializeAttempt),
    attemptCount,
    attemptsOmitted: attemptCount - log.attempts.length,
  };
}
