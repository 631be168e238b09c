import { apiKeys } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useOperatorKit } from '../../../test/support/operator';

const kit = useOperatorKit();
const { stack, op, asKey, newAccount, newUser, newKey, pageThrough, expectPagedOnce } = kit;
const { itRefusesBadQueries, ok, byteOrder, expectValidation, expectErrorShape } = kit;

/** A key as lists show it, from what its create answered. */
const listed = (k: { id: string; userId: string; keyPrefix: string; createdAt: number }) => ({
  id: k.id,
  userId: k.userId,
  keyPrefix: k.keyPrefix,
  createdAt: k.createdAt,
  revokedAt: null,
});
const issue = async (userId: string) => ok(await op.post(`/admin/v1/users/${userId}/api-keys`));
const ids = (page: { apiKeys: { id: string }[] }) => page.apiKeys.map((k) => k.id);

describe('GET /admin/v1/api-keys/{keyId}', () => {
  it('answers the key as lists show it: its prefix, never the key nor its hash', async () => {
    const acct = await newAccount();
    const u = await newUser(acct.id);
    const created = await issue(u.id);
    const got = ok(await op.get(`/admin/v1/api-keys/${created.id}`));
    expect(got).toEqual(listed(created));
    const [row] = await stack.ctx.db.select().from(apiKeys).where(eq(apiKeys.id, created.id));
    expect(JSON.stringify(got)).not.toContain(created.key);
    expect(JSON.stringify(got)).not.toContain(row!.keyHash);
  });

  it('404 NOT_FOUND for an unknown key; 400 for an id past its bounds', async () => {
    const body = expectErrorShape(await op.get('/admin/v1/api-keys/key_nope'), 404, 'NOT_FOUND');
    expect(body.message).toBe('API key key_nope does not exist');
    expectValidation(await op.get(`/admin/v1/api-keys/${'k'.repeat(65)}`), 'keyId');
  });
});

describe('GET /admin/v1/api-keys', () => {
  it('finds a leaked key by its first characters, which is then revoked and shows as revoked', async () => {
    const acct = await newAccount();
    const leaked = await newKey(acct.id);
    const kept = await newKey(acct.id);
    expect(ok(await asKey(leaked.key).get('/v1/campaigns')).campaigns).toEqual([]);

    // What an operator has: the start of the key, seen in a log or a leak.
    const found = ok(await op.get(`/admin/v1/api-keys?keyPrefix=${leaked.key.slice(0, 9)}`));
    expect(found.apiKeys).toHaveLength(1);
    expect(found.apiKeys[0]).toMatchObject({ id: leaked.keyId, userId: leaked.user.id, revokedAt: null });
    expect(JSON.stringify(found)).not.toContain(leaked.key);

    ok(await op.delete(`/admin/v1/api-keys/${found.apiKeys[0].id}`));
    expectErrorShape(await asKey(leaked.key).get('/v1/campaigns'), 403, 'NOT_AUTHORIZED');
    expect(ok(await asKey(kept.key).get('/v1/campaigns')).campaigns).toEqual([]);

    const revoked = ok(await op.get(`/admin/v1/api-keys?accountId=${acct.id}&revoked=true`));
    expect(ids(revoked)).toEqual([leaked.keyId]);
    expect(revoked.apiKeys[0].revokedAt).toEqual(expect.any(Number));
    expect(ok(await op.get(`/admin/v1/api-keys/${leaked.keyId}`))).toEqual(revoked.apiKeys[0]);
    const inUse = ok(await op.get(`/admin/v1/api-keys?accountId=${acct.id}&revoked=false`));
    expect(ids(inUse)).toEqual([kept.keyId]);
  });

  it("filters by account (its users' keys only) and by user, and pages by id", async () => {
    const acct = await newAccount();
    const other = await newAccount();
    await newKey(other.id);
    const a = await newUser(acct.id);
    const b = await newUser(acct.id, { role: 'MEMBER' });
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await issue(a.id));
    for (let i = 0; i < 2; i++) made.push(await issue(b.id));

    await expectPagedOnce(`/admin/v1/api-keys?accountId=${acct.id}`, 'apiKeys', 2, made.map(listed));

    const ofB = ok(await op.get(`/admin/v1/api-keys?userId=${b.id}`));
    expect(ids(ofB)).toEqual(byteOrder(made.slice(3).map((k) => k.id)));
    // Filters combine: a user of another account has none of this account's keys.
    expect(ok(await op.get(`/admin/v1/api-keys?accountId=${other.id}&userId=${b.id}`)).apiKeys).toEqual([]);
  });

  it('pages through every key, each once', async () => {
    const acct = await newAccount();
    const u = await newUser(acct.id);
    for (let i = 0; i < 3; i++) await issue(u.id);
    const pages = await pageThrough('/admin/v1/api-keys', 'apiKeys', 2);
    const seen = pages.flatMap((p) => p.apiKeys.map((k: { id: string }) => k.id));
    const stored = await stack.ctx.db.select({ id: apiKeys.id }).from(apiKeys);
    expect(seen).toEqual(byteOrder(stored.map((k) => k.id)));
  });

  it('a keyPrefix is a prefix, never a pattern: `_` matches only itself', async () => {
    const acct = await newAccount();
    const { keyId, key } = await newKey(acct.id);
    const count = async (prefix: string) =>
      ok(await op.get(`/admin/v1/api-keys?accountId=${acct.id}&keyPrefix=${prefix}`)).apiKeys.length;
    expect(await count('sk_')).toBe(1);
    expect(await count('s')).toBe(1);
    expect(await count(key.slice(0, 5))).toBe(1);
    // As a LIKE pattern `s_` would match `sk`; as a prefix it matches nothing.
    expect(await count('s_')).toBe(0);
    expect(await count(`${key.slice(0, 8)}${key[8] === 'A' ? 'B' : 'A'}`)).toBe(0);
    expect(ids(ok(await op.get(`/admin/v1/api-keys?keyPrefix=${key.slice(0, 9)}`)))).toEqual([keyId]);
  });

  it('404 for an unknown account or user in the filters', async () => {
    expectErrorShape(await op.get('/admin/v1/api-keys?accountId=acct_nope'), 404, 'NOT_FOUND');
    expectErrorShape(await op.get('/admin/v1/api-keys?userId=user_nope'), 404, 'NOT_FOUND');
  });

  it('400 for a whole key as keyPrefix (a key never travels in a URL)', async () => {
    const acct = await newAccount();
    const { key } = await newKey(acct.id);
    const body = expectValidation(await op.get(`/admin/v1/api-keys?keyPrefix=${key}`), 'keyPrefix');
    expect(body.message).toMatch(/first 1 to 9 characters/);
  });

  itRefusesBadQueries(
    () => '/admin/v1/api-keys',
    [
      ['a keyPrefix of 10 characters', 'keyPrefix=sk_abcdefg', 'keyPrefix'],
      ['a keyPrefix with a LIKE wildcard', 'keyPrefix=sk%25', 'keyPrefix'],
      ['an empty keyPrefix', 'keyPrefix=', 'keyPrefix'],
      ['revoked that is no boolean', 'revoked=yes', 'revoked'],
      ['an accountId over 64 characters', `accountId=${'a'.repeat(65)}`, 'accountId'],
      ['a key instead of a keyPrefix', 'key=sk_x', 'key'],
    ],
  );

  it('400 for a NUL in a filter', async () => {
    expectValidation(await op.get('/admin/v1/api-keys?userId=user%00'));
  });
});
