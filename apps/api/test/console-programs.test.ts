import { accounts, campaigns, events, rewards } from '@stampcard/db';
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
    expect(saved.headers.get('location')).toBe(`/console/programs/campaigns/${w.campaign.id}?done=saved`);
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

  it('adds an account, a campaign and a reward from forms, and sets every campaign setting', async () => {
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const account = await post(
      '/console/programs/accounts',
      { _csrf: csrf, name: 'Bakery', plan: 'STARTER', participantQuota: '500' },
      cookie,
    );
    expect(account.status).toBe(303);
    const accountId = new URL(account.headers.get('location')!, stack.baseUrl!).searchParams.get(
      'accountId',
    )!;
    const [acct] = await stack.ctx.db.select().from(accounts).where(eq(accounts.id, accountId));
    expect(acct).toMatchObject({ name: 'Bakery', plan: 'STARTER', participantQuota: 500 });

    const made = await post(
      `/console/programs/accounts/${accountId}/campaigns`,
      { _csrf: csrf, name: 'Bread club', currencyISO: 'EUR', status: 'DRAFT' },
      cookie,
    );
    expect(made.status).toBe(303);
    const campaignPath = made.headers.get('location')!;
    const campaignId = campaignPath.split('/').at(-1)!;
    const reward = await post(
      `${campaignPath}/rewards`,
      {
        _csrf: csrf,
        title: 'Free loaf',
        description: 'A loaf of the day',
        conversionsRequired: '5',
        limit: '2',
        limitDuration: 'PER_MONTH',
        numberOfWinners: '10',
        submissionType: 'FORM',
        'message.success': 'Thanks!',
        'formField.0.key': 'address',
        'formField.0.label': 'Address',
        'formField.0.isRequired.present': '1',
        'formField.0.isRequired': 'true',
        'formField.0.isVisible.present': '1',
        'formField.0.isVisible': 'true',
        'formField.1.key': '',
        metadata: '{"shelf": "top"}',
        'isUnlimited.present': '1',
      },
      cookie,
    );
    expect(reward.status, await reward.clone().text()).toBe(303);
    const [loaf] = await stack.ctx.db.select().from(rewards).where(eq(rewards.campaignId, campaignId));
    expect(loaf).toMatchObject({
      title: 'Free loaf',
      conversionsRequired: 5,
      limit: 2,
      limitDuration: 'PER_MONTH',
      numberOfWinners: 10,
      submissionType: 'FORM',
      submissionFormMessages: { success: 'Thanks!' },
      submissionFormFields: [{ key: 'address', label: 'Address', isRequired: true, isVisible: true }],
      metadata: { shelf: 'top' },
      isUnlimited: false,
    });

    const settings = await post(
      campaignPath,
      {
        _csrf: csrf,
        name: 'Bread club',
        currencyISO: 'EUR',
        status: 'IN_PROGRESS',
        'requireRewardApproval.present': '1',
        requireRewardApproval: 'true',
        'antiFraud.level': 'STRICT',
        'antiFraud.blacklist': 'spam.example\n*@mailinator.com\n10.0.0.0/8',
        'antiFraud.whitelist': '',
        'antiFraud.ipThrottle': '3',
        'pointsConversion.rewardId': loaf!.id,
        'pointsConversion.metadataKey': 'points',
        'pointsConversion.threshold': '100',
      },
      cookie,
    );
    expect(settings.status, await settings.clone().text()).toBe(303);
    const [row] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, campaignId));
    expect(row).toMatchObject({
      status: 'IN_PROGRESS',
      requireRewardApproval: true,
      antiFraud: {
        level: 'STRICT',
        blacklist: ['spam.example', '*@mailinator.com', '10.0.0.0/8'],
        ipThrottle: 3,
      },
      pointsConversion: { metadataKey: 'points', threshold: 100, rewardId: loaf!.id },
    });
    const page = await fetch(url(campaignPath), { headers: { cookie } });
    expect(await page.text()).toContain('*@mailinator.com');

    // Emptied, the groups are cleared; an unticked box turns the approval off.
    await post(
      campaignPath,
      {
        _csrf: csrf,
        name: 'Bread club',
        'requireRewardApproval.present': '1',
        'antiFraud.level': '',
        'antiFraud.blacklist': '',
        'antiFraud.whitelist': '',
        'antiFraud.ipThrottle': '',
        'pointsConversion.rewardId': '',
        'pointsConversion.metadataKey': '',
        'pointsConversion.threshold': '',
      },
      cookie,
    );
    const [cleared] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, campaignId));
    expect(cleared).toMatchObject({ requireRewardApproval: false, antiFraud: null, pointsConversion: null });
  });

  it('refuses bad settings on the page with what is wrong; nothing changes', async () => {
    const w = await makeWorld(stack.ctx);
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const path = `/console/programs/campaigns/${w.campaign.id}`;
    const [before] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
    const cases: Record<string, string>[] = [
      { currencyISO: 'EURO' },
      { 'antiFraud.blacklist': 'not an entry!' },
      { 'antiFraud.ipThrottle': 'many' },
      {
        'pointsConversion.rewardId': w.reward.id,
        'pointsConversion.metadataKey': '__proto__',
        'pointsConversion.threshold': '5',
      },
    ];
    for (const fields of cases) {
      const res = await post(path, { _csrf: csrf, name: 'Changed', ...fields }, cookie);
      expect(res.status, JSON.stringify(fields)).toBe(400);
      expect(await res.text()).toContain('role="alert"');
    }
    const [after] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
    expect(after).toEqual(before);

    const rewardPath = `${path}/rewards/${w.reward.id}`;
    const [rBefore] = await stack.ctx.db.select().from(rewards).where(eq(rewards.id, w.reward.id));
    for (const fields of <Record<string, string>[]>[
      { 'formField.0.key': '__proto__' },
      { 'formField.0.key': 'a', 'formField.1.key': 'a' },
      { metadata: '{"a":' },
      { imageUrl: 'not a url' },
      { title: 'x\u0000y' },
    ]) {
      const res = await post(rewardPath, { _csrf: csrf, ...fields }, cookie);
      expect(res.status, JSON.stringify(fields)).toBe(400);
    }
    const [rAfter] = await stack.ctx.db.select().from(rewards).where(eq(rewards.id, w.reward.id));
    expect(rAfter).toEqual(rBefore);
    expect((await post(`${path}/rewards`, { title: 'No token' }, cookie)).status).toBe(403);
    expect(
      (await post('/console/programs/accounts', { _csrf: csrf, name: '', plan: 'GROWTH' }, cookie)).status,
    ).toBe(400);
  });
});
