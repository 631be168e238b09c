import { webhookEndpoints, webhookMessages } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import { describe, expect, it, vi } from 'vitest';
import { client, operatorProgram, overHttp } from '../../../test/support/client';
import { consolePost, consoleSession } from '../../../test/support/console';
import { TEST_RATE_LIMITS } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * The console's Webhooks pages against the running service and a local receiver: endpoints made, changed,
 * disabled, enabled, rotated and tested from forms; the message log filtered and paged; a failing message's
 * attempts with the request's headers and the answer's first bytes; replay and recover; the event catalog.
 */
const stack = useTestStack({ http: true, dispatcher: true });
const startReceiver = useReceivers();

const op = () => client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
const page = async (path: string, cookie: string) => {
  const res = await fetch(`${stack.baseUrl}${path}`, { headers: { cookie } });
  return { status: res.status, html: await res.text() };
};
const post = (path: string, fields: Record<string, string>, cookie?: string) =>
  consolePost(stack.baseUrl!, path, fields, cookie);

/** A form post whose field repeats (checkboxes). */
const postMany = (path: string, fields: [string, string][], cookie: string) =>
  fetch(`${stack.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });

/** `fn`'s value once it is truthy (within 15 s). */
const waitFor = <T>(fn: () => Promise<T>) =>
  vi.waitFor(
    async () => {
      const value = await fn();
      if (!value) throw new Error('not yet');
      return value as NonNullable<T>;
    },
    { timeout: 15_000, interval: 100 },
  );

async function endpointOf(campaignId: string) {
  const [row] = await stack.ctx.db
    .select()
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.campaignId, campaignId));
  return row!;
}

describe('the console: Webhooks', () => {
  it('adds an endpoint from the form (its secret shown once), changes it, and sends a test event that arrives', async () => {
    const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const receiver = await startReceiver();
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const list = await page(`/console/webhooks?accountId=${p.accountId}`, cookie);
    expect(list.status).toBe(200);
    expect(list.html).toContain('No endpoint yet');
    const made = await postMany(
      '/console/webhooks/endpoints',
      [
        ['_csrf', csrf],
        ['accountId', p.accountId],
        ['campaignId', p.campaignId],
        ['url', receiver.url],
        ['kind', 'NOTIFY'],
        ['rateLimit', ''],
        ['description', 'Fulfilment'],
        ['eventTypes', 'LOYALTY_ACTION_APPLIED'],
        ['eventTypes', 'PARTICIPANT_REACHED_A_GOAL'],
      ],
      cookie,
    );
    expect(made.status).toBe(200);
    const html = await made.text();
    const secret = html.match(/<code id="secret">(whsec_[^<]+)<\/code>/)?.[1];
    expect(secret).toBeDefined();
    const row = await endpointOf(p.campaignId);
    expect(row.secret).toBe(secret);
    expect(row.eventTypes.sort()).toEqual(['LOYALTY_ACTION_APPLIED', 'PARTICIPANT_REACHED_A_GOAL']);
    // Never again: the endpoint's own page does not show it.
    const shown = await page(`/console/webhooks/endpoints/${row.id}`, cookie);
    expect(shown.status).toBe(200);
    expect(shown.html).not.toContain(secret!);
    expect(shown.html).toContain('Last 24 hours: 0 delivered, 0 failed');

    const saved = await postMany(
      `/console/webhooks/endpoints/${row.id}`,
      [
        ['_csrf', csrf],
        ['url', receiver.url],
        ['kind', 'NOTIFY'],
        ['rateLimit', '20'],
        ['description', 'Changed'],
      ],
      cookie,
    );
    expect(saved.status).toBe(303);
    expect(saved.headers.get('location')).toBe(`/console/webhooks/endpoints/${row.id}?done=saved`);
    expect(await endpointOf(p.campaignId)).toMatchObject({
      rateLimit: 20,
      description: 'Changed',
      eventTypes: [],
    });

    expect((await post(`/console/webhooks/endpoints/${row.id}/test`, { _csrf: csrf }, cookie)).status).toBe(
      303,
    );
    await receiver.waitFor(1);
    expect(receiver.received[0]!.json).toMatchObject({ type: 'WEBHOOK_TEST', data: { endpointId: row.id } });
  });

  it('disables and enables, rotates the secret (shown once) and stops the previous one', async () => {
    const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const receiver = await startReceiver();
    await op().post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, { url: receiver.url });
    const { id, secret } = await endpointOf(p.campaignId);
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const base = `/console/webhooks/endpoints/${id}`;
    expect((await post(`${base}/disable`, { _csrf: csrf }, cookie)).headers.get('location')).toBe(
      `${base}?done=disabled`,
    );
    expect(await endpointOf(p.campaignId)).toMatchObject({ enabled: false, disabledReason: 'OPERATOR' });
    expect((await page(base, cookie)).html).toContain('Disabled (by hand');
    expect((await post(`${base}/enable`, { _csrf: csrf }, cookie)).status).toBe(303);
    expect((await endpointOf(p.campaignId)).enabled).toBe(true);

    const rotated = await post(`${base}/rotate`, { _csrf: csrf }, cookie);
    expect(rotated.status).toBe(200);
    const fresh = (await rotated.text()).match(/<code id="secret">(whsec_[^<]+)<\/code>/)?.[1];
    const after = await endpointOf(p.campaignId);
    expect(after.secret).toBe(fresh);
    expect(after.previousSecret).toBe(secret);
    expect((await post(`${base}/revoke-previous`, { _csrf: csrf }, cookie)).status).toBe(303);
    expect((await endpointOf(p.campaignId)).previousSecret).toBeNull();
  });

  it("shows a failing message's attempts with the request's headers and the answer's first bytes; replay and recover deliver it again", async () => {
    const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    let failing = true;
    const receiver = await startReceiver(() =>
      failing ? { status: 503, body: 'maintenance window: back at noon' } : { status: 200 },
    );
    await op().post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, { url: receiver.url });
    const endpoint = await endpointOf(p.campaignId);
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const base = `/console/webhooks/endpoints/${endpoint.id}`;
    await post(`${base}/test`, { _csrf: csrf }, cookie);
    const failed = await waitFor(async () => {
      const [m] = await stack.ctx.db
        .select()
        .from(webhookMessages)
        .where(and(eq(webhookMessages.endpointId, endpoint.id), eq(webhookMessages.status, 'FAILED')));
      return m;
    });

    const log = await page(`${base}?status=FAILED`, cookie);
    expect(log.html).toContain(`/console/webhooks/messages/${failed.id}`);
    expect((await page(`${base}?status=SUCCEEDED`, cookie)).html).toContain('No message matches');
    expect((await page(`${base}?eventType=LOYALTY_ACTION_APPLIED`, cookie)).html).toContain(
      'No message matches',
    );

    const message = await page(`/console/webhooks/messages/${failed.id}`, cookie);
    expect(message.status).toBe(200);
    expect(message.html).toContain('HTTP 503');
    expect(message.html).toContain('maintenance window: back at noon');
    expect(message.html).toContain(`<dt>webhook-id</dt><dd>${failed.id}</dd>`);
    expect(message.html).toContain('v1,… (withheld)');
    expect(message.html).not.toContain(endpoint.secret);
    expect(message.html).toContain('&quot;WEBHOOK_TEST&quot;');

    failing = false;
    const replayed = await post(`/console/webhooks/messages/${failed.id}/replay`, { _csrf: csrf }, cookie);
    expect(replayed.headers.get('location')).toBe(
      `/console/webhooks/messages/${failed.id}?done=replayed-one`,
    );
    await waitFor(async () =>
      receiver.received.some((r, i) => i > 0 && r.headers['webhook-id'] === failed.id),
    );
    await waitFor(async () => {
      const [m] = await stack.ctx.db.select().from(webhookMessages).where(eq(webhookMessages.id, failed.id));
      return m!.status === 'SUCCEEDED';
    });

    // Recover: a second failure, then every failed message made since a time delivered again.
    failing = true;
    await post(`${base}/test`, { _csrf: csrf }, cookie);
    const second = await waitFor(async () => {
      const [m] = await stack.ctx.db
        .select()
        .from(webhookMessages)
        .where(and(eq(webhookMessages.endpointId, endpoint.id), eq(webhookMessages.status, 'FAILED')));
      return m;
    });
    failing = false;
    const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
    const recovered = await post(`${base}/recover`, { _csrf: csrf, since }, cookie);
    expect(recovered.headers.get('location')).toBe(`${base}?done=recovered&n=1`);
    await waitFor(async () => {
      const [m] = await stack.ctx.db.select().from(webhookMessages).where(eq(webhookMessages.id, second.id));
      return m!.status === 'SUCCEEDED';
    });
  });

  it("pages an account's endpoints, 50 at a time", async () => {
    const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    for (let i = 0; i < 51; i++) {
      const res = await op().post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, {
        url: `http://127.0.0.1:9/hook-${String(i).padStart(2, '0')}`,
        enabled: false,
      });
      expect(res.status).toBe(200);
    }
    const { cookie } = await consoleSession(stack.baseUrl!);
    const first = await page(`/console/webhooks?accountId=${p.accountId}`, cookie);
    expect(first.html.match(/>http:\/\/127\.0\.0\.1:9\/hook-\d\d</g)).toHaveLength(50);
    const next = first.html
      .match(/href="(\/console\/webhooks\?[^"]*after=[^"]+)"/)![1]!
      .replaceAll('&amp;', '&');
    const second = await page(next, cookie);
    expect(second.html.match(/>http:\/\/127\.0\.0\.1:9\/hook-\d\d</g)).toEqual([
      '>http://127.0.0.1:9/hook-50<',
    ]);
    expect(second.html).not.toContain('Next endpoints');
  });

  it('lists every event type with an example body', async () => {
    const { cookie } = await consoleSession(stack.baseUrl!);
    const catalog = await page('/console/webhooks/event-types', cookie);
    expect(catalog.status).toBe(200);
    for (const type of ['NEW_PARTICIPANT_ADDED', 'PARTICIPANT_REACHED_A_GOAL', 'WEBHOOK_ENDPOINT_DISABLED']) {
      expect(catalog.html).toContain(`id="type-${type}"`);
    }
  });

  it('refuses bad input on the page and a missing CSRF token; nothing changes', async () => {
    const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const receiver = await startReceiver();
    await op().post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, { url: receiver.url });
    const before = await endpointOf(p.campaignId);
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const base = `/console/webhooks/endpoints/${before.id}`;

    const badUrl = await post(base, { _csrf: csrf, url: 'ftp://example.com', kind: 'NOTIFY' }, cookie);
    expect(badUrl.status).toBe(400);
    expect(await badUrl.text()).toContain('role="alert"');
    const badType = await postMany(
      base,
      [
        ['_csrf', csrf],
        ['url', receiver.url],
        ['eventTypes', '__proto__'],
      ],
      cookie,
    );
    expect(badType.status).toBe(400);
    const badRate = await post(base, { _csrf: csrf, url: receiver.url, rateLimit: '0' }, cookie);
    expect(badRate.status).toBe(400);
    const nul = await post(base, { _csrf: csrf, url: receiver.url, description: 'a\u0000b' }, cookie);
    expect(nul.status).toBe(400);
    const badFilter = await page(`${base}?since=yesterday`, cookie);
    expect(badFilter.status).toBe(400);
    const noCsrf = await post(`${base}/disable`, {}, cookie);
    expect(noCsrf.status).toBe(403);
    const unknown = await post('/console/webhooks/endpoints/nope/disable', { _csrf: csrf }, cookie);
    expect(unknown.status).toBe(404);
    const after = await endpointOf(p.campaignId);
    expect(after).toEqual(before);
  });
});
