import { accounts } from '@stampcard/db';
import { describe, expect, it } from 'vitest';
import { useOperatorKit } from '../../../test/support/operator';

const kit = useOperatorKit();
const { stack, op, asKey, newAccount, newCampaign, newReward, newKey, pageThrough } = kit;
const { itRefusesBadQueries, ok, uid, byteOrder, expectValidation, expectErrorShape } = kit;

describe('GET /admin/v1/accounts/{accountId}', () => {
  it('answers the account as its create did, with its participant count now', async () => {
    const created = await newAccount({ participantQuota: 10, rateLimits: { minute: 500 } });
    expect(ok(await op.get(`/admin/v1/accounts/${created.id}`))).toEqual(created);

    // A participant added through the account's key shows in the count.
    const campaign = await newCampaign(created.id, { status: 'IN_PROGRESS' });
    const reward = await newReward(campaign.id);
    const { key } = await newKey(created.id);
    ok(
      await asKey(key).post(`/v1/campaign/${campaign.id}/loyalty-action`, {
        participantEmail: `p-${uid()}@example.com`,
        rewardId: reward.id,
      }),
    );
    expect(ok(await op.get(`/admin/v1/accounts/${created.id}`))).toEqual({ ...created, participantCount: 1 });
  });

  it('404 NOT_FOUND for an unknown account, naming it', async () => {
    const body = expectErrorShape(await op.get('/admin/v1/accounts/acct_nope'), 404, 'NOT_FOUND');
    expect(body.message).toBe('Account acct_nope does not exist');
  });

  it('400 for an id over 64 characters or holding a NUL', async () => {
    expectValidation(await op.get(`/admin/v1/accounts/${'a'.repeat(65)}`), 'accountId');
    expectValidation(await op.get('/admin/v1/accounts/acct%00x'));
  });
});

describe('GET /admin/v1/accounts', () => {
  it('pages through every account by id, each once, as the create answered it', async () => {
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await newAccount());
    const pages = await pageThrough('/admin/v1/accounts', 'accounts', 2);
    const seen = pages.flatMap((p) => p.accounts as { id: string }[]);
    const all = await stack.ctx.db.select({ id: accounts.id }).from(accounts);
    expect(seen.map((a) => a.id)).toEqual(byteOrder(all.map((a) => a.id)));
    expect(pages.length).toBe(Math.ceil(all.length / 2));
    for (const a of made) expect(seen).toContainEqual(a);
    // Each page's nextId is the first account of the next one.
    for (let i = 1; i < pages.length; i++) {
      expect((pages[i]!.accounts as { id: string }[])[0]!.id).toBe(pages[i - 1]!.nextId);
    }
    const last = pages.at(-1)!;
    expect(last).toMatchObject({ more: false, nextId: null });
  });

  it('an account made while paging does not make the reader see another twice', async () => {
    const first = ok(await op.get('/admin/v1/accounts?limit=1'));
    await newAccount();
    const rest = await pageThrough('/admin/v1/accounts', 'accounts', 3, first.nextId);
    const ids = [
      first.accounts[0].id,
      ...rest.flatMap((p) => (p.accounts as { id: string }[]).map((a) => a.id)),
    ];
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('filters by plan; a nextId is a position, even one that is no account', async () => {
    const mine = [await newAccount({ plan: 'ENTERPRISE' }), await newAccount({ plan: 'ENTERPRISE' })];
    await newAccount({ plan: 'STARTER' });
    const page = ok(await op.get('/admin/v1/accounts?plan=ENTERPRISE&limit=100'));
    expect(page.accounts.map((a: { id: string }) => a.id)).toEqual(byteOrder(mine.map((a) => a.id)));
    expect(page).toMatchObject({ more: false, nextId: null, limit: 100 });
    const [low, high] = byteOrder(mine.map((a) => a.id)) as [string, string];
    const from = ok(await op.get(`/admin/v1/accounts?plan=ENTERPRISE&nextId=${low}~`));
    expect(from.accounts.map((a: { id: string }) => a.id)).toEqual([high]);
    expect(ok(await op.get('/admin/v1/accounts?nextId=~~~')).accounts).toEqual([]);
  });

  it('defaults to pages of 20', async () => {
    for (let i = 0; i < 21; i++) await newAccount();
    const page = ok(await op.get('/admin/v1/accounts'));
    expect(page).toMatchObject({ limit: 20, more: true });
    expect(page.accounts).toHaveLength(20);
  });

  itRefusesBadQueries(() => '/admin/v1/accounts', [['an unknown plan', 'plan=PLATINUM', 'plan']]);

  it('400 for a NUL in the query', async () => {
    const body = expectValidation(await op.get('/admin/v1/accounts?nextId=a%00b'));
    expect(body.errors[0]).toMatchObject({ location: 'query' });
  });
});
