import { EVENT_TYPES, TEST_EVENT_TYPE } from '@stampcard/core';
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

/** The ids a page links to under `…/<kind>/<id>`, in the page's order. */
const linkedIds = (html: string, kind: 'endpoints' | 'messages') =>
  [...html.matchAll(new RegExp(`href="[^"]*/webhooks/${kind}/([a-z]+_[A-Za-z0-9]+)"`, 'g'))].map(
    (m) => m[1]!,
  );

/** The page's link named `label` (its href, entities decoded), or undefined. */
const linkNamed = (html: string, label: string) =>
  html.match(new RegExp(`<a href="([^"]+)">${label}</a>`))?.[1]?.replaceAll('&amp;', '&');

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

    // Deleting asks for its box to be ticked; then the endpoint is gone, back to its account's list.
    const unticked = await post(`${base}/delete`, { _csrf: csrf }, cookie);
    expect(unticked.status).toBe(400);
    expect(await unticked.text()).toContain('Not deleted: tick');
    expect((await endpointOf(p.campaignId)).deletedAt).toBeNull();
    const deleted = await post(`${base}/delete`, { _csrf: csrf, confirm: 'yes' }, cookie);
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe(`/console/webhooks?accountId=${p.accountId}&done=deleted`);
    // Marked deleted at once, its row and messages removed in the background.
    const gone = await endpointOf(p.campaignId);
    expect(gone === undefined || gone.deletedAt !== null).toBe(true);
    const listed = await page(deleted.headers.get('location')!, cookie);
    expect(listed.html).toContain('Deleted, with its messages.');
    expect(listed.html).toContain('No endpoint yet');
    expect((await page(base, cookie)).status).toBe(404);
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

    // Replay by the log's filter: the failed test messages, one here; pending ones cannot be replayed.
    failing = true;
    await post(`${base}/test`, { _csrf: csrf }, cookie);
    const third = await waitFor(async () => {
      const [m] = await stack.ctx.db
        .select()
        .from(webhookMessages)
        .where(and(eq(webhookMessages.endpointId, endpoint.id), eq(webhookMessages.status, 'FAILED')));
      return m;
    });
    const failedLog = await page(`${base}?status=FAILED&eventType=WEBHOOK_TEST`, cookie);
    expect(failedLog.html).toContain('Replay the failed messages this filter matches');
    const refusedReplay = await post(`${base}/replay`, { _csrf: csrf, status: 'PENDING' }, cookie);
    expect(refusedReplay.status).toBe(400);
    expect(await refusedReplay.text()).toContain('Pending messages are on their way already.');
    failing = false;
    const byFilter = await post(
      `${base}/replay`,
      { _csrf: csrf, status: 'FAILED', eventType: 'WEBHOOK_TEST' },
      cookie,
    );
    expect(byFilter.headers.get('location')).toBe(`${base}?done=replayed&n=1`);
    expect((await page(byFilter.headers.get('location')!, cookie)).html).toContain(
      '1 messages will be delivered again.',
    );
    await waitFor(async () => {
      const [m] = await stack.ctx.db.select().from(webhookMessages).where(eq(webhookMessages.id, third.id));
      return m!.status === 'SUCCEEDED';
    });
  });

  it('lists every event type with an example body', async () => {
    const { cookie } = await consoleSession(stack.baseUrl!);
    const catalog = await page('/console/webhooks/event-types', cookie);
    expect(catalog.status).toBe(200);
    for (const type of [...EVENT_TYPES, TEST_EVENT_TYPE]) {
      expect(catalog.html).toContain(`<h2 id="type-${type}">${type}</h2>`);
      expect(catalog.html).toContain(`&quot;type&quot;: &quot;${type}&quot;`);
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
    const noSince = await post(`${base}/recover`, { _csrf: csrf }, cookie);
    expect(noSince.status).toBe(400);
    const after = await endpointOf(p.campaignId);
    expect(after).toEqual(before);

    // A refused new endpoint: the form comes back as typed, with the reason; nothing is made.
    const typed = await postMany(
      '/console/webhooks/endpoints',
      [
        ['_csrf', csrf],
        ['accountId', p.accountId],
        ['campaignId', p.campaignId],
        ['url', 'ftp://typed.example/hook'],
        ['kind', 'NOTIFY'],
        ['description', 'Kept as typed'],
        ['eventTypes', 'CAMPAIGN_ENDED'],
      ],
      cookie,
    );
    expect(typed.status).toBe(400);
    const again = await typed.text();
    expect(again).toContain('role="alert"');
    expect(again).toContain('value="ftp://typed.example/hook"');
    expect(again).toContain('value="Kept as typed"');
    expect(again).toMatch(/value="CAMPAIGN_ENDED" checked=""/);
    const noCsrfCreate = await post(
      '/console/webhooks/endpoints',
      { accountId: p.accountId, campaignId: p.campaignId, url: receiver.url },
      cookie,
    );
    expect(noCsrfCreate.status).toBe(403);
    const rows = await stack.ctx.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.campaignId, p.campaignId));
    expect(rows).toHaveLength(1);
  });
  it("lists an account's endpoints 25 a page, every campaign's or one's, each with its pending messages", async () => {
    const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const receiver = await startReceiver();
    const second = await op().post(`/admin/v1/accounts/${p.accountId}/campaigns`, {
      name: 'Tea',
      status: 'IN_PROGRESS',
    });
    expect(second.status).toBe(200);
    const made: string[] = [];
    for (let i = 0; i < 26; i++) {
      const res = await op().post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, {
        url: `${receiver.url}/${i}`,
      });
      made.push(res.body.id);
    }
    const tea = await op().post(`/admin/v1/campaigns/${second.body.id}/webhook-endpoints`, {
      url: `${receiver.url}/tea`,
      enabled: false,
    });
    // Held while disabled: two pending messages.
    for (let i = 0; i < 2; i++) await op().post(`/admin/v1/webhook-endpoints/${tea.body.id}/test`);
    const { cookie } = await consoleSession(stack.baseUrl!);

    const first = await page(`/console/webhooks?accountId=${p.accountId}`, cookie);
    expect(first.status).toBe(200);
    const firstIds = linkedIds(first.html, 'endpoints');
    expect(firstIds).toEqual(made.slice(0, 25));
    const next = linkNamed(first.html, 'Next endpoints');
    expect(next).toBe(`/console/webhooks?accountId=${p.accountId}&after=${made[24]}`);
    const rest = await page(next!, cookie);
    expect(linkedIds(rest.html, 'endpoints')).toEqual([made[25], tea.body.id]);
    expect(linkNamed(rest.html, 'Next endpoints')).toBeUndefined();
    expect(rest.html).toMatch(
      /Disabled \(by hand, [0-9-]+ [0-9:]+ UTC\)<\/td><td[^>]*>–<\/td><td class="n">2<\/td>/,
    );

    const teaOnly = await page(
      `/console/webhooks?accountId=${p.accountId}&campaignId=${second.body.id}`,
      cookie,
    );
    expect(linkedIds(teaOnly.html, 'endpoints')).toEqual([tea.body.id]);
    expect(teaOnly.html).toContain(`<option value="${second.body.id}" selected="">Tea</option>`);
    expect((await page(`/console/webhooks/endpoints/${tea.body.id}`, cookie)).html).toMatch(
      /<dt>Pending<\/dt><dd>2<\/dd>/,
    );
    // A cursor that is no endpoint of the account: the account picker says so, with a 404.
    const lost = await page(`/console/webhooks?accountId=${p.accountId}&after=ep_nothere`, cookie);
    expect(lost.status).toBe(404);
    expect(lost.html).toContain('role="alert"');
  });

  it("filters an endpoint's message log by status, event type, participant and time, and pages it", async () => {
    const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const receiver = await startReceiver();
    const made = await op().post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, {
      url: receiver.url,
      eventTypes: ['NEW_PARTICIPANT_ADDED'],
    });
    const id = made.body.id as string;
    const api = client(overHttp(stack.baseUrl!), p.key);
    for (const email of ['ann@example.com', 'bob@example.com']) {
      const res = await api.post(`/v1/campaign/${p.campaignId}/participant`, { email });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    await receiver.waitFor(2);
    const ann = (await api.get(`/v1/campaign/${p.campaignId}/participant/ann@example.com`)).body;
    // Then 26 test events held by the disabled endpoint: 28 messages in all.
    await op().patch(`/admin/v1/webhook-endpoints/${id}`, { enabled: false });
    for (let i = 0; i < 26; i++) await op().post(`/admin/v1/webhook-endpoints/${id}/test`);
    const { cookie } = await consoleSession(stack.baseUrl!);
    const base = `/console/webhooks/endpoints/${id}`;

    const first = await page(base, cookie);
    const firstIds = linkedIds(first.html, 'messages');
    expect(firstIds).toHaveLength(25);
    const older = linkNamed(first.html, 'Older messages');
    expect(older).toBe(`${base}?after=${firstIds[24]}`);
    const rest = await page(older!, cookie);
    const restIds = linkedIds(rest.html, 'messages');
    expect(restIds).toHaveLength(3);
    expect(new Set([...firstIds, ...restIds]).size).toBe(28);
    expect(linkNamed(rest.html, 'Older messages')).toBeUndefined();

    const byType = await page(`${base}?eventType=NEW_PARTICIPANT_ADDED`, cookie);
    expect(linkedIds(byType.html, 'messages')).toHaveLength(2);
    const pending = await page(`${base}?status=PENDING&eventType=WEBHOOK_TEST`, cookie);
    expect(linkedIds(pending.html, 'messages')).toHaveLength(25);
    // The filter goes with the next page's link.
    expect(linkNamed(pending.html, 'Older messages')).toMatch(/status=PENDING&eventType=WEBHOOK_TEST&after=/);
    const annOnly = await page(`${base}?participantId=${ann.id}`, cookie);
    const annIds = linkedIds(annOnly.html, 'messages');
    expect(annIds).toHaveLength(1);
    const annMessage = await page(`/console/webhooks/messages/${annIds[0]}`, cookie);
    expect(annMessage.html).toContain('ann@example.com');
    // The request's headers as the receiver got them (the signature withheld).
    const got = receiver.received.find((r) => r.headers['webhook-id'] === annIds[0])!.headers;
    for (const name of ['webhook-id', 'stampcard-event-id', 'content-type', 'user-agent']) {
      expect(annMessage.html).toContain(`<dt>${name}</dt><dd>${got[name]}</dd>`);
    }
    const stamp = Number(annMessage.html.match(/<dt>webhook-timestamp<\/dt><dd>(\d+)<\/dd>/)![1]);
    expect(Math.abs(stamp - Number(got['webhook-timestamp']))).toBeLessThanOrEqual(1);
    expect(annMessage.html).toContain('<dt>webhook-signature</dt><dd>v1,… (withheld)</dd>');
    expect(annMessage.html).not.toContain(String(got['webhook-signature']));
    expect(annMessage.html).not.toContain('bob@example.com');
    expect(linkedIds((await page(`${base}?participantId=par_nobody`, cookie)).html, 'messages')).toEqual([]);

    const minute = (ms: number) => new Date(ms).toISOString().slice(0, 16);
    const hourAgo = minute(Date.now() - 3600_000);
    const later = minute(Date.now() + 3600_000);
    expect(
      linkedIds((await page(`${base}?since=${hourAgo}&until=${later}`, cookie)).html, 'messages'),
    ).toHaveLength(25);
    expect(linkedIds((await page(`${base}?until=${hourAgo}`, cookie)).html, 'messages')).toEqual([]);
    expect(linkedIds((await page(`${base}?since=${later}`, cookie)).html, 'messages')).toEqual([]);
    // The form shows the filter it applied (UTC, to the minute).
    expect((await page(`${base}?since=${hourAgo}`, cookie)).html).toContain(
      `name="since" type="datetime-local" value="${hourAgo}"`,
    );
  });
  it("in a business's portal, the same list shows its own account only: another's campaign or cursor shows nothing of it", async () => {
    const mine = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const theirs = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const receiver = await startReceiver();
    const own = await op().post(`/admin/v1/campaigns/${mine.campaignId}/webhook-endpoints`, {
      url: `${receiver.url}/mine`,
    });
    const other = await op().post(`/admin/v1/campaigns/${theirs.campaignId}/webhook-endpoints`, {
      url: `${receiver.url}/theirs`,
    });
    const session = await client(overHttp(stack.baseUrl!), mine.key).post('/v1/portal-sessions', {});
    expect(session.status).toBe(200);
    const base = `${new URL(session.body.url).pathname}/webhooks`;
    const get = async (path: string) => {
      const res = await fetch(`${stack.baseUrl}${path}`);
      return { status: res.status, html: await res.text() };
    };
    const list = await get(base);
    expect(linkedIds(list.html, 'endpoints')).toEqual([own.body.id]);
    expect(list.html).not.toContain('accountId');
    const foreign = await get(`${base}?campaignId=${theirs.campaignId}`);
    expect(foreign.status).toBe(200);
    expect(linkedIds(foreign.html, 'endpoints')).toEqual([]);
    const cursor = await get(`${base}?after=${other.body.id}`);
    expect(cursor.status).toBe(404);
    expect(cursor.html).not.toContain(`${receiver.url}/theirs`);
    expect(cursor.html).not.toContain(theirs.accountId);
  });
});
