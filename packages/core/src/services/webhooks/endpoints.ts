import { campaigns, type EndpointKind, webhookEndpoints, webhookMessages } from '@stampcard/db';
import { checkResolvedDestination, DestinationRefusedError, generateSecret } from '@stampcard/webhooks';
import { and, asc, eq, sql } from 'drizzle-orm';
import { type Ctx, commitWrite, unitOfWork } from '../../context';
import { clip, notFound, validationError } from '../../errors';
import { newId } from '../../ids';
import { type EndpointRow, serializeEndpoint } from './views';

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
  /** @defaultValue '' */
  description?: string;
};

export type EndpointOptions = {
  /**
   * Accept private, loopback and link-local destinations (`WEBHOOK_ALLOW_PRIVATE_NETWORKS`).
   * @defaultValue false
   */
  allowPrivateNetworks?: boolean;
};

/** The rotation overlap when the operator names none: old and new secrets both sign for 24 h. */
export const DEFAULT_ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

/**
 * The URL, checked as it is registered: http(s), and its host, an IP literal or a name as it resolves now, must
 * be public (unless allowed).
 */
async function checkedUrl(url: string, opts: EndpointOptions): Promise<string> {
  let msg: string;
  try {
    return (await checkResolvedDestination(url, opts)).toString();
  } catch (err) {
    if (err instanceof DestinationRefusedError) msg = err.message;
    else if (err instanceof TypeError) msg = 'must be an absolute http or https URL';
    else throw err;
  }
  throw validationError([{ location: 'body', param: 'url', value: clip(url), msg }]);
}

async function requireEndpoint(ctx: Ctx, id: string): Promise<EndpointRow> {
  const [row] = await ctx.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id));
  if (!row) throw notFound(`Webhook endpoint ${id}`);
  return row;
}

/** Registers an endpoint; the answer carries its secret, which is never shown again. */
export async function createEndpoint(
  ctx: Ctx,
  campaignId: string,
  input: EndpointInput,
  opts: EndpointOptions = {},
) {
  const url = await checkedUrl(input.url, opts);
  const [campaign] = await ctx.db
    .select({ id: campaigns.id })
    .from(campaigns)
    .where(eq(campaigns.id, campaignId));
  if (!campaign) throw notFound(`Campaign ${campaignId}`);
  const kind = input.kind ?? 'NOTIFY';
  const now = ctx.clock.now();
  const secret = generateSecret();
  const [row] = await commitWrite(ctx, () =>
    ctx.db
      .insert(webhookEndpoints)
      .values({
        id: newId('webhookEndpoint'),
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
        secret,
        createdAt: now,
        updatedAt: now,
      })
      .returning(),
  );
  return { ...serializeEndpoint(row!, now), secret };
}

export async function listEndpoints(ctx: Ctx, campaignId: string) {
  const rows = await ctx.db
    .select()
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.campaignId, campaignId))
    .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id));
  const now = ctx.clock.now();
  return { endpoints: rows.map((r) => serializeEndpoint(r, now)) };
}

export async function getEndpoint(ctx: Ctx, id: string) {
  return serializeEndpoint(await requireEndpoint(ctx, id), ctx.clock.now());
}

/**
 * Changes an endpoint. Enabling a disabled one releases the messages it held: each is due at once, on a fresh
 * retry schedule and at a new generation, and `released` lists them for the caller to put in the delivery
 * queue.
 */
export async function updateEndpoint(
  ctx: Ctx,
  id: string,
  patch: Partial<EndpointInput>,
  opts: EndpointOptions = {},
) {
  const url = patch.url === undefined ? undefined : await checkedUrl(patch.url, opts);
  return unitOfWork(ctx, async (tx) => {
    const now = ctx.clock.now();
    const [current] = await tx.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.id, id))
      .for('update');
    if (!current) throw notFound(`Webhook endpoint ${id}`);
    const enabling = patch.enabled === true && !current.enabled;
    const disabling = patch.enabled === false && current.enabled;
    const [row] = await tx.db
      .update(webhookEndpoints)
      .set({
        ...(url === undefined ? {} : { url }),
        ...(patch.eventTypes === undefined ? {} : { eventTypes: [...new Set(patch.eventTypes)] }),
        ...(patch.kind === undefined ? {} : { kind: patch.kind }),
        ...(patch.rateLimit === undefined ? {} : { rateLimit: patch.rateLimit }),
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
        ...(disabling ? { enabled: false, disabledReason: 'OPERATOR' as const, disabledAt: now } : {}),
        updatedAt: now,
      })
      .where(eq(webhookEndpoints.id, id))
      .returning();
    const released = enabling
      ? await tx.db
          .update(webhookMessages)
          .set({
            nextAttemptAt: now,
            attempts: 0,
            updatedAt: now,
            generation: sql`${webhookMessages.generation} + 1`,
          })
          .where(and(eq(webhookMessages.endpointId, id), eq(webhookMessages.status, 'PENDING')))
          .returning({ messageId: webhookMessages.id, generation: webhookMessages.generation })
      : [];
    return { endpoint: serializeEndpoint(row!, now), released };
  });
}

/** Deletes an endpoint with its messages and their attempts. */
export async function deleteEndpoint(ctx: Ctx, id: string) {
  const [row] = await commitWrite(ctx, () =>
    ctx.db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, id)).returning({ id: webhookEndpoints.id }),
  );
  if (!row) throw notFound(`Webhook endpoint ${id}`);
  return { id: row.id, deleted: true };
}

/**
 * A new secret, shown once. The old one keeps signing beside it for `overlapMs` (0: it stops at once), so
 * receivers can switch without missing a delivery.
 */
export async function rotateSecret(ctx: Ctx, id: string, overlapMs = DEFAULT_ROTATION_OVERLAP_MS) {
  const current = await requireEndpoint(ctx, id);
  const now = ctx.clock.now();
  const secret = generateSecret();
  const [row] = await commitWrite(ctx, () =>
    ctx.db
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
export async function revokePreviousSecret(ctx: Ctx, id: string) {
  await requireEndpoint(ctx, id);
  const now = ctx.clock.now();
  const [row] = await commitWrite(ctx, () =>
    ctx.db
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

export async function createTestMessage(ctx: Ctx, id: string) {
  const eventType = TEST_EVENT_TYPE;
  const endpoint = await requireEndpoint(ctx, id);
  const now = ctx.clock.now();
  const messageId = newId('webhookMessage');
  const [row] = await commitWrite(ctx, () =>
    ctx.db
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
          data: { test: true, endpointId: endpoint.id, campaign: { id: endpoint.campaignId } },
        },
        status: 'PENDING',
        nextAttemptAt: now,
        createdAt: now,
        updatedAt: now,
      })
      .returning(),
  );
  return { messageId: row!.id, generation: row!.generation, endpointEnabled: endpoint.enabled };
}

/** Drops the messages a (disabled) endpoint holds, by the operator's explicit choice. */
export async function discardPendingMessages(ctx: Ctx, id: string) {
  await requireEndpoint(ctx, id);
  const now = ctx.clock.now();
  const rows = await commitWrite(ctx, () =>
    ctx.db
      .update(webhookMessages)
      .set({ status: 'DISCARDED', updatedAt: now })
      .where(and(eq(webhookMessages.endpointId, id), eq(webhookMessages.status, 'PENDING')))
      .returning({ id: webhookMessages.id }),
  );
  return { discarded: rows.length };
}
