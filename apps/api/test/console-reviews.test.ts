import { formSubmissions, participantRewards } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, overHttp } from '../../../test/support/client';
import { consolePost, consoleSession } from '../../../test/support/console';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';

/**
 * The console's Reviews page against the running service (API over HTTP, worker): form submissions and rewards
 * waiting for an operator, in every campaign, each approved or rejected in one click; the forms refused without
 * the session's CSRF token; an item of another campaign, or already decided, refused with nothing changed.
 */
const stack = useTestStack({ http: true });

const url = (path: string) => `${stack.baseUrl}${path}`;

const post = (path: string, fields: Record<string, string>, cookie?: string) =>
  consolePost(stack.baseUrl!, path, fields, cookie);

const FORM = {
  submissionType: 'FORM' as const,
  submissionFormFields: [
    { key: 'handle', label: 'Your handle', type: 'text', isRequired: true, isVisible: true },
  ],
};

/** A campaign that asks for approval and a form; a participant who sent the form and earned the reward. */
async function waitingWorld() {
  const w = await makeWorld(stack.ctx, {
    campaign: { requireRewardApproval: true },
    reward: { ...FORM, conversionsRequired: 1, isUnlimited: true },
  });
  const api = client(overHttp(stack.baseUrl!), w.key);
  const email = uniqueEmail('review');
  const earned = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
    participantEmail: email,
    rewardId: w.reward.id,
  });
  expect(earned.status, JSON.stringify(earned.body)).toBe(200);
  expect(earned.body.action.status).toBe('APPLIED');
  const sent = await api.post(
    `/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}/form-submission`,
    {
      rewardId: w.reward.id,
      formData: { handle: '@ada' },
    },
  );
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const [reward] = await stack.ctx.db
    .select()
    .from(participantRewards)
    .where(eq(participantRewards.campaignId, w.campaign.id));
  return { ...w, email, submissionId: sent.body.id as string, participantRewardId: reward!.id };
}

describe('the console: Reviews', () => {
  it('lists what waits in every campaign with its participant and answers, and approves it in one click', async () => {
    const w = await waitingWorld();
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const html = await (await fetch(url('/console/reviews'), { headers: { cookie } })).text();
    expect(html).toContain(`action="/console/reviews/forms/${w.submissionId}/approve"`);
    expect(html).toContain(`action="/console/reviews/rewards/${w.participantRewardId}/approve"`);
    expect(html).toContain(w.email);
    expect(html).toContain('@ada');

    const form = await post(
      `/console/reviews/forms/${w.submissionId}/approve`,
      { _csrf: csrf, campaignId: w.campaign.id },
      cookie,
    );
    expect(form.status).toBe(303);
    const [reviewed] = await stack.ctx.db
      .select()
      .from(formSubmissions)
      .where(eq(formSubmissions.id, w.submissionId));
    expect(reviewed!.status).toBe('REVIEWED');

    const reward = await post(
      `/console/reviews/rewards/${w.participantRewardId}/approve`,
      { _csrf: csrf, campaignId: w.campaign.id },
      cookie,
    );
    expect(reward.status).toBe(303);
    const [approved] = await stack.ctx.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.id, w.participantRewardId));
    expect(approved!.approved).toBe(true);

    const after = await (await fetch(url('/console/reviews'), { headers: { cookie } })).text();
    expect(after).not.toContain(w.submissionId);
    expect(after).not.toContain(w.participantRewardId);
  });

  it('rejects in one click: the form REVIEWED with nothing unlocked, the reward removed', async () => {
    const w = await waitingWorld();
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    expect(
      (
        await post(
          `/console/reviews/forms/${w.submissionId}/reject`,
          { _csrf: csrf, campaignId: w.campaign.id },
          cookie,
        )
      ).status,
    ).toBe(303);
    expect(
      (
        await post(
          `/console/reviews/rewards/${w.participantRewardId}/reject`,
          { _csrf: csrf, campaignId: w.campaign.id },
          cookie,
        )
      ).status,
    ).toBe(303);
    const [reviewed] = await stack.ctx.db
      .select()
      .from(formSubmissions)
      .where(eq(formSubmissions.id, w.submissionId));
    expect(reviewed!.status).toBe('REVIEWED');
    const left = await stack.ctx.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.id, w.participantRewardId));
    expect(left).toEqual([]);
  });

  it('pages the rewards awaiting approval 25 at a time, each exactly once', async () => {
    const w = await makeWorld(stack.ctx, {
      campaign: { requireRewardApproval: true },
      reward: { conversionsRequired: 1, isUnlimited: true },
    });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const emails = Array.from({ length: 27 }, () => uniqueEmail('paged'));
    for (const participantEmail of emails) {
      const r = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
        participantEmail,
        rewardId: w.reward.id,
      });
      expect(r.body.action?.status, JSON.stringify(r.body)).toBe('APPLIED');
    }
    const { cookie } = await consoleSession(stack.baseUrl!);
    const seen: string[] = [];
    let next: string | undefined = '/console/reviews';
    let pages = 0;
    while (next) {
      const html = await (await fetch(url(next), { headers: { cookie } })).text();
      seen.push(...[...html.matchAll(/Approve (paged-[^<]+?)(?:'|&#39;)s reward/g)].map((m) => m[1]!));
      next = html
        .match(/<a href="([^"]+)">Next: rewards awaiting approval<\/a>/)?.[1]
        ?.replaceAll('&amp;', '&');
      pages += 1;
    }
    expect(pages).toBeGreaterThanOrEqual(2);
    expect(seen.filter((e) => emails.includes(e)).sort()).toEqual([...emails].sort());
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('refuses a decision without the CSRF token, for another campaign, or twice; nothing changes', async () => {
    const w = await waitingWorld();
    const other = await makeWorld(stack.ctx);
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const path = `/console/reviews/forms/${w.submissionId}/approve`;
    expect((await post(path, { campaignId: w.campaign.id }, cookie)).status).toBe(403);
    const elsewhere = await post(path, { _csrf: csrf, campaignId: other.campaign.id }, cookie);
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.text()).toContain('role="alert"');
    const unknown = await post(path, { _csrf: csrf, campaignId: 'nope' }, cookie);
    expect(unknown.status).toBe(404);
    const hostile = await post(path, { _csrf: csrf, campaignId: 'a\u0000b' }, cookie);
    expect(hostile.status).toBe(400);
    const [still] = await stack.ctx.db
      .select()
      .from(formSubmissions)
      .where(eq(formSubmissions.id, w.submissionId));
    expect(still!.status).toBe('UNREVIEWED');

    expect((await post(path, { _csrf: csrf, campaignId: w.campaign.id }, cookie)).status).toBe(303);
    const twice = await post(path, { _csrf: csrf, campaignId: w.campaign.id }, cookie);
    expect(twice.status).toBe(400);
  });
});
