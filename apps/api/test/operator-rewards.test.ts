import { describe, expect, it } from 'vitest';
import { useOperatorKit } from '../../../test/support/operator';

const kit = useOperatorKit();
const { op, newAccount, newCampaign, newReward, pageThrough, expectPagedOnce, itRefusesBadQueries, ok } = kit;
const { byteOrder, expectValidation, expectErrorShape } = kit;

/** A reward at its field limits: about 75 KB of JSON. */
const largest = (i: number) => ({
  title: `Big ${i}`.padEnd(255, 't'),
  description: 'd'.repeat(10_000),
  subdescription: 's'.repeat(10_000),
  instructions: 'i'.repeat(50_000),
});

describe('GET /admin/v1/campaigns/{id}/rewards/{rewardId}', () => {
  it('answers the whole reward as its create and change did', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    const r = await newReward(c.id, {
      couponCode: 'FREE',
      limitDuration: 'PER_MONTH',
      numberOfWinners: 3,
      metadata: { tier: 'gold' },
      submissionType: 'FORM',
      submissionFormFields: [{ key: 'url', isRequired: true }],
    });
    const path = `/admin/v1/campaigns/${c.id}/rewards/${r.id}`;
    expect(ok(await op.get(path))).toEqual(r);
    const changed = ok(await op.patch(path, { isUnlimited: true }));
    expect(ok(await op.get(path))).toEqual(changed);
    expect(changed.limit).toBe(-1);
  });

  it('404 for a reward of another campaign, an unknown reward, an unknown campaign', async () => {
    const acct = await newAccount();
    const a = await newCampaign(acct.id);
    const b = await newCampaign(acct.id);
    const rb = await newReward(b.id);
    expectErrorShape(await op.get(`/admin/v1/campaigns/${a.id}/rewards/${rb.id}`), 404, 'NOT_FOUND');
    const unknown = expectErrorShape(
      await op.get(`/admin/v1/campaigns/${a.id}/rewards/crew_nope`),
      404,
      'NOT_FOUND',
    );
    expect(unknown.message).toBe('Reward crew_nope does not exist');
    const noCampaign = expectErrorShape(
      await op.get(`/admin/v1/campaigns/nosuchid/rewards/${rb.id}`),
      404,
      'NOT_FOUND',
    );
    expect(noCampaign.message).toBe('Campaign nosuchid does not exist');
  });

  it('400 for ids past their bounds or holding a NUL', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    expectValidation(await op.get(`/admin/v1/campaigns/${c.id}/rewards/${'r'.repeat(65)}`), 'rewardId');
    expectValidation(await op.get(`/admin/v1/campaigns/${'c'.repeat(65)}/rewards/crew_x`), 'id');
    expectValidation(await op.get(`/admin/v1/campaigns/${c.id}/rewards/crew%00`));
  });
});

describe('GET /admin/v1/campaigns/{id}/rewards', () => {
  it("pages through the campaign's rewards only, by id, whole", async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    const other = await newCampaign(acct.id);
    await newReward(other.id);
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await newReward(c.id, { order: 5 - i }));
    await expectPagedOnce(`/admin/v1/campaigns/${c.id}/rewards`, 'rewards', 2, made);
  });

  it('any campaign status: a DELETED campaign still lists its rewards', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    const r = await newReward(c.id);
    ok(await op.patch(`/admin/v1/campaigns/${c.id}`, { status: 'DELETED' }));
    expect(ok(await op.get(`/admin/v1/campaigns/${c.id}/rewards`))).toEqual({
      rewards: [r],
      limit: 20,
      nextId: null,
      more: false,
    });
  });

  it('a page of rewards at their field limits stops at its byte budget (1 MiB); paging still sees each once', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    const made = [];
    for (let i = 0; i < 20; i++) made.push(await newReward(c.id, largest(i)));
    const path = `/admin/v1/campaigns/${c.id}/rewards`;
    const first = await op.get(`${path}?limit=100`);
    const bytes = Buffer.byteLength(JSON.stringify(first.body));
    expect(bytes).toBeLessThanOrEqual(1024 * 1024);
    expect(first.body.rewards.length).toBeLessThan(20);
    expect(first.body).toMatchObject({ more: true, limit: 100 });
    const pages = await pageThrough(path, 'rewards', 100);
    expect(pages.length).toBeGreaterThan(1);
    const ids = pages.flatMap((p) => p.rewards.map((r: { id: string }) => r.id));
    expect(ids).toEqual(byteOrder(made.map((r) => r.id)));
  });

  it('404 for an unknown campaign', async () => {
    const body = expectErrorShape(await op.get('/admin/v1/campaigns/nosuchid/rewards'), 404, 'NOT_FOUND');
    expect(body.message).toBe('Campaign nosuchid does not exist');
  });

  itRefusesBadQueries(
    async () => `/admin/v1/campaigns/${(await newCampaign((await newAccount()).id)).id}/rewards`,
    [['a filter this list has not', 'status=DRAFT', 'status']],
  );
});
