import { describe, expect, it } from 'vitest';
import { useOperatorKit } from '../../../test/support/operator';

const kit = useOperatorKit();
const { op, newAccount, newCampaign, newReward, pageThrough, expectPagedOnce, itRefusesBadQueries, ok } = kit;
const { byteOrder, expectErrorShape } = kit;

/** A campaign as the operator's read answers it: settings and whole rewards. */
const read = async (id: string) => ok(await op.get(`/admin/v1/campaigns/${id}`));

describe('GET /admin/v1/accounts/{accountId}/campaigns', () => {
  it("pages through the account's campaigns only, each as the operator's read answers it", async () => {
    const acct = await newAccount();
    const other = await newAccount();
    await newCampaign(other.id);
    const made = [];
    for (let i = 0; i < 5; i++) {
      const c = await newCampaign(acct.id, {
        antiFraud: { level: 'STRICT' },
        requireRewardApproval: i % 2 === 0,
      });
      if (i < 2) await newReward(c.id, { metadata: { i } });
      made.push(await read(c.id));
    }
    await expectPagedOnce(`/admin/v1/accounts/${acct.id}/campaigns`, 'campaigns', 2, made);
  });

  it('lists every status, DELETED too, and filters by status', async () => {
    const acct = await newAccount();
    const running = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    const gone = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    ok(await op.patch(`/admin/v1/campaigns/${gone.id}`, { status: 'DELETED' }));
    const path = `/admin/v1/accounts/${acct.id}/campaigns`;
    const all = ok(await op.get(path));
    expect(all.campaigns.map((c: { id: string }) => c.id)).toEqual(byteOrder([running.id, gone.id]));
    expect(ok(await op.get(`${path}?status=DELETED`)).campaigns).toEqual([await read(gone.id)]);
    expect(ok(await op.get(`${path}?status=COMPLETE`))).toEqual({
      campaigns: [],
      limit: 20,
      nextId: null,
      more: false,
    });
  });

  it('counts a campaign with its rewards in the byte budget (1 MiB): heavy ones come one a page', async () => {
    const acct = await newAccount();
    const heavy = { description: 'd'.repeat(10_000), instructions: 'i'.repeat(50_000) };
    const made = [];
    for (let i = 0; i < 3; i++) {
      const c = await newCampaign(acct.id);
      for (let j = 0; j < 9; j++) await newReward(c.id, heavy);
      made.push(c.id);
    }
    const path = `/admin/v1/accounts/${acct.id}/campaigns`;
    const first = await op.get(`${path}?limit=100`);
    expect(Buffer.byteLength(JSON.stringify(first.body))).toBeLessThanOrEqual(1024 * 1024);
    expect(first.body).toMatchObject({ more: true, limit: 100 });
    expect(first.body.campaigns).toHaveLength(1);
    expect(first.body.campaigns[0].rewards).toHaveLength(9);
    const pages = await pageThrough(path, 'campaigns', 100);
    expect(pages).toHaveLength(3);
    expect(pages.flatMap((p) => p.campaigns.map((c: { id: string }) => c.id))).toEqual(byteOrder(made));
  });

  it('404 for an unknown account', async () => {
    const body = expectErrorShape(await op.get('/admin/v1/accounts/acct_nope/campaigns'), 404, 'NOT_FOUND');
    expect(body.message).toBe('Account acct_nope does not exist');
  });

  itRefusesBadQueries(
    async () => `/admin/v1/accounts/${(await newAccount()).id}/campaigns`,
    [['an unknown status', 'status=PAUSED', 'status']],
  );
});
