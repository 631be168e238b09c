import { participantRewards, participants } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it, vi } from 'vitest';
import { client, operatorProgram, overHttp } from '../../../test/support/client';
import { consolePost, consoleSession } from '../../../test/support/console';
import { TEST_RATE_LIMITS } from '../../../test/support/factories';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * The console's Participants pages against the running service: search by email or name with filters and
 * paging; a participant's counts, ranks and rewards, each change made with the API's own services (approve,
 * fulfil, delete, notes and metadata, risk by hand, a manual loyalty action); bad input shown, nothing changed.
 */
const stack = useTestStack({ http: true, worker: true });

const op = () => client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
const page = async (path: string, cookie: string) => {
  const res = await fetch(`${stack.baseUrl}${path}`, { headers: { cookie } });
  return { status: res.status, html: await res.text() };
};
const post = (path: string, fields: Record<string, string>, cookie?: string) =>
  consolePost(stack.baseUrl!, path, fields, cookie);

async function program(reward: Record<string, unknown> = {}) {
  const p = await operatorProgram(op(), { rateLimits: TEST_RATE_LIMITS, reward });
  const api = client(overHttp(stack.baseUrl!), p.key);
  const add = async (email: string, firstName: string, lastName: string) => {
    const res = await api.post(`/v1/campaign/${p.campaignId}/participant`, { email, firstName, lastName });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.id as string;
  };
  return { ...p, api, add };
}

const rowOf = async (id: string) =>
  (await stack.ctx.db.select().from(participants).where(eq(participants.id, id)))[0]!;

describe('the console: Participants', () => {
  it('finds participants by email or name prefix, filters by risk and winner, and pages', async () => {
    const p = await program();
    const ada = await p.add('ada@example.com', 'Ada', 'Lovelace');
    await p.add('grace@example.com', 'Grace', 'Hopper');
    await p.add('alan@example.com', 'Alan', 'Turing');
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const base = `/console/participants?campaignId=${p.campaignId}`;
    const all = await page(base, cookie);
    expect(all.status).toBe(200);
    for (const email of ['ada@', 'grace@', 'alan@']) expect(all.html).toContain(email);
    const byEmail = await page(`${base}&q=GRA`, cookie);
    expect(byEmail.html).toContain('grace@example.com');
    expect(byEmail.html).not.toContain('ada@example.com');
    const byLast = await page(`${base}&q=turi`, cookie);
    expect(byLast.html).toContain('alan@example.com');
    expect(byLast.html).not.toContain('grace@example.com');
    const byFirst = await page(`${base}&q=a`, cookie);
    expect(byFirst.html).toContain('ada@example.com');
    expect(byFirst.html).toContain('alan@example.com');
    expect(byFirst.html).not.toContain('grace@example.com');

    await post(`/console/participants/${p.campaignId}/${ada}/risk`, { _csrf: csrf, level: 'HIGH' }, cookie);
    const high = await page(`${base}&risk=HIGH`, cookie);
    expect(high.html).toContain('ada@example.com');
    expect(high.html).not.toContain('alan@example.com');
    expect((await page(`${base}&winner=true`, cookie)).html).toContain('No participant matches');

    // 30 more: the first page holds 25 and links to the next, which holds the rest.
    for (let i = 0; i < 30; i++)
      await p.add(`bulk${String(i).padStart(2, '0')}@example.com`, 'Bulk', `N${i}`);
    const first = await page(`${base}&q=bulk`, cookie);
    expect(first.html.match(/bulk\d\d@example.com<\/a>/g)).toHaveLength(25);
    const next = first.html
      .match(/href="(\/console\/participants\?[^"]*after=[^"]+)"/)![1]!
      .replaceAll('&amp;', '&');
    const second = await page(next, cookie);
    expect(second.html.match(/bulk\d\d@example.com<\/a>/g)).toHaveLength(5);
  });

  it("shows a participant's counts and rewards and changes them with the API's services", async () => {
    const p = await program({ conversionsRequired: 1 });
    await op().patch(`/admin/v1/campaigns/${p.campaignId}`, { requireRewardApproval: true });
    const id = await p.add('ada@example.com', 'Ada', 'Lovelace');
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const here = `/console/participants/${p.campaignId}/${id}`;

    const manual = await post(`${here}/loyalty-action`, { _csrf: csrf, rewardId: p.rewardId }, cookie);
    expect(manual.status).toBe(200);
    expect(await manual.text()).toMatch(/Loyalty action act_\w+ recorded/);
    await vi.waitFor(async () => expect((await rowOf(id)).loyaltyActionCount).toBe(1), { timeout: 15_000 });
    const [earned] = await vi.waitFor(
      async () => {
        const rows = await stack.ctx.db
          .select()
          .from(participantRewards)
          .where(eq(participantRewards.participantId, id));
        expect(rows).toHaveLength(1);
        return rows;
      },
      { timeout: 15_000 },
    );
    const shown = await page(here, cookie);
    expect(shown.html).toContain('Free coffee');
    expect(shown.html).toContain(`${here}/rewards/${earned!.id}/approve`);

    expect((await post(`${here}/rewards/${earned!.id}/approve`, { _csrf: csrf }, cookie)).status).toBe(200);
    expect((await post(`${here}/rewards/${earned!.id}/fulfil`, { _csrf: csrf }, cookie)).status).toBe(200);
    const [after] = await stack.ctx.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.id, earned!.id));
    expect(after).toMatchObject({ approved: true, isFulfilled: true });
    // Fulfilled already: refused on the page with the API's status.
    const again = await post(`${here}/rewards/${earned!.id}/fulfil`, { _csrf: csrf }, cookie);
    expect(again.status).toBe(400);
    expect(await again.text()).toContain('already fulfilled');

    const saved = await post(
      here,
      {
        _csrf: csrf,
        firstName: 'Augusta',
        lastName: '',
        notes: 'VIP',
        metadata: '{"tier": "gold", "visits": 3}',
      },
      cookie,
    );
    expect(saved.status).toBe(200);
    expect(await rowOf(id)).toMatchObject({
      firstName: 'Augusta',
      lastName: null,
      notes: 'VIP',
      metadata: { tier: 'gold', visits: 3 },
    });
    await post(here, { _csrf: csrf, firstName: 'Augusta', metadata: '{"tier": "silver"}' }, cookie);
    expect((await rowOf(id)).metadata).toEqual({ tier: 'silver' });
    await post(`${here}/risk`, { _csrf: csrf, level: 'MEDIUM' }, cookie);
    expect(await rowOf(id)).toMatchObject({ fraudRiskLevel: 'MEDIUM', fraudReasonCode: 'MANUAL_UPDATE' });
  });

  it('refuses bad input on the page and a missing CSRF token; nothing changes', async () => {
    const p = await program();
    const id = await p.add('ada@example.com', 'Ada', 'Lovelace');
    const { cookie, csrf } = await consoleSession(stack.baseUrl!);
    const here = `/console/participants/${p.campaignId}/${id}`;
    const before = await rowOf(id);
    for (const metadata of [
      '{not json',
      '[1,2]',
      '{"__proto__": {"x": 1}}',
      '{"a": {"b": {"c": {"d": 1}}}}',
    ]) {
      const res = await post(here, { _csrf: csrf, firstName: 'X', metadata }, cookie);
      expect(res.status, metadata).toBe(400);
      expect(await res.text()).toContain('role="alert"');
    }
    expect((await post(here, { _csrf: csrf, notes: 'a\u0000b' }, cookie)).status).toBe(400);
    expect((await post(here, { _csrf: csrf, firstName: 'x'.repeat(300) }, cookie)).status).toBe(400);
    expect((await post(`${here}/risk`, { _csrf: csrf, level: 'EXTREME' }, cookie)).status).toBe(400);
    expect((await post(`${here}/loyalty-action`, { _csrf: csrf, rewardId: 'nope' }, cookie)).status).toBe(
      404,
    );
    expect((await post(`${here}/risk`, { level: 'HIGH' }, cookie)).status).toBe(403);
    expect(
      (
        await post(
          `/console/participants/${p.campaignId}/nobody/risk`,
          { _csrf: csrf, level: 'HIGH' },
          cookie,
        )
      ).status,
    ).toBe(404);
    expect((await page(`/console/participants?campaignId=${'x'.repeat(100)}`, cookie)).status).toBe(400);
    expect((await page('/console/participants?campaignId=nope', cookie)).status).toBe(404);
    expect((await page(`/console/participants?campaignId=${p.campaignId}&q=%00a`, cookie)).status).toBe(400);
    expect(await rowOf(id)).toEqual(before);
  });
});
