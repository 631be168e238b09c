import { createApiKey } from '@stampcard/core';
import { apiKeys, users } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { consolePost, consoleSession } from '../../../test/support/console';
import { makeCampaign, makeWorld } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';

/**
 * The console's Team and keys page against the running service: an account's team and keys listed, a key
 * created (shown once) and revoked, a member's role and campaign access changed, each form refused without the
 * session or its CSRF token, and bad input shown on the page with nothing changed.
 */
const stack = useTestStack({ http: true });

const url = (path: string) => `${stack.baseUrl}${path}`;

const post = (path: string, fields: Record<string, string>, cookie?: string) =>
  consolePost(stack.baseUrl!, path, fields, cookie);

describe('the console: Team and keys', () => {
  it("lists the accounts, then an account's team and keys, never a key itself", async () => {
    const w = await makeWorld(stack.ctx);
    const { cookie } = await consoleSession(stack.baseUrl!);
    const list = await (await fetch(url('/console/team'), { headers: { cookie } })).text();
    expect(list).toContain(`href="/console/team?accountId=${w.account.id}"`);
    const page = await fetch(url(`/console/team?accountId=${w.account.id}`), { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(w.user.email);
    const [key] = await stack.ctx.db.select().from(apiKeys).where(eq(apiKeys.userId, w.user.id));
    expect(html).toContain(`${key!.keyPrefix}…`);
    expect(html).not.toContain(w.key);
    expect(html).toContain('aria-current="page"');
  });

  it('creates a key shown on that answer only, and revokes it', async () => {
    const w = await makeWorld(stack.ctx);
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const created = await post('/console/team/keys', { _csrf: csrf, userId: w.user.id }, cookie);
    expect(created.status).toBe(201);
    const key = (await created.text()).match(/<code id="new-key">([^<]+)<\/code>/)![1]!;
    const rows = await stack.ctx.db.select().from(apiKeys).where(eq(apiKeys.userId, w.user.id));
    expect(rows).toHaveLength(2);
    const made = rows.find((r) => key.startsWith(r.keyPrefix) && r.id !== w.keyId)!;
    expect(made).toBeDefined();
    // The new key works against the API, and the page never shows it again.
    const use = await fetch(url(`/v1/campaign/${w.campaign.id}`), {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(use.status).toBe(200);
    const later = await (
      await fetch(url(`/console/team?accountId=${w.account.id}`), { headers: { cookie } })
    ).text();
    expect(later).not.toContain(key);

    const revoked = await post(`/console/team/keys/${made.id}/revoke`, { _csrf: csrf }, cookie);
    expect(revoked.status).toBe(303);
    expect(revoked.headers.get('location')).toBe(`/console/team?accountId=${w.account.id}`);
    const [after] = await stack.ctx.db.select().from(apiKeys).where(eq(apiKeys.id, made.id));
    expect(after!.revokedAt).not.toBeNull();
    const refused = await fetch(url(`/v1/campaign/${w.campaign.id}`), {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(refused.status).toBe(403);
  });

  it("changes a member's role and campaign access; an unknown campaign is shown and changes nothing", async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeCampaign(stack.ctx, w.account.id);
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const saved = await post(
      `/console/team/users/${w.user.id}`,
      { _csrf: csrf, role: 'MEMBER', campaignIds: `${other.id}, ` },
      cookie,
    );
    expect(saved.status).toBe(303);
    const [member] = await stack.ctx.db.select().from(users).where(eq(users.id, w.user.id));
    expect(member).toMatchObject({ role: 'MEMBER', campaignIds: [other.id] });
    // The member's key now reaches that campaign only.
    const denied = await fetch(url(`/v1/campaign/${w.campaign.id}`), {
      headers: { authorization: `Bearer ${w.key}` },
    });
    expect(denied.status).toBe(403);

    const bad = await post(
      `/console/team/users/${w.user.id}`,
      { _csrf: csrf, role: 'ADMIN', campaignIds: 'no-such-campaign' },
      cookie,
    );
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('role="alert"');
    const wrongRole = await post(`/console/team/users/${w.user.id}`, { _csrf: csrf, role: 'OWNER' }, cookie);
    expect(wrongRole.status).toBe(400);
    expect(await wrongRole.text()).toContain('Not changed: role');
    const [unchanged] = await stack.ctx.db.select().from(users).where(eq(users.id, w.user.id));
    expect(unchanged).toMatchObject({ role: 'MEMBER', campaignIds: [other.id] });
  });

  it("pages an account's keys 50 at a time, each exactly once", async () => {
    const w = await makeWorld(stack.ctx);
    for (let i = 0; i < 50; i++) await createApiKey(stack.ctx, w.user.id);
    const { cookie } = await consoleSession(stack.baseUrl!);
    const seen: string[] = [];
    let next: string | undefined = `/console/team?accountId=${w.account.id}`;
    let pages = 0;
    while (next) {
      const html = await (await fetch(url(next), { headers: { cookie } })).text();
      seen.push(...[...html.matchAll(/<code>(sk_[^<…]+)…<\/code>/g)].map((m) => m[1]!));
      next = html.match(/<a href="([^"]+)">Next keys<\/a>/)?.[1]?.replaceAll('&amp;', '&');
      pages += 1;
    }
    expect(pages).toBe(2);
    expect(seen).toHaveLength(51);
    expect(new Set(seen).size).toBe(51);
  });

  it('refuses every form without a session or with another CSRF token, and unknown ids with a 404 page', async () => {
    const w = await makeWorld(stack.ctx);
    const before = await stack.ctx.db.select().from(apiKeys).where(eq(apiKeys.userId, w.user.id));
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const other = await consoleSession(stack.baseUrl!);

    const anonymous = await post('/console/team/keys', { _csrf: csrf, userId: w.user.id });
    expect(anonymous.status).toBe(401);
    const page = await fetch(url('/console/team'), { redirect: 'manual' });
    expect(page.status).toBe(303);
    const foreign = await post('/console/team/keys', { _csrf: other.csrf, userId: w.user.id }, cookie);
    expect(foreign.status).toBe(403);
    const noToken = await post(`/console/team/keys/${w.keyId}/revoke`, {}, cookie);
    expect(noToken.status).toBe(403);
    expect(await stack.ctx.db.select().from(apiKeys).where(eq(apiKeys.userId, w.user.id))).toEqual(before);

    const unknown = await post('/console/team/keys', { _csrf: csrf, userId: 'usr_nobody' }, cookie);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('does not exist');
    const noAccount = await fetch(url('/console/team?accountId=nope'), { headers: { cookie } });
    expect(noAccount.status).toBe(404);
    const hostile = await fetch(url('/console/team?accountId=%00'), { headers: { cookie } });
    expect(hostile.status).toBe(400);
    const nul = await post(
      `/console/team/users/${w.user.id}`,
      { _csrf: csrf, role: 'MEMBER', campaignIds: 'a\u0000b' },
      cookie,
    );
    expect(nul.status).toBe(400);
    expect(await nul.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    const [user] = await stack.ctx.db.select().from(users).where(eq(users.id, w.user.id));
    expect(user!.role).toBe('ADMIN');
  });
});
