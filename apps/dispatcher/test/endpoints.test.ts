import { events, webhookEndpoints } from '@stampcard/db';
import { eq, sql } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { client, eventually, expectErrorShape, inProcess } from '../../../test/support/client';
import { useReceivers } from '../../../test/support/receiver';
import { refusals } from '../../../test/support/refused';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

const stack = useTestStack({
  dispatcher: true,
  sweep: true,
  retrySchedule: '50,100,200',
  webhookTimeoutMs: 1000,
});
const expectRefused = refusals(stack);

const receiver = useReceivers();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const GOAL = ['PARTICIPANT_REACHED_A_GOAL'];

describe('endpoints on the operator API', () => {
  it('shows the secret once: never in get or list', async () => {
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: 'https://hooks.example.com/stampcard',
      description: 'CRM',
      rateLimit: 5,
    });
    expect(ep).toMatchObject({
      id: expect.stringMatching(/^ep_/),
      kind: 'NOTIFY',
      enabled: true,
      eventTypes: [],
      rateLimit: 5,
      description: 'CRM',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
    });
    const op = operator(stack);
    const got = await op.get(`/admin/v1/webhook-endpoints/${ep.id}`);
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty('secret');
    expect(JSON.stringify(got.body)).not.toContain(ep.secret.slice(6));
    const list = await op.get(`/admin/v1/campaigns/${w.campaign.id}/webhook-endpoints`);
    expect(list.body.endpoints.map((e: any) => e.id)).toEqual([ep.id]);
    expect(JSON.stringify(list.body)).not.toContain(ep.secret.slice(6));
    const fulfilment = await registerEndpoint(stack, w.campaign.id, {
      url: 'https://f.example.com/',
      kind: 'FULFILMENT',
    });
    expect(fulfilment.eventTypes).toEqual(GOAL);
  });

  it('refuses bad endpoints with the documented body and writes nothing', async () => {
    const w = await goalWorld(stack);
    const op = operator(stack);
    const path = `/admin/v1/campaigns/${w.campaign.id}/webhook-endpoints`;
    for (const url of ['ftp://example.com/x', 'file:///etc/passwd', 'javascript:alert(1)', 'not a url', '']) {
      const body = await expectRefused(() => op.post(path, { url }), 400, 'VALIDATION_ERROR');
      expect(body.errors[0].param).toBe('url');
    }
    await expectRefused(
      () => op.post(path, { url: 'https://x.example.com', eventTypes: ['NOPE'] }),
      400,
      'VALIDATION_ERROR',
    );
    await expectRefused(
      () => op.post(path, { url: 'https://x.example.com', rateLimit: 0 }),
      400,
      'VALIDATION_ERROR',
    );
    await expectRefused(
      () => op.post(path, { url: 'https://x.example.com', kind: 'BOTH' }),
      400,
      'VALIDATION_ERROR',
    );
    await expectRefused(
      () => op.post(path, { url: 'https://x.example.com', secret: 'whsec_mine' }),
      400,
      'VALIDATION_ERROR',
    );
    await expectRefused(
      () => op.post('/admin/v1/campaigns/nope/webhook-endpoints', { url: 'https://x.example.com' }),
      404,
      'NOT_FOUND',
    );
    await expectRefused(
      () => op.patch('/admin/v1/webhook-endpoints/ep_missing', { enabled: true }),
      404,
      'NOT_FOUND',
    );
    const ep = await registerEndpoint(stack, w.campaign.id, { url: 'https://x.example.com' });
    await expectRefused(() => op.patch(`/admin/v1/webhook-endpoints/${ep.id}`, {}), 400, 'VALIDATION_ERROR');
    await expectRefused(
      () => op.patch(`/admin/v1/webhook-endpoints/${ep.id}`, { url: 'gopher://x' }),
      400,
      'VALIDATION_ERROR',
    );
    await expectRefused(
      () => op.get(`/admin/v1/webhook-endpoints/${ep.id}/messages?limit=101`),
      400,
      'VALIDATION_ERROR',
    );
    await expectRefused(
      () => op.post(`/admin/v1/webhook-endpoints/${ep.id}/rotate-secret`, { overlapMs: -1 }),
      400,
      'VALIDATION_ERROR',
    );
    await expectRefused(() => op.get('/admin/v1/webhook-messages/msg_missing'), 404, 'NOT_FOUND');
    await expectRefused(() => op.post('/admin/v1/webhook-messages/msg_missing/replay'), 404, 'NOT_FOUND');
    const anonymous = client(inProcess(stack.app));
    expectErrorShape(await anonymous.get(`/admin/v1/webhook-endpoints/${ep.id}`), 403, 'NOT_AUTHORIZED');
  });

  it('patch changes settings; delete removes the endpoint and its messages', async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: 'https://x.example.com',
      eventTypes: GOAL,
    });
    const op = operator(stack);
    const patched = await op.patch(`/admin/v1/webhook-endpoints/${ep.id}`, {
      url: rx.url,
      rateLimit: null,
      description: 'new',
    });
    expect(patched.body).toMatchObject({ url: rx.url, rateLimit: null, description: 'new', released: 0 });
    await w.act();
    await rx.waitFor(1);
    expect((await op.delete(`/admin/v1/webhook-endpoints/${ep.id}`)).body).toEqual({
      id: ep.id,
      deleted: true,
    });
    expectErrorShape(await op.get(`/admin/v1/webhook-endpoints/${ep.id}/messages`), 404, 'NOT_FOUND');
    const left = await stack.ctx.db.execute(
      sql`select count(*)::int as n from webhook_messages where endpoint_id = ${ep.id}`,
    );
    expect(left[0]!.n).toBe(0);
  });

  it('rotation: old and new secrets both sign during the overlap; revoking the old one leaves only the new', async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, eventTypes: GOAL });
    const op = operator(stack);
    const rotated = await op.post(`/admin/v1/webhook-endpoints/${ep.id}/rotate-secret`, {});
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(ep.secret);
    expect(rotated.body.previousSecretExpiresAt).toBeGreaterThan(Date.now() + 23 * 3600 * 1000);
    await w.act();
    const [first] = await rx.waitFor(1);
    expect(String(first!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [ep.secret, rotated.body.secret])
      expect(new Webhook(secret).verify(first!.body, first!.headers as Record<string, string>)).toEqual(
        first!.json,
      );

    const revoked = await op.delete(`/admin/v1/webhook-endpoints/${ep.id}/previous-secret`);
    expect(revoked.body.previousSecretExpiresAt).toBeNull();
    await w.act();
    const second = (await rx.waitFor(2))[1]!;
    expect(String(second.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(
      new Webhook(rotated.body.secret).verify(second.body, second.headers as Record<string, string>),
    ).toEqual(second.json);
    expect(() =>
      new Webhook(ep.secret).verify(second.body, second.headers as Record<string, string>),
    ).toThrow();

    const noOverlap = await op.post(`/admin/v1/webhook-endpoints/${ep.id}/rotate-secret`, { overlapMs: 0 });
    expect(noOverlap.body.previousSecretExpiresAt).toBeNull();
  });

  it('sends a signed test message to one endpoint only, recorded like any other', async () => {
    const rx = await receiver();
    const other = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    await registerEndpoint(stack, w.campaign.id, { url: other.url });
    const sent = await operator(stack).post(`/admin/v1/webhook-endpoints/${ep.id}/test`);
    expect(sent.body).toMatchObject({ messageId: expect.stringMatching(/^msg_/), endpointEnabled: true });
    const [got] = await rx.waitFor(1);
    expect(got!.json).toMatchObject({ type: 'WEBHOOK_TEST', data: { test: true, endpointId: ep.id } });
    expect(new Webhook(ep.secret).verify(got!.body, got!.headers as Record<string, string>)).toEqual(
      got!.json,
    );
    const m = await eventually(
      () => operator(stack).get(`/admin/v1/webhook-messages/${sent.body.messageId}`),
      (r) => r.body.status === 'SUCCEEDED',
    );
    expect(m.body).toMatchObject({
      eventType: 'WEBHOOK_TEST',
      eventId: null,
      attemptLog: [{ statusCode: 200 }],
    });
    await sleep(300);
    expect(other.received).toHaveLength(0);
  });
});

describe('disabled endpoints keep their messages', () => {
  it('an endpoint the operator disables keeps every event meanwhile and delivers them, in order, once enabled', async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: GOAL,
      enabled: false,
    });
    expect(ep).toMatchObject({ enabled: false, disabledReason: 'OPERATOR' });
    for (let i = 0; i < 3; i++) await w.act();
    await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.length === 3 && ms.every((m) => m.status === 'PENDING'),
    );
    await sleep(300);
    expect(rx.received).toHaveLength(0);
    const enabled = await operator(stack).patch(`/admin/v1/webhook-endpoints/${ep.id}`, { enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, released: 3 });
    const got = await rx.waitFor(3);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(3);
    await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.every((m) => m.status === 'SUCCEEDED'),
    );
  });

  it('or the operator discards them explicitly', async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: GOAL,
      enabled: false,
    });
    await w.act();
    await w.act();
    await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.length === 2,
    );
    const op = operator(stack);
    // Two messages take one batch: discarded before the answer.
    expect((await op.post(`/admin/v1/webhook-endpoints/${ep.id}/discard-pending`)).body).toEqual({
      discarded: 2,
      backlog: {
        kind: 'DISCARD',
        state: 'DONE',
        total: 2,
        done: 2,
        startedAt: expect.any(Number),
        finishedAt: expect.any(Number),
      },
    });
    expect((await op.patch(`/admin/v1/webhook-endpoints/${ep.id}`, { enabled: true })).body.released).toBe(0);
    const discarded = await messagesOf(stack, ep.id, '?status=DISCARDED');
    expect(discarded).toHaveLength(2);
    await sleep(300);
    expect(rx.received).toHaveLength(0);
  });

  it('410 Gone disables the endpoint, says why in an event naming its host only, and keeps what comes next', async () => {
    let gone = true;
    const rx = await receiver(() => (gone ? { status: 410 } : {}));
    const watcher = await receiver();
    const w = await goalWorld(stack);
    // Credentials in the URL, as receivers often take them: the event tells the other subscribers none of them.
    const url = `http://hook-user:pass-SECRET1@127.0.0.1:${rx.port}/hooks/SECRET2?token=SECRET3`;
    const ep = await registerEndpoint(stack, w.campaign.id, { url, eventTypes: GOAL });
    await registerEndpoint(stack, w.campaign.id, {
      url: watcher.url,
      eventTypes: ['WEBHOOK_ENDPOINT_DISABLED'],
    });
    await w.act();
    const disabled = await eventually(
      () => operator(stack).get(`/admin/v1/webhook-endpoints/${ep.id}`),
      (r) => r.body.enabled === false,
    );
    expect(disabled.body).toMatchObject({ disabledReason: 'GONE', disabledAt: expect.any(Number) });
    const [notice] = await watcher.waitFor(1);
    expect(notice!.json).toMatchObject({
      type: 'WEBHOOK_ENDPOINT_DISABLED',
      data: { reason: 'GONE', failingSince: null },
    });
    expect(notice!.json.data.endpoint).toEqual({ id: ep.id, host: `127.0.0.1:${rx.port}` });
    expect(notice!.body).not.toMatch(/SECRET|hook-user|\/hooks/);
    await w.act();
    await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.length === 2 && ms.every((m) => m.status === 'PENDING'),
    );
    await sleep(300);
    expect(rx.received).toHaveLength(1);
    gone = false;
    await operator(stack).patch(`/admin/v1/webhook-endpoints/${ep.id}`, { enabled: true });
    await rx.waitFor(3);
    await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.every((m) => m.status === 'SUCCEEDED'),
    );
  });

  it('an endpoint failing for WEBHOOK_DISABLE_AFTER_MS (5 days) is disabled by its next failure', async () => {
    const rx = await receiver(() => ({ status: 500 }));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, eventTypes: GOAL });
    const since = new Date(Date.now() - 5 * 24 * 3600 * 1000 - 60_000);
    await stack.ctx.db
      .update(webhookEndpoints)
      .set({ failingSince: since })
      .where(eq(webhookEndpoints.id, ep.id));
    await w.act();
    const disabled = await eventually(
      () => operator(stack).get(`/admin/v1/webhook-endpoints/${ep.id}`),
      (r) => r.body.enabled === false,
    );
    expect(disabled.body).toMatchObject({ disabledReason: 'FAILING', failingSince: since.getTime() });
    const notices = await stack.ctx.db
      .select()
      .from(events)
      .where(eq(events.type, 'WEBHOOK_ENDPOINT_DISABLED'));
    expect(
      notices.filter((e) => (e.data as any).endpoint.id === ep.id).map((e) => (e.data as any).reason),
    ).toEqual(['FAILING']);
    const [m] = await messagesOf(stack, ep.id);
    expect(m.status).toBe('PENDING');
    expect(rx.received).toHaveLength(1);
  });
});

describe('visibility and replay', () => {
  it('lists messages by status, event type and time, paged; replay by filter delivers each failed one once', async () => {
    let healthy = false;
    const rx = await receiver(() => (healthy ? {} : { status: 500 }));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    const start = Date.now();
    await w.act();
    await w.act();
    // Per action: NEW_PARTICIPANT_ADDED, LOYALTY_ACTION_APPLIED, PARTICIPANT_REACHED_A_GOAL.
    const all = await eventually(
      () => messagesOf(stack, ep.id, '?limit=100'),
      (ms) => ms.length === 6 && ms.every((m) => m.status === 'FAILED'),
    );
    expect(all.every((m) => m.attemptLog.length === 4)).toBe(true);
    const times = all.map((m) => m.createdAt);
    expect(times).toEqual([...times].sort((a, b) => b - a));

    const goals = await messagesOf(stack, ep.id, '?eventType=PARTICIPANT_REACHED_A_GOAL');
    expect(goals).toHaveLength(2);
    expect(await messagesOf(stack, ep.id, '?status=SUCCEEDED')).toHaveLength(0);
    expect(await messagesOf(stack, ep.id, `?until=${start}`)).toHaveLength(0);
    expect(await messagesOf(stack, ep.id, `?since=${start}`)).toHaveLength(6);
    const op = operator(stack);
    const page1 = await op.get(`/admin/v1/webhook-endpoints/${ep.id}/messages?limit=4`);
    expect(page1.body).toMatchObject({ more: true, nextAfter: page1.body.messages[3].id });
    const page2 = await op.get(
      `/admin/v1/webhook-endpoints/${ep.id}/messages?limit=4&after=${page1.body.nextAfter}`,
    );
    expect(page2.body.more).toBe(false);
    expect([...page1.body.messages, ...page2.body.messages].map((m: any) => m.id)).toEqual(
      all.map((m) => m.id),
    );

    healthy = true;
    const path = `/admin/v1/webhook-endpoints/${ep.id}/replay`;
    const goalsOnly = await op.post(path, {
      status: 'FAILED',
      eventType: 'PARTICIPANT_REACHED_A_GOAL',
      since: start,
    });
    expect(goalsOnly.body).toEqual({ replayed: 2, more: false, endpointEnabled: true });
    const rest = await op.post(path, { since: start });
    expect(rest.body.replayed).toBe(4);
    // Replaying again while they are pending, or once delivered, makes nothing new.
    expect((await op.post(path, { since: start })).body.replayed).toBe(0);
    await eventually(
      () => messagesOf(stack, ep.id, '?limit=100'),
      (ms) => ms.every((m) => m.status === 'SUCCEEDED'),
    );
    expect((await op.post(path, {})).body.replayed).toBe(0);
    await sleep(300);
    const delivered = rx.received.slice(24);
    expect(delivered).toHaveLength(6);
    expect(new Set(delivered.map((r) => r.headers['webhook-id']))).toEqual(new Set(all.map((m) => m.id)));
  });
});
