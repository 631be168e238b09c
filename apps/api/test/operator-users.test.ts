import { users } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Reply } from '../../../test/support/client';
import { useOperatorKit } from '../../../test/support/operator';

const kit = useOperatorKit();
const { stack, op, asKey, newAccount, newCampaign, newUser, newKey, expectPagedOnce } = kit;
const { itRefusesBadQueries, ok, byteOrder, uniqueEmail, expectValidation, expectErrorShape } = kit;

const storedUser = async (id: string) => (await stack.ctx.db.select().from(users).where(eq(users.id, id)))[0];
const seen = (r: Reply) =>
  ok(r)
    .campaigns.map((c: { id: string }) => c.id)
    .sort();

describe('GET /admin/v1/users/{userId}', () => {
  it('answers the user as its create did', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    const created = await newUser(acct.id, { role: 'MEMBER', campaignIds: [c.id] });
    expect(ok(await op.get(`/admin/v1/users/${created.id}`))).toEqual(created);
  });

  it('404 NOT_FOUND for an unknown user; 400 for an id past its bounds', async () => {
    const body = expectErrorShape(await op.get('/admin/v1/users/user_nope'), 404, 'NOT_FOUND');
    expect(body.message).toBe('User user_nope does not exist');
    expectValidation(await op.get(`/admin/v1/users/${'u'.repeat(65)}`), 'userId');
    expectValidation(await op.get('/admin/v1/users/user%00x'));
  });
});

describe('GET /admin/v1/accounts/{accountId}/users', () => {
  it("pages through the account's users only, by id, each as its create answered it", async () => {
    const acct = await newAccount();
    const other = await newAccount();
    await newUser(other.id);
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await newUser(acct.id, { role: i % 2 ? 'MEMBER' : 'ADMIN' }));
    await expectPagedOnce(`/admin/v1/accounts/${acct.id}/users`, 'users', 2, made);
  });

  it('filters by role and by email (any case)', async () => {
    const acct = await newAccount();
    const admin = await newUser(acct.id, { role: 'ADMIN' });
    const members = [await newUser(acct.id, { role: 'MEMBER' }), await newUser(acct.id, { role: 'MEMBER' })];
    const path = `/admin/v1/accounts/${acct.id}/users`;
    const byRole = ok(await op.get(`${path}?role=MEMBER`));
    expect(byRole.users.map((u: { id: string }) => u.id)).toEqual(byteOrder(members.map((u) => u.id)));
    const byEmail = ok(await op.get(`${path}?email=${encodeURIComponent(admin.email.toUpperCase())}`));
    expect(byEmail).toEqual({ users: [admin], limit: 20, nextId: null, more: false });
    expect(ok(await op.get(`${path}?email=${uniqueEmail()}`)).users).toEqual([]);
    expect(ok(await op.get(`${path}?role=ADMIN&email=${members[0].email}`)).users).toEqual([]);
  });

  it('404 for an unknown account', async () => {
    expectErrorShape(await op.get('/admin/v1/accounts/acct_nope/users'), 404, 'NOT_FOUND');
  });

  itRefusesBadQueries(
    async () => `/admin/v1/accounts/${(await newAccount()).id}/users`,
    [
      ['an unknown role', 'role=OWNER', 'role'],
      ['an email that is not one', 'email=nope', 'email'],
      ['a filter this list has not', 'accountId=x', 'accountId'],
    ],
  );
});

describe('PATCH /admin/v1/users/{userId}', () => {
  it("changes a MEMBER's campaign access and role; its key follows at once", async () => {
    const acct = await newAccount();
    const c1 = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    const c2 = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    const { user, key } = await newKey(acct.id, { role: 'MEMBER', campaignIds: [c1.id] });
    const api = asKey(key);
    expect(seen(await api.get('/v1/campaigns'))).toEqual([c1.id]);

    const path = `/admin/v1/users/${user.id}`;
    const moved = ok(await op.patch(path, { campaignIds: [c2.id, c2.id] }));
    expect(moved).toEqual({ ...user, campaignIds: [c2.id] });
    expect(seen(await api.get('/v1/campaigns'))).toEqual([c2.id]);
    expectErrorShape(await api.get(`/v1/campaign/${c1.id}`), 403, 'NOT_AUTHORIZED');

    const admin = ok(await op.patch(path, { role: 'ADMIN' }));
    expect(admin).toEqual({ ...moved, role: 'ADMIN' });
    expect(seen(await api.get('/v1/campaigns'))).toEqual([c1.id, c2.id].sort());

    const none = ok(await op.patch(path, { role: 'MEMBER', campaignIds: [] }));
    expect(none).toMatchObject({ role: 'MEMBER', campaignIds: [] });
    expect(seen(await api.get('/v1/campaigns'))).toEqual([]);
    expect(ok(await op.get(path))).toEqual(none);
  });

  it('takes a form-encoded body', async () => {
    const acct = await newAccount();
    const u = await newUser(acct.id, { role: 'MEMBER' });
    const r = await op.patch(`/admin/v1/users/${u.id}`, 'role=ADMIN', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(ok(r)).toEqual({ ...u, role: 'ADMIN' });
  });

  it('404 for an unknown user', async () => {
    expectErrorShape(await op.patch('/admin/v1/users/user_nope', { role: 'ADMIN' }), 404, 'NOT_FOUND');
  });

  it('400 for campaigns of another account or unknown, naming them; nothing changes', async () => {
    const acct = await newAccount();
    const theirs = await newAccount();
    const own = await newCampaign(acct.id);
    const foreign = await newCampaign(theirs.id);
    const u = await newUser(acct.id, { role: 'MEMBER', campaignIds: [own.id] });
    const r = await op.patch(`/admin/v1/users/${u.id}`, {
      role: 'ADMIN',
      campaignIds: [own.id, foreign.id, 'zzzzzzzz'],
    });
    const body = expectValidation(r, 'campaignIds');
    expect(body.errors.map((e: { value: string }) => e.value).sort()).toEqual(
      [foreign.id, 'zzzzzzzz'].sort(),
    );
    expect(await storedUser(u.id)).toMatchObject({ role: 'MEMBER', campaignIds: [own.id] });
  });

  it.each([
    ['an empty body', {}, undefined],
    ['an unknown role', { role: 'OWNER' }, 'role'],
    ['an email (not changeable)', { email: 'new@example.com' }, 'email'],
    ['an accountId (not changeable)', { accountId: 'acct_x' }, 'accountId'],
    ['campaignIds not an array', { campaignIds: 'abc' }, 'campaignIds'],
    ['an empty campaign id', { campaignIds: [''] }, 'campaignIds.0'],
    ['a campaign id over 64 characters', { campaignIds: ['c'.repeat(65)] }, 'campaignIds.0'],
    [
      'over 1,000 campaign ids',
      { campaignIds: Array.from({ length: 1001 }, (_, i) => `c${i}`) },
      'campaignIds',
    ],
    ['a NUL in a campaign id', { campaignIds: ['a\u0000b'] }, 'campaignIds.0'],
  ])('400 for %s; nothing changes', async (_label, input, param) => {
    const acct = await newAccount();
    const u = await newUser(acct.id, { role: 'MEMBER' });
    expectValidation(await op.patch(`/admin/v1/users/${u.id}`, input), param);
    expect(await storedUser(u.id)).toMatchObject({ role: 'MEMBER', campaignIds: [] });
  });

  it('400 for prototype keys and malformed JSON; nothing changes', async () => {
    const acct = await newAccount();
    const u = await newUser(acct.id, { role: 'MEMBER' });
    const path = `/admin/v1/users/${u.id}`;
    const json = { 'content-type': 'application/json' };
    expectValidation(await op.patch(path, '{"__proto__":{"role":"ADMIN"}}', json));
    expectValidation(await op.patch(path, '{"role":"ADMIN","constructor":{"prototype":{}}}', json));
    expectValidation(await op.patch(path, '{"role": "ADMIN"', json));
    expectValidation(
      await op.patch(path, '__proto__[role]=ADMIN', { 'content-type': 'application/x-www-form-urlencoded' }),
    );
    expect(await storedUser(u.id)).toMatchObject({ role: 'MEMBER' });
  });
});
