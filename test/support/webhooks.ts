import { webhookEndpoints, webhookMessages } from '@stampcard/db';
import { count, eq, sql } from 'drizzle-orm';
import { expect } from 'vitest';
import { client, eventually, inProcess, overHttp } from './client';
import { makeWorld, uniqueEmail } from './factories';
import { OPERATOR_TOKEN, type TestStack } from './stack';

/** The operator API of a test stack, in process. */
export const operator = (stack: TestStack) => client(inProcess(stack.app), OPERATOR_TOKEN);

/** Registers an endpoint through the operator API; answers it with its secret. */
export async function registerEndpoint(stack: TestStack, campaignId: string, body: Record<string, unknown>) {
  const res = await operator(stack).post(`/admin/v1/campaigns/${campaignId}/webhook-endpoints`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { id: string; secret: string; [k: string]: unknown };
}

/**
 * A `goalWorld` whose goals (`PARTICIPANT_REACHED_A_GOAL`) are sent to the receiver at `url`, with a client of
 * its API key over the stack's HTTP port (a stack started with `http: true`) and its loyalty-action path.
 */
export async function goalWorldOverHttp(stack: TestStack, url: string) {
  const w = await goalWorld(stack);
  await registerEndpoint(stack, w.campaign.id, { url, eventTypes: ['PARTICIPANT_REACHED_A_GOAL'] });
  return {
    ...w,
    api: client(overHttp(stack.baseUrl!), w.key),
    path: `/v1/campaign/${w.campaign.id}/loyalty-action`,
  };
}

/** A world whose reward unlocks at the first action, and a function that performs one and waits for it. */
export async function goalWorld(stack: TestStack, opts: Parameters<typeof makeWorld>[1] = {}) {
  const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1, isUnlimited: true }, ...opts });
  const api = client(inProcess(stack.app), w.key);
  const act = async (email = uniqueEmail()) => {
    const res = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
      participantEmail: email,
      rewardId: w.reward.id,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.action.status).toBe('APPLIED');
    return res.body as {
      action: { id: string; unlockedRewards: { id: string }[] };
      participant: { id: string };
    };
  };
  return { ...w, api, act };
}

/** The messages of an endpoint as the operator API lists them. */
export async function messagesOf(stack: TestStack, endpointId: string, query = '') {
  const res = await operator(stack).get(`/admin/v1/webhook-endpoints/${endpointId}/messages${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.messages as any[];
}

/**
 * A disabled endpoint holding `n` pending messages (`WEBHOOK_TEST` bodies, ids `msg_<endpointId>_<n>`), seeded
 * by one INSERT … SELECT generate_series, all made at the same instant an hour ago.
 */
export async function heldEndpoint(stack: TestStack, n: number, url = 'https://hooks.example.com/held') {
  const w = await makeWorld(stack.ctx);
  const ep = await registerEndpoint(stack, w.campaign.id, { url, enabled: false });
  await stack.ctx.db.transaction(async (tx) => {
    await tx.execute(sql`set local statement_timeout = 0`);
    await tx.execute(sql`
      insert into ${webhookMessages} (id, endpoint_id, campaign_id, event_type, test_body, status, next_attempt_at,
        created_at, updated_at)
      select 'msg_' || ${ep.id} || '_' || g, ${ep.id}, ${w.campaign.id}, 'WEBHOOK_TEST',
        jsonb_build_object('type', 'WEBHOOK_TEST', 'timestamp', 0, 'data', jsonb_build_object('n', g)), 'PENDING',
        now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
      from generate_series(1, ${n}) g`);
  });
  // Messages held for hours have long been vacuumed (visible to all), as counting them expects.
  await stack.ctx.db.execute(sql`vacuum (analyze) ${webhookMessages}`);
  return { ...ep, campaignId: w.campaign.id };
}

/** An endpoint's messages counted by `<status>@<generation>`, read from the database. */
export async function messageCounts(stack: TestStack, endpointId: string): Promise<Record<string, number>> {
  const rows = await stack.ctx.db
    .select({ status: webhookMessages.status, generation: webhookMessages.generation, n: count() })
    .from(webhookMessages)
    .where(eq(webhookMessages.endpointId, endpointId))
    .groupBy(webhookMessages.status, webhookMessages.generation);
  return Object.fromEntries(rows.map((r) => [`${r.status}@${r.generation}`, r.n]));
}

/** Whether the endpoint's row is still in the database (a deleted one stays until its messages are gone). */
export async function endpointRowExists(stack: TestStack, endpointId: string): Promise<boolean> {
  const rows = await stack.ctx.db
    .select({ id: webhookEndpoints.id })
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.id, endpointId));
  return rows.length > 0;
}

/**
 * The endpoint's `backlog` as `GET` shows it, once it is no longer RUNNING (bounded wait). A 503 on the way is
 * asked again: a test that runs its stack under a short statement timeout (200 ms) gets one now and then on a
 * busy machine, which is the answer the service promises then, not the end of the wait.
 */
export async function backlogWhenEnded(
  api: ReturnType<typeof client>,
  endpointId: string,
  timeoutMs = 30_000,
) {
  const res = await eventually(
    () => api.get(`/admin/v1/webhook-endpoints/${endpointId}`),
    (r) =>
      (r.status !== 200 && r.status !== 503) || (r.status === 200 && r.body.backlog?.state !== 'RUNNING'),
    timeoutMs,
  );
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.backlog;
}
