import {
  campaigns,
  type EndpointKind,
  type EndpointOrdering,
  webhookEndpoints,
  webhookMessages,
} from '@stampcard/db';
import { checkResolvedDestination, DestinationRefusedError, generateSecret } from '@stampcard/webhooks';
import { and, asc, eq, isNull } from 'drizzle-orm';
import type { z } from 'zod';
import { type Ctx, commitWrite, unitOfWork } from '../../context';
import { clip, notFound, validationError } from '../../errors';
import type { TEST_EVENT_DATA } from '../../event-schemas';
import { newId, newTestMessageId } from '../../ids';
import {
  type BacklogStep,
  backlogBatch,
  countPending,
  DEFAULT_BACKLOG_BATCH,
  operationInProgress,
  runningBacklog,
  startBacklog,
} from './backlog';
import type { Scheduled } from './messages';
import { inScope, requireCampaignInScope, type WebhookScope } from './scope';
import { type EndpointRow, serializeBacklog, serializeEndpoint } from './views';

/** What the operator chooses of an endpoint. */
export type EndpointInput = {
  url: string;
  /** Empty or absent: every type (a FULFILMENT endpoint: `PARTICIPANT_REACHED_A_GOAL`). */
  eventTypes?: string[];
  /** @defaultValue 'NOTIFY' */
  kind?: EndpointKind;
  /** @defaultValue true */
  enabled?: boolean;
  /** Deliveries per second across every dispatcher; null: none. @defaultValue null */
  rateLimit?: number | null;
  /** Send a `traceparent` header with each delivery. @defaultValue false */
  traceContext?: boolean;
  /** See `ENDPOINT_ORDERINGS`. @defaultValue 'NONE' */
  ordering?: EndpointOrdering;
  /** @defaultValue '' */
  description?: string;
};

export type EndpointOptions = {
  /**
   * Accept private, loopback and link-local destinations (`WEBHOOK_ALLOW_PRIVATE_NETWORKS`).
   * @defaultValue false
   */
  allowPrivateNetworks?: boolean;
  /**
   * The most messages one batch of a backlog operation handles (`WEBHOOK_BACKLOG_BATCH`): the request runs the
   * first batch, the dispatcher the others.
   * @defaultValue 1000
   */
  backlogBatch?: number;
};

/** The rotation overlap when the operator names none: old and new secrets both sign for 24 h. */
export const DEFAULT_ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

/** The refusal of a non-public receiver, with the setting that allows one (a receiver on this machine). */
const notPublic = (why: string) =>
  `${why}: receivers on this host or a private network are refused unless the service runs with ` +
  'WEBHOOK_ALLOW_PRIVATE_NETWORKS=true (API and dispatcher; for local development only)';

/**
 * The URL, checked as it is registered: http(s), and its host, an IP literal or a name as it resolves now, must
 * be public (unless allowed).
 */
async function checkedUrl(url: string, opts: EndpointOptions): Promise<string> {
  let msg: string;
  try {
    return (await checkResolvedDestination(url, opts)).toString();
  } catch (err) {
    if (err instanceof DestinationRefusedError)
      msg = err.reason === 'NOT_PUBLIC' ? notPublic(err.message) : err.message;
    else if (err instanceof TypeError) msg = 'must be an absolute http or https URL';
    else throw err;
  }
  throw validationError([{ location: 'body', param: 'url', value: clip(url), msg }]);
}

/**
 * A deleted endpoint is gone from the API at once, while its messages are still being deleted; an endpoint out
 * of the caller's scope is not there at all (the same 404 as one that never existed).
 */
const live = (id: string, scope: WebhookScope) =>
  and(
    eq(webhookEndpoints.id, id),
    isNull(webhookEndpoints.deletedAt),
    inScope(webhookEndpoints.campaignId, scope),
  );

async function requireEndpoint(ctx: Ctx, id: string, scope: WebhookScope = {}): Promise<EndpointRow> {
  const [row] = await ctx.db.select().from(webhookEndpoints).where(live(id, scope));
  if (!row) throw notFound(`Webhook endpoint ${id}`);
  return row;
}

/** The endpoint locked for a change, in the caller's transaction. */
async function lockEndpoint(tx: Ctx, id: string, scope: WebhookScope = {}): Promise<EndpointRow> {
  const [row] = await tx.db.select().from(webhookEndpoints).where(live(id, scope)).for('update');
  if (!row) throw notFound(`Webhook endpoint ${id}`);
  return row;
}

/** What a request that started a backlog operation hands on once committed. */
export type BacklogHandOff = {
  /** The messages its first batch made due, to put in the delivery queue. */
  scheduled: Scheduled[];
  /** The job of the operation's next batch, when one batch was not enough. */
  next: BacklogStep | null;
};

/** Registers an endpoint; the answer carries its secret, which is never shown again. */
export async function createEndpoint(
  ctx: Ctx,
  campaignId: string,
  input: EndpointInput,
  opts: EndpointOptions = {},
  scope: WebhookScope = {},
) {
  const url = await checkedUrl(input.url, opts);
  const [campaign] = await ctx.db
    .select({ id: campaigns.id, accountId: campaigns.accountId })
    .from(campaigns)
    .where(and(eq(campaigns.id, campaignId), inScope(campaigns.id, scope)));
  if (!campaign) throw notFound(`Campaign ${campaignId}`);
  const kind = input.kind ?? 'NOTIFY';
  const now = ctx.clock.now();
  const secret = generateSecret();
  const [row] = await commitWrite(ctx, (w) =>
    w.db
      .insert(webhookEndpoints)
      .values({
        id: newId('webhookEndpoint'),
        accountId: campaign.accountId,
        campaignId,
        url,
        description: input.description ?? '',
        eventTypes:
          input.eventTypes?.length || kind === 'NOTIFY'
            ? [...new Set(input.eventTypes ?? [])]
            : ['PARTICIPANT_REACHED_A_GOAL'],
        kind,
        enabled: input.enabled ?? true,
        disabledReason: input.enabled === false ? 'OPERATOR' : null,
        disabledAt: input.enabled === false ? now : null,
        rateLimit: input.rateLimit ?? null,
        traceContext: input.traceContext ?? false,
        ordering: input.ordering ?? 'NONE',
        secret,
        createdAt: now,
        updatedAt: now,
      })
      .returning(),
  );
  return { ...serializeEndpoint(row!, now), secret };
}

export async function listEndpoints(ctx: Ctx, campaignId: string, scope: WebhookScope = {}) {
  if (scope.accountId !== undefined || scope.campaignId !== undefined) {
    await requireCampaignInScope(ctx, campaignId, scope);
  }
  const rows = await ctx.db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.campaignId, campaignId), isNull(webhookEndpoints.deletedAt)))
    .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id));
  const now = ctx.clock.now();
  return { endpoints: rows.map((r) => serializeEndpoint(r, now)) };
}

export async function getEndpoint(ctx: Ctx, id: string, scope: WebhookScope = {}) {
  return serializeEndpoint(await requireEndpoint(ctx, id, scope), ctx.clock.now());
}

/**
 * Changes an endpoint. Enabling a disabled one releases the messages it held: each is due at once, on a fresh
 * retry schedule and at a new generation. `released` says how many; the first batch is released here, the rest
 * in the background (`backlog` shows the progress). Disabling it during a release ends the release: what is
 * left stays held. Enabling it while a discard runs is refused (409 OPERATION_IN_PROGRESS).
 */
export async function updateEndpoint(
  ctx: Ctx,
  id: string,
  patch: Partial<EndpointInput>,
  opts: EndpointOptions = {},
  scope: WebhookScope = {},
): Promise<{ endpoint: ReturnType<typeof serializeEndpoint>; released: number } & BacklogHandOff> {
  const url = patch.url === undefined ? undefined : await checkedUrl(patch.url, opts);
  return unitOfWork(ctx, async (tx) => {
    const now = ctx.clock.now();
    const current = await lockEndpoint(tx, id, scope);
    const enabling = patch.enabled === true && !current.enabled;
    const disabling = patch.enabled === false && current.enabled;
    if (enabling && runningBacklog(current) && current.backlogKind === 'DISCARD') {
      throw operationInProgress(current);
    }
    const released = enabling ? await countPending(tx, id, now) : 0;
    const releasing = current.backlogKind === 'RELEASE' && runningBacklog(current);
    const [row] = await tx.db
      .update(webhookEndpoints)
      .set({
        ...(url === undefined ? {} : { url }),
        ...(patch.eventTypes === undefined ? {} : { eventTypes: [...new Set(patch.eventTypes)] }),
        ...(patch.kind === undefined ? {} : { kind: patch.kind }),
        ...(patch.rateLimit === undefined ? {} : { rateLimit: patch.rateLimit }),
        ...(patch.traceContext === undefined ? {} : { traceContext: patch.traceContext }),
        ...(patch.ordering === undefined ? {} : { ordering: patch.ordering }),
        ...(patch.description === undefined ? {} : { description: patch.description }),
        // Enabled again, it starts afresh: no run of failures or throttles carried over.
        ...(enabling
          ? {
              enabled: true,
              disabledReason: null,
              disabledAt: null,
              failingSince: null,
              throttles: 0,
              throttledSince: null,
            }
          : {}),
        ...(enabling && released > 0 ? startBacklog(current, 'RELEASE', released, now) : {}),
        ...(disabling ? { enabled: false, disabledReason: 'OPERATOR' as const, disabledAt: now } : {}),
        ...(disabling && releasing
          ? { backlogState: 'CANCELLED' as const, backlogFinishedAt: now, backlogTouchedAt: now }
          : {}),
        updatedAt: now,
      })
      .where(eq(webhookEndpoints.id, id))
      .returning();
    if (!(enabling && released > 0)) {
      return { endpoint: serializeEndpoint(row!, now), released, scheduled: [], next: null };
    }
    const first = await backlogBatch(tx, row!, opts.backlogBatch ?? DEFAULT_BACKLOG_BATCH);
    const after = await lockEndpoint(tx, id);
    return {
      endpoint: serializeEndpoint(after, now),
      released,
      scheduled: first.scheduled,
      next: first.next,
    };
  });
}

/**
 * Deletes an endpoint: it is gone from the API at once (and gets no new message); its messages and their
 * attempts are deleted in batches, the first here, the others in the background, then the endpoint row. Deleting
 * supersedes any release or discard still running.
 */
export async function deleteEndpoint(
  ctx: Ctx,
  id: string,
  opts: Pick<EndpointOptions, 'backlogBatch'> = {},
  scope: WebhookScope = {},
): Promise<{ answer: { id: string; deleted: true }; next: BacklogStep | null }> {
  return unitOfWork(ctx, async (tx) => {
    const current = await lockEndpoint(tx, id, scope);
    const now = ctx.clock.now();
    const [row] = await tx.db
      .update(webhookEndpoints)
      .set({ deletedAt: now, enabled: false, updatedAt: now, ...startBacklog(current, 'DELETE', null, now) })
      .where(eq(webhookEndpoints.id, id))
      .returning();
    const first = await backlogBatch(tx, row!, opts.backlogBatch ?? DEFAULT_BACKLOG_BATCH);
    return { answer: { id, deleted: true as const }, next: first.next };
  });
}

/**
 * A new secret, shown once. The old one keeps signing beside it for `overlapMs` (0: it stops at once), so
 * receivers can switch without missing a delivery.
 */
export async function rotateSecret(
  ctx: Ctx,
  id: string,
  overlapMs = DEFAULT_ROTATION_OVERLAP_MS,
  scope: WebhookScope = {},
) {
  const current = await requireEndpoint(ctx, id, scope);
  const now = ctx.clock.now();
  const secret = generateSecret();
  const [row] = await commitWrite(ctx, (w) =>
    w.db
      .update(webhookEndpoints)
      .set({
        secret,
        previousSecret: overlapMs > 0 ? current.secret : null,
        previousSecretExpiresAt: overlapMs > 0 ? new Date(now.getTime() + overlapMs) : null,
        updatedAt: now,
      })
      .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.secret, current.secret)))
      .returning(),
  );
  // Another rotation won the race: ask again rather than drop the secret it just handed out.
  if (!row) throw notFound(`Webhook endpoint ${id} (it changed while rotating; rotate again)`);
  return { ...serializeEndpoint(row, now), secret };
}

/** Ends a rotation's overlap now: only the current secret signs from here on. */
export async function revokePreviousSecret(ctx: Ctx, id: string, scope: WebhookScope = {}) {
  await requireEndpoint(ctx, id, scope);
  const now = ctx.clock.now();
  const [row] = await commitWrite(ctx, (w) =>
    w.db
      .update(webhookEndpoints)
      .set({ previousSecret: null, previousSecretExpiresAt: null, updatedAt: now })
      .where(eq(webhookEndpoints.id, id))
      .returning(),
  );
  return serializeEndpoint(row!, now);
}

/**
 * A test message to one endpoint only (no outbox event, so no other endpoint and no feed sees it), delivered,
 * signed and recorded like any other. The answer names the message for the caller to queue and follow.
 */
export const TEST_EVENT_TYPE = 'WEBHOOK_TEST';

export async function createTestMessage(ctx: Ctx, id: string, scope: WebhookScope = {}) {
  const eventType = TEST_EVENT_TYPE;
  const endpoint = await requireEndpoint(ctx, id, scope);
  const now = ctx.clock.now();
  const messageId = newTestMessageId(now);
  const [row] = await commitWrite(
    ctx,
    (w) =>
      w.db
        .insert(webhookMessages)
        .values({
          id: messageId,
          endpointId: endpoint.id,
          campaignId: endpoint.campaignId,
          eventId: null,
          eventType,
          testBody: {
            type: eventType,
            timestamp: now.getTime(),
            data: {
              test: true,
              endpointId: endpoint.id,
              campaign: { id: endpoint.campaignId },
            } satisfies z.infer<typeof TEST_EVENT_DATA>,
          },
          status: 'PENDING',
          nextAttemptAt: now,
          createdAt: now,
          updatedAt: now,
          eventAt: now,
        })
        .returning(),
    { messageId },
  );
  return { messageId: row!.id, generation: row!.generation, endpointEnabled: endpoint.enabled };
}

/**
 * Drops the messages an endpoint still has to deliver (those made until now), by the operator's explicit
 * choice: `discarded` says how many; the first batch goes here, the rest in the background (`backlog` shows the
 * progress). Refused while a release or another discard runs (409 OPERATION_IN_PROGRESS).
 */
export async function discardPendingMessages(
  ctx: Ctx,
  id: string,
  opts: Pick<EndpointOptions, 'backlogBatch'> = {},
  scope: WebhookScope = {},
): Promise<{ answer: { discarded: number; backlog: ReturnType<typeof serializeBacklog> } } & BacklogHandOff> {
  return unitOfWork(ctx, async (tx) => {
    const current = await lockEndpoint(tx, id, scope);
    if (runningBacklog(current)) throw operationInProgress(current);
    const now = ctx.clock.now();
    const discarded = await countPending(tx, id, now);
    if (discarded === 0) {
      return { answer: { discarded, backlog: serializeBacklog(current) }, scheduled: [], next: null };
    }
    const [row] = await tx.db
      .update(webhookEndpoints)
      .set(startBacklog(current, 'DISCARD', discarded, now))
      .where(eq(webhookEndpoints.id, id))
      .returning();
    const first = await backlogBatch(tx, row!, opts.backlogBatch ?? DEFAULT_BACKLOG_BATCH);
    const after = await lockEndpoint(tx, id);
    return { answer: { discarded, backlog: serializeBacklog(after) }, scheduled: [], next: first.next };
  });
}
