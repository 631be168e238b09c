import { campaigns, events } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { consolePost, consoleSession } from '../../../test/support/console';
import { makeCampaign, makeWorld } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';

/**
 * The console's Programs page against the running service: an account's campaigns with their counters and
 * rewards, a campaign's name and status changed through the operator API's own schema and service, refused
 * without the session's CSRF token, and bad input shown on the page with nothing changed.
 */
const stack = useTestStack({ http: true });

const url = (path: string) => `${stack.baseUrl}${path}`;

const post = (path: string, fields: Record<string, string>, cookie?: string) =>
  consolePost(stack.baseUrl!, path, fields, cookie);

describe('the console: Programs', () => {
  it("lists an account's campaigns with their counters and rewards", async () => {
    const w = await makeWorld(stack.ctx);
    await stack.ctx.db
      .update(campaigns)
      .set({ participantCount: 1234, loyaltyActionCount: 5678, winnerCount: 9 })
      .where(eq(campaigns.id, w.campaign.id));
    const { cookie } = await consoleSession(stack.baseUrl!);
    const list = await (await fetch(url('/console/programs'), { headers: { cookie } })).text();
    expect(list).toContain(`href="/console/programs?accountId=${w.account.id}"`);
    const page = await fetch(url(`/console/programs?accountId=${w.account.id}`), { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(w.campaign.name);
    expect(html).toContain('1,234');
    expect(html).toContain('5,678');
    expect(html).toContain(`<td>${w.reward.title ?? w.reward.id}</td>`);
  });

  it("changes a campaign's name and status; COMPLETE records CAMPAIGN_ENDED as the operator API does", async () => {
    const w = await makeWorld(stack.ctx);
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const saved = await post(
      `/console/programs/campaigns/${w.campaign.id}`,
      { _csrf: csrf, name: 'Summer stamps', status: 'COMPLETE' },
      cookie,
    );
    expect(saved.status).toBe(303);
    expect(saved.headers.get('location')).toBe(`/console/programs?accountId=${w.account.id}`);
    const [row] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
    expect(row).toMatchObject({ name: 'Summer stamps', status: 'COMPLETE' });
    const ended = await stack.ctx.db
      .select()
      .from(events)
      .where(and(eq(events.campaignId, w.campaign.id), eq(events.type, 'CAMPAIGN_ENDED')));
    expect(ended).toHaveLength(1);
  });

  it('refuses bad input on the page, a missing CSRF token and unknown ids; nothing changes', async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeCampaign(stack.ctx, w.account.id, { name: 'Untouched' });
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const path = `/console/programs/campaigns/${other.id}`;
    const badStatus = await post(path, { _csrf: csrf, name: 'x', status: 'FINISHED' }, cookie);
    expect(badStatus.status).toBe(400);
    expect(await badStatus.text()).toContain('Not changed: status');
    const emptyName = await post(path, { _csrf: csrf, name: '', status: 'DRAFT' }, cookie);
    expect(emptyName.status).toBe(400);
    expect((await post(path, { name: 'No token', status: 'DRAFT' }, cookie)).status).toBe(403);
    const nul = await post(path, { _csrf: csrf, name: 'a\u0000b', status: 'DRAFT' }, cookie);
    expect(nul.status).toBe(400);
    const [row] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, other.id));
    expect(row!.name).toBe('Untouched');

    const unknown = await post(
      '/console/programs/campaigns/nope',
      { _csrf: csrf, name: 'x', status: 'DRAFT' },
      cookie,
    );
    expect(unknown.status).toBe(404);
    const noAccount = await fetch(url('/console/programs?accountId=nope'), { headers: { cookie } });
    expect(noAccount.status).toBe(404);
    const anonymous = await fetch(url('/console/programs'), { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
  });
});
