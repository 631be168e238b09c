import { webhookEndpoints, webhookMessages } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import { describe, expect, it, vi } from 'vitest';
import { client, operatorProgram, overHttp } from '../../../test/support/client';
import { TEST_RATE_LIMITS } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * A business's own webhooks on the public API: an ADMIN key manages its account's endpoints and messages with
 * the operator's operations under `/v1`; a MEMBER key is refused; another account's are not found.
 */
const stack = useTestStack({ http: true, worker: true, dispatcher: true });
const startReceiver = useReceivers();

const op = () => client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
const as = (key: string) => client(overHttp(stack.baseUrl!), key);

const until = <T>(fn: () => Promise<T>) =>
  vi.waitFor(
    async () => {
      const value = await fn();
      if (!value) throw new Error('not yet');
      return value as NonNullable<T>;
    },
    { timeout: 15_000, interval: 100 },
  );

describe('self-service webhooks (/v1, ADMIN keys)', () => {
  it('manages its endpoints, follows a failing delivery to its attempts, replays and recovers it', async () => {
    const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const api = as(p.key);
    let failing = true;
    const receiver = await startReceiver(() => (failing ? { status: 502, body: 'upstream down' } : {}));
    const made = await api.post(`/v1/campaign/${p.campaignId}/webhook-endpoints`, {
      url: receiver.url,
      eventTypes: ['LOYALTY_ACTION_APPLIED'],
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect(made.body.secret).toMatch(/^whsec_/);
    const ep = `/v1/webhook-endpoints/${made.body.id}`;
    expect((await api.get(`/v1/campaign/${p.campaignId}/webhook-endpoints`)).body.endpoints).toHaveLength(1);
    expect((await api.patch(ep, { description: 'CRM' })).body.description).toBe('CRM');

    // An action of one participant, and one of another: the filter by participant finds only the first's.
    const one = await api.post(`/v1/campaign/${p.campaignId}/loyalty-action`, {
      participantEmail: 'one@example.com',
      rewardId: p.rewardId,
    });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    await api.post(`/v1/campaign/${p.campaignId}/loyalty-action`, {
      participantEmail: 'two@example.com',
      rewardId: p.rewardId,
    });
    const failed = await until(async () => {
      const rows = await stack.ctx.db
        .select()
        .from(webhookMessages)
        .where(and(eq(webhookMessages.endpointId, made.body.id), eq(webhookMessages.status, 'FAILED')));
      return rows.length === 2 ? rows : undefined;
    });
    const participant = (await api.get(`/v1/campaign/${p.campaignId}/participant/one@example.com`)).body;
    const mine = await api.get(`${ep}/messages?participantId=${participant.id}`);
    expect(mine.status).toBe(200);
    expect(mine.body.messages).toHaveLength(1);
    const message = await api.get(`/v1/webhook-messages/${mine.body.messages[0].id}`);
    expect(message.body.attemptLog.at(-1)).toMatchObject({
      statusCode: 502,
      responseExcerpt: 'upstream down',
    });

    failing = false;
    const replayed = await api.post(`/v1/webhook-messages/${mine.body.messages[0].id}/replay`);
    expect(replayed.status).toBe(200);
    await until(
      async () =>
        receiver.received.filter((r) => r.headers['webhook-id'] === mine.body.messages[0].id).length > 4,
    );
    const recovered = await api.post(`${ep}/recover`, { since: Date.now() - 3_600_000 });
    expect(recovered.status).toBe(200);
    expect(recovered.body.replayed).toBe(1);
    await until(async () => {
      const rows = await stack.ctx.db
        .select()
        .from(webhookMessages)
        .where(eq(webhookMessages.endpointId, made.body.id));
      return rows.every((m) => m.status === 'SUCCEEDED') && failed.length === rows.length;
    });

    const types = await api.get('/v1/webhook-event-types');
    expect(types.status).toBe(200);
    expect(types.body.eventTypes.map((t: { type: string }) => t.type)).toContain(
      'PARTICIPANT_REACHED_A_GOAL',
    );
  });

  it("refuses a MEMBER key, and finds nothing of another account's on any operation", async () => {
    const mine = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const theirs = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const receiver = await startReceiver();
    const their = await op().post(`/admin/v1/campaigns/${theirs.campaignId}/webhook-endpoints`, {
      url: receiver.url,
      enabled: false,
    });
    const test = await op().post(`/admin/v1/webhook-endpoints/${their.body.id}/test`);
    const api = as(mine.key);
    const ep = `/v1/webhook-endpoints/${their.body.id}`;
    const msg = `/v1/webhook-messages/${test.body.messageId}`;
    const calls: [string, Promise<{ status: number; body: any }>][] = [
      ['get endpoint', api.get(ep)],
      ['patch endpoint', api.patch(ep, { enabled: true })],
      ['rotate', api.post(`${ep}/rotate-secret`, {})],
      ['revoke previous', api.delete(`${ep}/previous-secret`)],
      ['test', api.post(`${ep}/test`)],
      ['messages', api.get(`${ep}/messages`)],
      ['replay', api.post(`${ep}/replay`, {})],
      ['recover', api.post(`${ep}/recover`, { since: 0 })],
      ['discard', api.post(`${ep}/discard-pending`)],
      ['message', api.get(msg)],
      ['replay message', api.post(`${msg}/replay`)],
      ['delete', api.delete(ep)],
    ];
    for (const [name, call] of calls) {
      const res = await call;
      expect(res.status, name).toBe(404);
      expect(JSON.stringify(res.body), name).not.toContain(receiver.url);
    }
    // Their campaign, by its path: the public API's answer for another account's campaign.
    expect((await api.get(`/v1/campaign/${theirs.campaignId}/webhook-endpoints`)).status).toBe(403);
    const [row] = await stack.ctx.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.id, their.body.id));
    expect(row).toMatchObject({ enabled: false, deletedAt: null });

    const member = await op().post(`/admin/v1/accounts/${mine.accountId}/users`, {
      email: 'member@acme.test',
      role: 'MEMBER',
      campaignIds: [mine.campaignId],
    });
    const { key } = (await op().post(`/admin/v1/users/${member.body.id}/api-keys`)).body;
    for (const res of [
      await as(key).get(`/v1/campaign/${mine.campaignId}/webhook-endpoints`),
      await as(key).post(`/v1/campaign/${mine.campaignId}/webhook-endpoints`, { url: receiver.url }),
      await as(key).get('/v1/webhook-event-types'),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('NOT_AUTHORIZED');
    }
  });
});
