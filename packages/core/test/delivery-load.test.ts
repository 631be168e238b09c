import {
  type Ctx,
  deliveryRows,
  newEventId,
  newTestMessageId,
  systemClock,
  unitOfWork,
} from '@stampcard/core';
import { erasures, events, webhookEndpoints, webhookMessages } from '@stampcard/db';
import { eq, inArray } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { makeEndpoint, makeWorld } from '../../../test/support/factories';
import { useTestDb } from '../../../test/support/use';

const testDb = useTestDb();

/**
 * The dispatcher's load is built once and decodes its rows itself (`builtOnce`): what it reads must be what
 * drizzle would have mapped from the same rows, column by column and type by type.
 */
describe("the dispatcher's load, decoded by itself", () => {
  it('reads each message, its endpoint, its event and its erasure as drizzle maps them, in a transaction too', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const w = await makeWorld(ctx);
    const expires = new Date(Date.now() + 60_000);
    const endpointId = await makeEndpoint(
      ctx,
      { accountId: w.account.id, campaignId: w.campaign.id },
      {
        rateLimit: 50,
        traceContext: true,
        previousSecret: `whsec_${Buffer.from('fedcba9876543210fedcba9876543210').toString('base64')}`,
        previousSecretExpiresAt: expires,
        failingSince: new Date(Date.now() - 5_000),
      },
    );
    const now = new Date();
    const eventId = newEventId(now);
    await ctx.db.insert(events).values({
      id: eventId,
      campaignId: w.campaign.id,
      type: 'LOYALTY_ACTION_APPLIED',
      data: { participant: { id: 'par_gone', email: 'gone@example.com' }, n: 1 },
      createdAt: now,
    });
    await ctx.db.insert(erasures).values({
      participantId: 'par_gone',
      accountId: w.account.id,
      campaignId: w.campaign.id,
      state: 'RUNNING',
      phase: 'EVENTS',
      createdAt: now,
      touchedAt: now,
    });
    // Two ids that carry their time (the statement that names partitions), and one from before they did (the
    // statement that does not: a list with one such id is read without times).
    const withEvent = newTestMessageId(now);
    const testMessage = newTestMessageId(now);
    const legacy = 'msg_legacy_message';
    const base = {
      endpointId,
      campaignId: w.campaign.id,
      status: 'PENDING' as const,
      nextAttemptAt: now,
      createdAt: now,
      updatedAt: now,
      eventAt: now,
    };
    await ctx.db.insert(webhookMessages).values([
      {
        ...base,
        id: withEvent,
        eventId,
        eventType: 'LOYALTY_ACTION_APPLIED',
        participantId: 'par_gone',
        sequence: 9_007_199_254_740_000,
        ordered: true,
        previousId: 'msg_before',
        attempts: 3,
        generation: 2,
      },
      { ...base, id: testMessage, eventType: 'TEST', testBody: { type: 'TEST', data: { hello: 'world' } } },
      { ...base, id: legacy, eventType: 'TEST', testBody: { type: 'TEST', data: {} } },
    ]);

    // What drizzle maps from the same rows.
    const [endpoint] = await ctx.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.id, endpointId));
    const messages = await ctx.db
      .select()
      .from(webhookMessages)
      .where(inArray(webhookMessages.id, [withEvent, testMessage, legacy]));
    const [event] = await ctx.db.select().from(events).where(eq(events.id, eventId));
    const pick = <T extends object>(full: T, like: object) =>
      Object.fromEntries(Object.keys(like).map((k) => [k, full[k as keyof T]]));

    for (const read of [
      await deliveryRows(ctx, [withEvent, testMessage, legacy]),
      [...(await deliveryRows(ctx, [withEvent, testMessage])), ...(await deliveryRows(ctx, [legacy]))],
      await unitOfWork(ctx, (tx) => deliveryRows(tx, [withEvent, testMessage, legacy])),
    ]) {
      expect(read).toHaveLength(3);
      const byId = new Map(read.map((r) => [r.message.id, r]));
      for (const full of messages) {
        const row = byId.get(full.id)!;
        expect(Object.keys(row.message)).toHaveLength(15);
        expect(row.message).toEqual(pick(full, row.message));
        expect(Object.keys(row.endpoint)).toHaveLength(12);
        expect(row.endpoint).toEqual(pick(endpoint!, row.endpoint));
      }
      const sent = byId.get(withEvent)!;
      expect(sent.message.sequence).toBe(9_007_199_254_740_000);
      expect(sent.message.nextAttemptAt).toBeInstanceOf(Date);
      expect(sent.endpoint.previousSecretExpiresAt).toEqual(expires);
      expect(sent.event).toEqual({ type: event!.type, createdAt: event!.createdAt, data: event!.data });
      expect(sent.erasing).toBe('par_gone');
      const test = byId.get(testMessage)!;
      expect(test.message.testBody).toEqual({ type: 'TEST', data: { hello: 'world' } });
      expect(test.event).toBeNull();
      expect(test.erasing).toBeNull();
    }
  });
});
