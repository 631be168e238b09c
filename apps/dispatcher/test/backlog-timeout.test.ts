import { fanOutEvents } from '@stampcard/core';
import { webhookMessages, webhookSequences } from '@stampcard/db';
import { and, count, eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, expectErrorShape, overHttp } from '../../../test/support/client';
import { refusals } from '../../../test/support/refused';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';
import {
  backlogWhenEnded,
  endpointRowExists,
  heldEndpoint,
  messageCounts,
} from '../../../test/support/webhooks';

/**
 * Large backlogs under a short statement timeout: every pool of the stack cancels a statement after 200 ms, so
 * one statement over a whole backlog of 50,000 messages (what discarding and deleting ran before) fails. Each
 * batch must stay small, and a second operation waits for the first.
 */
const BATCH = 1000;
const stack = useTestStack({
  http: true,
  worker: false,
  dispatcher: false,
  statementTimeoutMs: 200,
  backlogBatch: BATCH,
});
const expectRefused = refusals(stack);

const operator = () => client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
const endpointPath = (id: string) => `/admin/v1/webhook-endpoints/${id}`;

describe('an endpoint with a large backlog, under a 200 ms statement timeout', () => {
  it('one operation at a time: a second discard or an enable waits (409), deleting always goes', async () => {
    await stack.stopDispatcher();
    const ep = await heldEndpoint(stack, 3 * BATCH);
    const op = operator();
    const discard = await op.post(`${endpointPath(ep.id)}/discard-pending`);
    expect(discard.status, JSON.stringify(discard.body)).toBe(200);
    expect(discard.body).toEqual({
      discarded: 3 * BATCH,
      backlog: {
        kind: 'DISCARD',
        state: 'RUNNING',
        total: 3 * BATCH,
        done: BATCH,
        startedAt: expect.any(Number),
        finishedAt: null,
      },
    });
    // Nothing runs the rest yet (no dispatcher): a second operation is refused, and changes nothing.
    const again = await expectRefused(
      () => op.post(`${endpointPath(ep.id)}/discard-pending`),
      409,
      'OPERATION_IN_PROGRESS',
    );
    expect(again.operation).toEqual(discard.body.backlog);
    const enable = await expectRefused(
      () => op.patch(endpointPath(ep.id), { enabled: true }),
      409,
      'OPERATION_IN_PROGRESS',
    );
    expect(enable.operation).toMatchObject({ kind: 'DISCARD', done: BATCH });

    // Deleting goes whatever runs: the endpoint is gone from the API at once.
    const [someMessage] = await stack.ctx.db
      .select({ id: webhookMessages.id })
      .from(webhookMessages)
      .where(and(eq(webhookMessages.endpointId, ep.id), eq(webhookMessages.status, 'PENDING')))
      .limit(1);
    const deleted = await op.delete(endpointPath(ep.id));
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: ep.id, deleted: true });
    expectErrorShape(await op.get(endpointPath(ep.id)), 404, 'NOT_FOUND');
    expectErrorShape(await op.patch(endpointPath(ep.id), { enabled: true }), 404, 'NOT_FOUND');
    expectErrorShape(await op.get(`${endpointPath(ep.id)}/messages`), 404, 'NOT_FOUND');
    expectErrorShape(await op.get(`/admin/v1/webhook-messages/${someMessage!.id}`), 404, 'NOT_FOUND');
    expectErrorShape(await op.delete(endpointPath(ep.id)), 404, 'NOT_FOUND');
    const list = await op.get(`/admin/v1/campaigns/${ep.campaignId}/webhook-endpoints`);
    expect(list.body.endpoints).toEqual([]);
    // And it gets no message of what happens in its campaign from now on.
    const eventId = `evt_late_${ep.id}`;
    await stack.ctx.db.execute(
      sql`insert into events (id, campaign_id, type, data, created_at)
        values (${eventId}, ${ep.campaignId}, 'CAMPAIGN_ENDED', '{}', now())`,
    );
    expect((await fanOutEvents(stack.ctx, [eventId])).scheduled).toEqual([]);
    const late = await stack.ctx.db
      .select({ id: webhookMessages.id })
      .from(webhookMessages)
      .where(eq(webhookMessages.eventId, eventId));
    expect(late).toEqual([]);

    // The dispatcher deletes the rest in batches; the discard's job, superseded, does nothing.
    stack.startDispatcher();
    await eventually(
      () => endpointRowExists(stack, ep.id),
      (exists) => !exists,
      60_000,
    );
    expect(await messageCounts(stack, ep.id)).toEqual({});
  });

  it('discarding, then deleting, 50,000 messages and sequence counters: each in batches under a 200 ms statement timeout', {
    timeout: 150_000,
  }, async () => {
    const total = 50_000;
    const ep = await heldEndpoint(stack, total);
    // As many participants' sequence counters as it has messages: they go in batches too.
    await stack.ctx.db.execute(sql`
      insert into ${webhookSequences} (endpoint_id, participant_id, last)
      select ${ep.id}, 'prt_held_' || n, n from generate_series(1, ${total}) as n`);
    const counters = async () =>
      (
        await stack.ctx.db
          .select({ n: count() })
          .from(webhookSequences)
          .where(eq(webhookSequences.endpointId, ep.id))
      )[0]!.n;
    expect(await counters()).toBe(total);
    if (!stack.dispatcher) stack.startDispatcher();
    const op = operator();
    const discard = await op.post(`${endpointPath(ep.id)}/discard-pending`);
    expect(discard.status, JSON.stringify(discard.body)).toBe(200);
    expect(discard.body).toMatchObject({ discarded: total, backlog: { kind: 'DISCARD', state: 'RUNNING' } });
    expect(await backlogWhenEnded(operator(), ep.id, 60_000)).toMatchObject({
      kind: 'DISCARD',
      state: 'DONE',
      total,
      done: total,
    });
    expect(await messageCounts(stack, ep.id)).toEqual({ 'DISCARDED@0': total });

    const deleted = await op.delete(endpointPath(ep.id));
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expectErrorShape(await op.get(endpointPath(ep.id)), 404, 'NOT_FOUND');
    await eventually(
      () => endpointRowExists(stack, ep.id),
      (exists) => !exists,
      60_000,
    );
    expect(await messageCounts(stack, ep.id)).toEqual({});
    expect(await counters()).toBe(0);
  });

  it('a batch that runs into the statement timeout is run again at half the size, in the request and in the jobs', {
    timeout: 90_000,
  }, async () => {
    if (!stack.dispatcher) stack.startDispatcher();
    const ep = await heldEndpoint(stack, BATCH);
    // Deleting one of its messages takes 1 ms here (a trigger of the test's own database), so a batch of 1,000
    // takes a second, five times the statement timeout: only batches of at most ~150 fit.
    await stack.ctx.db.execute(sql`
      create or replace function slow_message_delete() returns trigger language plpgsql as $$
      begin perform pg_sleep(0.001); return old; end $$`);
    await stack.ctx.db.execute(
      sql.raw(`
      create trigger slow_message_delete before delete on webhook_messages for each row
      when (old.endpoint_id = '${ep.id}') execute function slow_message_delete()`),
    );
    const deleted = await operator().delete(endpointPath(ep.id));
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(deleted.body).toEqual({ id: ep.id, deleted: true });
    await eventually(
      () => endpointRowExists(stack, ep.id),
      (exists) => !exists,
      60_000,
    );
    expect(await messageCounts(stack, ep.id)).toEqual({});
  });
});
