import { webhookEndpoints, webhookMessages } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it, vi } from 'vitest';
import { client, operatorProgram, overHttp } from '../../../test/support/client';
import { CONSOLE_FORM } from '../../../test/support/console';
import { TEST_RATE_LIMITS } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';
import { signPortalLink } from '../src/portal/link';

/**
 * The business portal: a link an ADMIN key asks for opens its own account's webhooks and nothing else; an
 * altered, expired or other account's link shows nothing; framing is the account's choice; forms need the
 * link's CSRF token and the portal's own origin.
 */
const stack = useTestStack({ http: true, dispatcher: true });
const startReceiver = useReceivers();

const op = () => client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
const as = (key: string) => client(overHttp(stack.baseUrl!), key);
const get = (url: string) =>
  fetch(url.startsWith('http') ? url : `${stack.baseUrl}${url}`, { redirect: 'manual' });

/** A program with an endpoint on a local receiver, and a portal link for its ADMIN key. */
async function programWithPortal(answer?: Parameters<typeof startReceiver>[0]) {
  const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
  const receiver = await startReceiver(answer);
  const made = await op().post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, {
    url: receiver.url,
  });
  expect(made.status).toBe(200);
  const session = await as(p.key).post('/v1/portal-sessions', {});
  expect(session.status, JSON.stringify(session.body)).toBe(200);
  const base = new URL(session.body.url as string).pathname;
  return { ...p, receiver, endpointId: made.body.id as string, url: session.body.url as string, base };
}

describe('the business portal', () => {
  it("opens the account's own endpoints, their messages and attempts; another account's are not found", async () => {
    const mine = await programWithPortal(() => ({ status: 500, body: 'receiver exploded' }));
    const theirs = await programWithPortal();
    const opened = await get(mine.url);
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe(`${mine.base}/webhooks`);
    const list = await get(`${mine.base}/webhooks`);
    expect(list.status).toBe(200);
    expect(list.headers.get('referrer-policy')).toBe('same-origin');
    expect(list.headers.get('cache-control')).toBe('no-store');
    const html = await list.text();
    expect(html).toContain(mine.receiver.url);
    expect(html).not.toContain(theirs.receiver.url);
    expect(html).not.toContain('All accounts');

    // A failing delivery: the business finds why from its portal.
    const csrf = html.match(/name="_csrf" value="([^"]+)"/)![1]!;
    const test = await fetch(`${stack.baseUrl}${mine.base}/webhooks/endpoints/${mine.endpointId}/test`, {
      method: 'POST',
      headers: CONSOLE_FORM,
      body: new URLSearchParams({ _csrf: csrf }).toString(),
      redirect: 'manual',
    });
    expect(test.status).toBe(303);
    const message = await vi.waitFor(
      async () => {
        const [m] = await stack.ctx.db
          .select()
          .from(webhookMessages)
          .where(eq(webhookMessages.endpointId, mine.endpointId));
        if (m?.status !== 'FAILED') throw new Error('not yet');
        return m;
      },
      { timeout: 15_000, interval: 100 },
    );
    const shown = await (await get(`${mine.base}/webhooks/messages/${message.id}`)).text();
    expect(shown).toContain('HTTP 500');
    expect(shown).toContain('receiver exploded');

    // Another account's endpoint and message, by id through this link: not found, nothing shown.
    const [their] = await stack.ctx.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.id, theirs.endpointId));
    const sent = await op().post(`/admin/v1/webhook-endpoints/${their!.id}/test`);
    expect(sent.status).toBe(200);
    for (const path of [
      `${mine.base}/webhooks/endpoints/${their!.id}`,
      `${mine.base}/webhooks/messages/${sent.body.messageId}`,
    ]) {
      const res = await get(path);
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain(theirs.receiver.url);
    }
    const replay = await fetch(`${stack.baseUrl}${mine.base}/webhooks/endpoints/${their!.id}/disable`, {
      method: 'POST',
      headers: CONSOLE_FORM,
      body: new URLSearchParams({ _csrf: csrf }).toString(),
      redirect: 'manual',
    });
    expect(replay.status).toBe(404);
    const [still] = await stack.ctx.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.id, their!.id));
    expect(still!.enabled).toBe(true);
  });

  it('shows nothing for an altered, expired or unsigned link, and refuses forms without its CSRF token or from another site', async () => {
    const p = await programWithPortal();
    const token = p.base.split('/').at(-1)!;
    // Its account id's last character changed (to another one: an id may end in Z already).
    const altered = token.replace(
      p.accountId,
      `${p.accountId.slice(0, -1)}${p.accountId.endsWith('Z') ? 'Y' : 'Z'}`,
    );
    expect(altered).not.toBe(token);
    for (const bad of [altered, `${token}x`, 'p1.a.b.c.d.e', 'nonsense']) {
      const res = await get(`/portal/${bad}/webhooks`);
      expect(res.status).toBe(401);
      const html = await res.text();
      expect(html).toContain('This portal link is not valid');
      expect(html).not.toContain(p.receiver.url);
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    }
    const expired = signPortalLink({ accountId: p.accountId, expiresAt: Date.now() - 1000 }, OPERATOR_TOKEN);
    const late = await get(`/portal/${expired}/webhooks`);
    expect(late.status).toBe(401);
    expect(await late.text()).toContain('This portal link has expired');
    const otherKey = signPortalLink(
      { accountId: p.accountId, expiresAt: Date.now() + 60_000 },
      'not-the-token',
    );
    expect((await get(`/portal/${otherKey}/webhooks`)).status).toBe(401);

    const action = `${stack.baseUrl}${p.base}/webhooks/endpoints/${p.endpointId}/disable`;
    const noCsrf = await fetch(action, {
      method: 'POST',
      headers: CONSOLE_FORM,
      body: '',
      redirect: 'manual',
    });
    expect(noCsrf.status).toBe(403);
    const html = await (await get(`${p.base}/webhooks`)).text();
    const csrf = html.match(/name="_csrf" value="([^"]+)"/)![1]!;
    const crossSite = await fetch(action, {
      method: 'POST',
      headers: { ...CONSOLE_FORM, origin: 'https://evil.example' },
      body: new URLSearchParams({ _csrf: csrf }).toString(),
      redirect: 'manual',
    });
    expect(crossSite.status).toBe(403);
    const [row] = await stack.ctx.db
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.id, p.endpointId));
    expect(row!.enabled).toBe(true);
  });

  it("is framed only by the account's origins; the console never", async () => {
    const p = await programWithPortal();
    const before = await get(`${p.base}/webhooks`);
    expect(before.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(before.headers.get('x-frame-options')).toBe('DENY');
    const set = await op().patch(`/admin/v1/accounts/${p.accountId}`, {
      frameAncestors: ['https://app.example.com', 'http://localhost:5173'],
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.frameAncestors).toEqual(['https://app.example.com', 'http://localhost:5173']);
    const after = await get(`${p.base}/webhooks`);
    expect(after.headers.get('content-security-policy')).toContain(
      'frame-ancestors https://app.example.com http://localhost:5173',
    );
    expect(after.headers.get('x-frame-options')).toBeNull();
    const console = await get('/console/sign-in');
    expect(console.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");

    for (const bad of [
      ["https://a.example.com; script-src 'unsafe-inline'"],
      ['https://a.example.com/path'],
      ['__proto__'],
      ['https://a.example.com\u0000'],
      Array.from({ length: 21 }, (_, i) => `https://a${i}.example.com`),
    ]) {
      const res = await op().patch(`/admin/v1/accounts/${p.accountId}`, { frameAncestors: bad });
      expect(res.status, bad[0]).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
    }
    expect((await op().get(`/admin/v1/accounts/${p.accountId}`)).body.frameAncestors).toEqual([
      'https://app.example.com',
      'http://localhost:5173',
    ]);
  });

  it('is asked for by an ADMIN key only, for at most a day, for a campaign of its own', async () => {
    const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const other = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS });
    const member = await op().post(`/admin/v1/accounts/${p.accountId}/users`, {
      email: 'member@acme.test',
      role: 'MEMBER',
      campaignIds: [p.campaignId],
    });
    const { key: memberKey } = (await op().post(`/admin/v1/users/${member.body.id}/api-keys`)).body;
    const refused = await as(memberKey).post('/v1/portal-sessions', {});
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('NOT_AUTHORIZED');

    const admin = as(p.key);
    for (const expiresInSeconds of [59, 86_401, 1.5]) {
      const res = await admin.post('/v1/portal-sessions', { expiresInSeconds });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
    }
    expect((await admin.post('/v1/portal-sessions', { campaignId: other.campaignId })).status).toBe(403);
    expect((await admin.post('/v1/portal-sessions', { campaignId: 'nope' })).status).toBe(404);
    expect((await admin.post('/v1/portal-sessions', { colour: 'red' })).status).toBe(400);

    const day = await admin.post('/v1/portal-sessions', {
      campaignId: p.campaignId,
      expiresInSeconds: 86_400,
    });
    expect(day.status).toBe(200);
    expect(day.body.expiresAt).toBeGreaterThan(Date.now() + 86_000_000);
    expect(day.body.url).toMatch(
      new RegExp(`^${stack.baseUrl}/portal/p1\\.${p.accountId}\\.${p.campaignId}\\.`),
    );
  });
});
