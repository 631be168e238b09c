import { accounts, apiKeys, campaigns, events, rewards, users } from '@stampcard/db';
import { QUEUE_NAMES } from '@stampcard/jobs';
import { and, count, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, expectErrorShape, inProcess, type Reply } from '../../../test/support/client';
import { uniqueEmail as email, expectValidation, ok, operatorKit, uid } from '../../../test/support/operator';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

const stack = useTestStack({ worker: false });
const { op, asKey, newAccount, newCampaign, newReward, newKey } = operatorKit(stack);

// ---------------------------------------------------------------------------------------------------------
// Helpers (local to this file)

const form = { 'content-type': 'application/x-www-form-urlencoded' };

const campaignRows = async (accountId: string) =>
  (await stack.ctx.db.select({ n: count() }).from(campaigns).where(eq(campaigns.accountId, accountId)))[0]!.n;
const accountRowsNamed = async (name: string) =>
  (await stack.ctx.db.select({ n: count() }).from(accounts).where(eq(accounts.name, name)))[0]!.n;
// Tests in this file run one after another on the file's own database, so a whole-table count is stable.
const allAccountRows = async () => (await stack.ctx.db.select({ n: count() }).from(accounts))[0]!.n;
const endedEvents = (campaignId: string) =>
  stack.ctx.db
    .select()
    .from(events)
    .where(and(eq(events.campaignId, campaignId), eq(events.type, 'CAMPAIGN_ENDED')));

// ---------------------------------------------------------------------------------------------------------

describe('operator authorisation', () => {
  const routes: [string, string][] = [
    ['POST', '/admin/v1/accounts'],
    ['GET', '/admin/v1/accounts'],
    ['GET', '/admin/v1/accounts/acct_x'],
    ['POST', '/admin/v1/accounts/acct_x/users'],
    ['GET', '/admin/v1/accounts/acct_x/users'],
    ['GET', '/admin/v1/users/user_x'],
    ['PATCH', '/admin/v1/users/user_x'],
    ['POST', '/admin/v1/users/user_x/api-keys'],
    ['GET', '/admin/v1/api-keys'],
    ['GET', '/admin/v1/api-keys/key_x'],
    ['DELETE', '/admin/v1/api-keys/key_x'],
    ['POST', '/admin/v1/accounts/acct_x/campaigns'],
    ['GET', '/admin/v1/accounts/acct_x/campaigns'],
    ['GET', '/admin/v1/campaigns/abcdefgh'],
    ['PATCH', '/admin/v1/campaigns/abcdefgh'],
    ['POST', '/admin/v1/campaigns/abcdefgh/rewards'],
    ['GET', '/admin/v1/campaigns/abcdefgh/rewards'],
    ['GET', '/admin/v1/campaigns/abcdefgh/rewards/crew_x'],
    ['PATCH', '/admin/v1/campaigns/abcdefgh/rewards/crew_x'],
    ['GET', '/admin/v1/queues'],
    ['GET', '/admin/v1/no-such-route'],
  ];
  const body = (m: string) => (m === 'POST' || m === 'PATCH' ? { name: 'x', plan: 'GROWTH' } : undefined);
  const call = (method: string, path: string, headers: Record<string, string>) =>
    stack.app.request(path, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body(method) && JSON.stringify(body(method)),
    });
  const asReply = async (res: Response): Promise<Reply> => ({
    status: res.status,
    body: await res.json().catch(() => null),
    headers: res.headers,
  });

  it.each(routes)('%s %s without a token → 403 NOT_AUTHORIZED', async (method, path) => {
    const b = expectErrorShape(await asReply(await call(method, path, {})), 403, 'NOT_AUTHORIZED');
    expect(b.name).toBe('NotAuthorized');
  });

  it.each(routes)('%s %s with a wrong token → 403 NOT_AUTHORIZED', async (method, path) => {
    for (const authorization of [
      `Bearer ${OPERATOR_TOKEN}x`,
      `Bearer ${OPERATOR_TOKEN.slice(0, -1)}`,
      'Bearer sk_not_the_operator_token',
      OPERATOR_TOKEN,
      `Basic ${Buffer.from(`op:${OPERATOR_TOKEN}`).toString('base64')}`,
    ]) {
      expectErrorShape(await asReply(await call(method, path, { authorization })), 403, 'NOT_AUTHORIZED');
    }
  });

  it('an API key of a customer is not an operator token, and a refused request writes nothing', async () => {
    const acct = await newAccount();
    const { key } = await newKey(acct.id);
    const name = `Refused ${uid()}`;
    const refused = await asKey(key).post('/admin/v1/accounts', { name, plan: 'GROWTH' });
    expectErrorShape(refused, 403, 'NOT_AUTHORIZED');
    const anon = await client(inProcess(stack.app)).post('/admin/v1/accounts', { name, plan: 'GROWTH' });
    expectErrorShape(anon, 403, 'NOT_AUTHORIZED');
    expect(await accountRowsNamed(name)).toBe(0);
  });
});

describe('POST /admin/v1/accounts', () => {
  it('creates an account', async () => {
    const name = `Coffee ${uid()}`;
    const r = await op.post('/admin/v1/accounts', {
      name,
      plan: 'STARTER',
      participantQuota: 500,
      rateLimits: { second: 100, minute: 1000, hour: 50_000, concurrency: 10, slowdownAfter: 0 },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^acct_/),
      name,
      plan: 'STARTER',
      participantQuota: 500,
      participantCount: 0,
      rateLimits: { second: 100, minute: 1000, hour: 50_000, concurrency: 10, slowdownAfter: 0 },
      frameAncestors: [],
      createdAt: expect.any(Number),
    });
    expect(Math.abs(r.body.createdAt - Date.now())).toBeLessThan(60_000);
    const [row] = await stack.ctx.db.select().from(accounts).where(eq(accounts.id, r.body.id));
    expect(row).toMatchObject({ name, plan: 'STARTER', participantQuota: 500 });

    const minimal = ok(await op.post('/admin/v1/accounts', { name: `Min ${uid()}`, plan: 'FREE' }));
    expect(minimal).toMatchObject({ plan: 'FREE', participantQuota: null, rateLimits: null });
    expect(minimal.id).not.toBe(r.body.id);
  });

  it.each([
    ['missing name', { plan: 'GROWTH' }, 'name'],
    ['empty name', { name: '', plan: 'GROWTH' }, 'name'],
    ['name over 255 characters', { name: 'n'.repeat(256), plan: 'GROWTH' }, 'name'],
    ['missing plan', { name: 'A' }, 'plan'],
    ['unknown plan', { name: 'A', plan: 'PLATINUM' }, 'plan'],
    ['unknown field', { name: 'A', plan: 'GROWTH', color: 'red' }, 'color'],
    [
      'wrong type of participantQuota',
      { name: 'A', plan: 'GROWTH', participantQuota: '10' },
      'participantQuota',
    ],
    ['negative participantQuota', { name: 'A', plan: 'GROWTH', participantQuota: -1 }, 'participantQuota'],
    ['fractional participantQuota', { name: 'A', plan: 'GROWTH', participantQuota: 1.5 }, 'participantQuota'],
    ['wrong type of name', { name: 42, plan: 'GROWTH' }, 'name'],
    ['zero rate limit', { name: 'A', plan: 'GROWTH', rateLimits: { minute: 0 } }, 'rateLimits.minute'],
    ['unknown rate limit', { name: 'A', plan: 'GROWTH', rateLimits: { day: 5 } }, 'rateLimits.day'],
  ])('400 for %s, and nothing is written', async (_label, input, param) => {
    const before = await allAccountRows();
    expectValidation(await op.post('/admin/v1/accounts', input), param);
    expect(await allAccountRows()).toBe(before);
  });

  it('reports the unknown field by name with its value', async () => {
    const r = await op.post('/admin/v1/accounts', { name: 'A', plan: 'GROWTH', color: 'red' });
    const b = expectValidation(r);
    expect(b.errors).toContainEqual({ location: 'body', param: 'color', value: 'red', msg: 'unknown field' });
  });

  it('400 (not 500) for malformed JSON, a JSON array, and an empty body', async () => {
    const json = { 'content-type': 'application/json' };
    expectValidation(await op.post('/admin/v1/accounts', '{"name": "A", "plan": ', json));
    expectValidation(await op.post('/admin/v1/accounts', '[1,2]', json));
    expectValidation(await op.post('/admin/v1/accounts', 'not json at all', json));
    expectValidation(await op.post('/admin/v1/accounts'));
  });

  it('accepts a form-encoded body, coercing numbers', async () => {
    const name = `Form Shop ${uid()}`;
    const body = new URLSearchParams({
      name,
      plan: 'ENTERPRISE',
      participantQuota: '25',
      'rateLimits[minute]': '50',
      'rateLimits[concurrency]': '4',
    }).toString();
    const r = await op.post('/admin/v1/accounts', body, form);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      name,
      plan: 'ENTERPRISE',
      participantQuota: 25,
      rateLimits: { minute: 50, concurrency: 4 },
    });
    expect(typeof r.body.participantQuota).toBe('number');
    const [row] = await stack.ctx.db.select().from(accounts).where(eq(accounts.id, r.body.id));
    expect(row?.participantQuota).toBe(25);

    const bad = await op.post(
      '/admin/v1/accounts',
      `name=${encodeURIComponent(`F ${uid()}`)}&plan=GROWTH&participantQuota=lots`,
      form,
    );
    expectValidation(bad, 'participantQuota');
    const unknown = await op.post('/admin/v1/accounts', 'name=F&plan=GROWTH&extra=1', form);
    expectValidation(unknown, 'extra');
  });
});

describe('POST /admin/v1/accounts/{id}/users', () => {
  it('adds an ADMIN (email lower-cased) and a MEMBER with campaign access', async () => {
    const acct = await newAccount();
    const c1 = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    const c2 = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    const mixed = `Ada-${uid()}@Example.COM`;
    const admin = await op.post(`/admin/v1/accounts/${acct.id}/users`, { email: mixed, role: 'ADMIN' });
    expect(admin.status).toBe(200);
    expect(admin.body).toEqual({
      id: expect.stringMatching(/^user_/),
      accountId: acct.id,
      email: mixed.toLowerCase(),
      role: 'ADMIN',
      campaignIds: [],
      createdAt: expect.any(Number),
    });

    const member = await op.post(`/admin/v1/accounts/${acct.id}/users`, {
      email: email('m'),
      role: 'MEMBER',
      campaignIds: [c1.id, c1.id],
    });
    expect(member.status).toBe(200);
    expect(member.body).toMatchObject({ role: 'MEMBER', accountId: acct.id, campaignIds: [c1.id] });

    // The access list means what it says: the MEMBER's key sees only c1, the ADMIN's both.
    const memberKey = ok(await op.post(`/admin/v1/users/${member.body.id}/api-keys`)).key;
    const adminKey = ok(await op.post(`/admin/v1/users/${admin.body.id}/api-keys`)).key;
    const seen = (r: Reply) => r.body.campaigns.map((c: { id: string }) => c.id).sort();
    expect(seen(await asKey(memberKey).get('/v1/campaigns'))).toEqual([c1.id]);
    expect(seen(await asKey(adminKey).get('/v1/campaigns'))).toEqual([c1.id, c2.id].sort());
  });

  it('404 for an unknown account', async () => {
    const r = await op.post(`/admin/v1/accounts/acct_nope${uid()}/users`, { email: email(), role: 'ADMIN' });
    expectErrorShape(r, 404, 'NOT_FOUND');
  });

  it('400 for campaignIds of another account or unknown, and no user is written', async () => {
    const mine = await newAccount();
    const theirs = await newAccount();
    const own = await newCampaign(mine.id);
    const foreign = await newCampaign(theirs.id);
    const addr = email('x');
    const r = await op.post(`/admin/v1/accounts/${mine.id}/users`, {
      email: addr,
      role: 'MEMBER',
      campaignIds: [own.id, foreign.id, 'zzzzzzzz'],
    });
    const b = expectValidation(r, 'campaignIds');
    const values = b.errors.map((e: { value: string }) => e.value);
    expect(values).toContain(foreign.id);
    expect(values).toContain('zzzzzzzz');
    expect(values).not.toContain(own.id);
    const rows = await stack.ctx.db.select().from(users).where(eq(users.email, addr));
    expect(rows).toHaveLength(0);
  });

  it('400 for a duplicate email in the same account (case-insensitive); another account may reuse it', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const addr = email('dup');
    ok(await op.post(`/admin/v1/accounts/${acct.id}/users`, { email: addr, role: 'ADMIN' }));
    const again = await op.post(`/admin/v1/accounts/${acct.id}/users`, {
      email: addr.toUpperCase(),
      role: 'MEMBER',
    });
    expectValidation(again, 'email');
    const rows = await stack.ctx.db.select().from(users).where(eq(users.accountId, acct.id));
    expect(rows).toHaveLength(1);
    expect(rows[0]?.role).toBe('ADMIN');
    ok(await op.post(`/admin/v1/accounts/${other.id}/users`, { email: addr, role: 'ADMIN' }));
  });

  it.each([
    ['an invalid email', { email: 'not-an-email', role: 'ADMIN' }, 'email'],
    ['an unknown role', { email: 'a@example.com', role: 'OWNER' }, 'role'],
    [
      'campaignIds not an array',
      { email: 'a@example.com', role: 'MEMBER', campaignIds: 'abc' },
      'campaignIds',
    ],
    ['an unknown field', { email: 'a@example.com', role: 'ADMIN', admin: true }, 'admin'],
  ])('400 for %s', async (_l, input, param) => {
    const acct = await newAccount();
    expectValidation(await op.post(`/admin/v1/accounts/${acct.id}/users`, input), param);
    expect(await stack.ctx.db.select().from(users).where(eq(users.accountId, acct.id))).toHaveLength(0);
  });
});

describe('API keys', () => {
  it('issues a key shown once (only its hash is stored) that works on /v1', async () => {
    const acct = await newAccount();
    const u = ok(await op.post(`/admin/v1/accounts/${acct.id}/users`, { email: email(), role: 'ADMIN' }));
    const r = await op.post(`/admin/v1/users/${u.id}/api-keys`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^key_/),
      userId: u.id,
      key: expect.stringMatching(/^sk_[A-Za-z0-9]{20,}$/),
      keyPrefix: r.body.key.slice(0, 9),
      createdAt: expect.any(Number),
    });
    const [row] = await stack.ctx.db.select().from(apiKeys).where(eq(apiKeys.id, r.body.id));
    expect(row?.keyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(row?.keyHash).not.toContain(r.body.key);
    expect(row?.revokedAt).toBeNull();

    const campaign = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    const list = await asKey(r.body.key).get('/v1/campaigns');
    expect(list.status).toBe(200);
    expect(list.body.campaigns.map((c: { id: string }) => c.id)).toEqual([campaign.id]);

    const second = ok(await op.post(`/admin/v1/users/${u.id}/api-keys`));
    expect(second.key).not.toBe(r.body.key);
    expect(second.id).not.toBe(r.body.id);
  });

  it('404 for an unknown user', async () => {
    expectErrorShape(await op.post(`/admin/v1/users/user_nope${uid()}/api-keys`), 404, 'NOT_FOUND');
  });

  it('revoking a key makes it 403 on /v1; other keys keep working; revoking again is harmless', async () => {
    const acct = await newAccount();
    const a = await newKey(acct.id);
    const b = await newKey(acct.id);
    expect((await asKey(a.key).get('/v1/campaigns')).status).toBe(200);

    const r = await op.delete(`/admin/v1/api-keys/${a.keyId}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: a.keyId, revoked: true });
    const [row] = await stack.ctx.db.select().from(apiKeys).where(eq(apiKeys.id, a.keyId));
    expect(row?.revokedAt).toBeInstanceOf(Date);

    expectErrorShape(await asKey(a.key).get('/v1/campaigns'), 403, 'NOT_AUTHORIZED');
    expect((await asKey(b.key).get('/v1/campaigns')).status).toBe(200);

    const again = await op.delete(`/admin/v1/api-keys/${a.keyId}`);
    expect(again.status).toBe(200);
    expectErrorShape(await asKey(a.key).get('/v1/campaigns'), 403, 'NOT_AUTHORIZED');
  });

  it('404 for revoking an unknown key', async () => {
    expectErrorShape(await op.delete(`/admin/v1/api-keys/key_nope${uid()}`), 404, 'NOT_FOUND');
  });

  it('a key of a FREE account is refused on /v1', async () => {
    const acct = await newAccount({ plan: 'FREE' });
    const { key } = await newKey(acct.id);
    expectErrorShape(await asKey(key).get('/v1/campaigns'), 403, 'NOT_AUTHORIZED');
  });
});

describe('POST /admin/v1/accounts/{id}/campaigns', () => {
  it('creates a DRAFT USD campaign by default', async () => {
    const acct = await newAccount();
    const name = `Prog ${uid()}`;
    const r = await op.post(`/admin/v1/accounts/${acct.id}/campaigns`, { name });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^[a-z0-9]{8}$/),
      name,
      accountId: acct.id,
      status: 'DRAFT',
      currencyISO: 'USD',
      loyaltyActionCount: 0,
      participantCount: 0,
      winnerCount: 0,
      requireRewardApproval: false,
      antiFraud: null,
      pointsConversion: null,
      createdAt: expect.any(Number),
      rewards: [],
    });
    expect(await campaignRows(acct.id)).toBe(1);
  });

  it('takes every setting (currency upper-cased)', async () => {
    const acct = await newAccount();
    const antiFraud = {
      level: 'STRICT',
      blacklist: ['bad@example.com'],
      whitelist: ['ok.example.com'],
      ipThrottle: 3,
    };
    const r = await op.post(`/admin/v1/accounts/${acct.id}/campaigns`, {
      name: 'Euro',
      currencyISO: 'eur',
      status: 'IN_PROGRESS',
      antiFraud,
      requireRewardApproval: true,
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      currencyISO: 'EUR',
      status: 'IN_PROGRESS',
      antiFraud,
      requireRewardApproval: true,
    });

    const viaForm = await op.post(
      `/admin/v1/accounts/${acct.id}/campaigns`,
      'name=Formed&status=COMPLETE&requireRewardApproval=true&antiFraud[level]=OFF&antiFraud[ipThrottle]=2',
      form,
    );
    expect(viaForm.status).toBe(200);
    expect(viaForm.body).toMatchObject({
      name: 'Formed',
      status: 'COMPLETE',
      requireRewardApproval: true,
      antiFraud: { level: 'OFF', ipThrottle: 2 },
    });
  });

  it('404 for an unknown account', async () => {
    const r = await op.post(`/admin/v1/accounts/acct_nope${uid()}/campaigns`, { name: 'x' });
    expectErrorShape(r, 404, 'NOT_FOUND');
  });

  it.each([
    ['a bad currencyISO', { name: 'x', currencyISO: 'US' }, 'currencyISO'],
    ['a numeric currencyISO', { name: 'x', currencyISO: '840' }, 'currencyISO'],
    ['a missing name', {}, 'name'],
    ['an unknown status', { name: 'x', status: 'PAUSED' }, 'status'],
    ['an unknown anti-fraud level', { name: 'x', antiFraud: { level: 'MAX' } }, 'antiFraud.level'],
    [
      'requireRewardApproval as a string',
      { name: 'x', requireRewardApproval: 'yes' },
      'requireRewardApproval',
    ],
    ['an unknown field', { name: 'x', owner: 'me' }, 'owner'],
    [
      'a non-positive threshold',
      { name: 'x', pointsConversion: { metadataKey: 'p', threshold: 0, rewardId: 'crew_x' } },
      'pointsConversion.threshold',
    ],
  ])('400 for %s, and no campaign is written', async (_l, input, param) => {
    const acct = await newAccount();
    expectValidation(await op.post(`/admin/v1/accounts/${acct.id}/campaigns`, input), param);
    expect(await campaignRows(acct.id)).toBe(0);
  });

  it('400 for pointsConversion naming a reward of another campaign, and no campaign is written', async () => {
    const acct = await newAccount();
    const other = await newCampaign(acct.id);
    const foreignReward = await newReward(other.id, { conversionsRequired: 1 });
    const before = await campaignRows(acct.id);
    const r = await op.post(`/admin/v1/accounts/${acct.id}/campaigns`, {
      name: 'Points',
      pointsConversion: { metadataKey: 'points', threshold: 100, rewardId: foreignReward.id },
    });
    const b = expectValidation(r, 'pointsConversion.rewardId');
    expect(b.errors[0].value).toBe(foreignReward.id);
    expect(await campaignRows(acct.id)).toBe(before);
  });
});

describe('GET and PATCH /admin/v1/campaigns/{id}', () => {
  it('GET shows the campaign with settings and whole rewards; 404 when unknown', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id, { requireRewardApproval: true });
    const reward = await newReward(c.id, { couponCode: 'SAVE10', order: 2, metadata: { tier: 'gold' } });
    const r = await op.get(`/admin/v1/campaigns/${c.id}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      id: c.id,
      accountId: acct.id,
      requireRewardApproval: true,
      status: 'DRAFT',
    });
    expect(r.body.rewards).toEqual([reward]);
    expectErrorShape(await op.get('/admin/v1/campaigns/nosuchid'), 404, 'NOT_FOUND');
  });

  it('changes settings and status', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    const reward = await newReward(c.id);
    const r = await op.patch(`/admin/v1/campaigns/${c.id}`, {
      status: 'IN_PROGRESS',
      name: 'Renamed',
      currencyISO: 'gbp',
      pointsConversion: { metadataKey: 'points', threshold: 50, rewardId: reward.id },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      id: c.id,
      status: 'IN_PROGRESS',
      name: 'Renamed',
      currencyISO: 'GBP',
      pointsConversion: { metadataKey: 'points', threshold: 50, rewardId: reward.id },
    });
    expect(r.body.rewards.map((x: { id: string }) => x.id)).toEqual([reward.id]);
    const got = ok(await op.get(`/admin/v1/campaigns/${c.id}`));
    expect(got).toEqual(r.body);

    const cleared = ok(await op.patch(`/admin/v1/campaigns/${c.id}`, { pointsConversion: null }));
    expect(cleared).toMatchObject({ pointsConversion: null, name: 'Renamed', status: 'IN_PROGRESS' });

    const viaForm = await op.patch(`/admin/v1/campaigns/${c.id}`, 'requireRewardApproval=true', form);
    expect(viaForm.status).toBe(200);
    expect(viaForm.body.requireRewardApproval).toBe(true);
  });

  it('404 for an unknown campaign', async () => {
    expectErrorShape(
      await op.patch('/admin/v1/campaigns/nosuchid', { status: 'COMPLETE' }),
      404,
      'NOT_FOUND',
    );
  });

  it('400 for an empty patch, an unknown status and pointsConversion with another campaign’s reward; nothing changes', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    const other = await newCampaign(acct.id);
    const foreign = await newReward(other.id);
    expectValidation(await op.patch(`/admin/v1/campaigns/${c.id}`, {}));
    expectValidation(await op.patch(`/admin/v1/campaigns/${c.id}`, { status: 'ARCHIVED' }), 'status');
    expectValidation(await op.patch(`/admin/v1/campaigns/${c.id}`, { name: '' }), 'name');
    const pc = await op.patch(`/admin/v1/campaigns/${c.id}`, {
      name: 'Should not stick',
      pointsConversion: { metadataKey: 'p', threshold: 1, rewardId: foreign.id },
    });
    expectValidation(pc, 'pointsConversion.rewardId');
    const after = ok(await op.get(`/admin/v1/campaigns/${c.id}`));
    expect(after).toMatchObject({ name: c.name, status: 'IN_PROGRESS', pointsConversion: null });
  });

  it('a DELETED campaign cannot leave DELETED (INVALID_STATE) and takes no new rewards', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    ok(await op.patch(`/admin/v1/campaigns/${c.id}`, { status: 'DELETED' }));
    for (const status of ['IN_PROGRESS', 'DRAFT', 'COMPLETE']) {
      const r = await op.patch(`/admin/v1/campaigns/${c.id}`, { status });
      const b = expectErrorShape(r, 400, 'INVALID_STATE');
      expect(b.name).toBe('InvalidState');
    }
    expect(ok(await op.get(`/admin/v1/campaigns/${c.id}`)).status).toBe('DELETED');
    expect(await endedEvents(c.id)).toHaveLength(0);
    expectErrorShape(
      await op.post(`/admin/v1/campaigns/${c.id}/rewards`, { title: 'late' }),
      400,
      'INVALID_STATE',
    );
    const rs = await stack.ctx.db.select().from(rewards).where(eq(rewards.campaignId, c.id));
    expect(rs).toHaveLength(0);
  });

  it('entering COMPLETE records one CAMPAIGN_ENDED event', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    ok(await op.patch(`/admin/v1/campaigns/${c.id}`, { name: 'Not ending yet' }));
    expect(await endedEvents(c.id)).toHaveLength(0);

    const r = await op.patch(`/admin/v1/campaigns/${c.id}`, { status: 'COMPLETE' });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('COMPLETE');
    const evs = await endedEvents(c.id);
    expect(evs).toHaveLength(1);
    expect(evs[0]!.id).toMatch(/^evt_/);
    expect(evs[0]!.data).toMatchObject({
      campaign: { id: c.id, name: 'Not ending yet', status: 'COMPLETE' },
    });

    // Already COMPLETE: no second event.
    ok(await op.patch(`/admin/v1/campaigns/${c.id}`, { status: 'COMPLETE' }));
    expect(await endedEvents(c.id)).toHaveLength(1);
  });
});

describe('rewards', () => {
  const everyField = () => ({
    title: 'Internal title',
    description: 'A free coffee',
    subdescription: 'Any size',
    instructions: '<p>Post a <b>review</b></p>',
    cta: 'Claim',
    submissionType: 'FORM',
    submissionExampleUrl: 'https://example.com/example',
    submissionFormUrl: 'https://example.com/form',
    submissionFormFields: [
      {
        key: 'url',
        label: 'Review URL',
        placeholder: 'https://',
        type: 'text',
        isRequired: true,
        isVisible: true,
      },
      { key: 'note', label: 'Note', isRequired: false, isVisible: false },
    ],
    submissionFormButtonText: 'Send',
    submissionFormMessages: {
      required: 'Required',
      reCaptchaRequired: 'Captcha please',
      success: 'Thanks',
      error: 'Oops',
      alreadySubmitted: 'Already sent',
    },
    isUnlimited: false,
    limit: 3,
    conversionsRequired: 5,
    limitDuration: 'PER_MONTH',
    numberOfWinners: 10,
    couponCode: 'COFFEE5',
    imageUrl: 'https://example.com/coffee.png',
    order: 1,
    metadata: { sku: 'C-1', points: 5, gift: true, none: null },
  });

  it('every seed field round-trips through POST, GET and PATCH', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    const input = everyField();
    const r = await op.post(`/admin/v1/campaigns/${c.id}/rewards`, input);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: expect.stringMatching(/^crew_/), ...input });
    expect((await op.get(`/admin/v1/campaigns/${c.id}`)).body.rewards).toEqual([r.body]);

    const patch = {
      title: 'New title',
      description: 'Two coffees',
      subdescription: null,
      instructions: 'Just ask',
      cta: 'Get it',
      submissionType: 'URL',
      submissionExampleUrl: 'https://example.com/e2',
      submissionFormUrl: null,
      submissionFormFields: null,
      submissionFormButtonText: null,
      submissionFormMessages: null,
      limit: 7,
      conversionsRequired: 2,
      limitDuration: 'IN_TOTAL',
      numberOfWinners: null,
      couponCode: 'TWO',
      imageUrl: 'https://example.com/two.png',
      order: 4,
      metadata: { sku: 'C-2' },
    };
    const p = await op.patch(`/admin/v1/campaigns/${c.id}/rewards/${r.body.id}`, patch);
    expect(p.status).toBe(200);
    expect(p.body).toEqual({ id: r.body.id, isUnlimited: false, ...patch });
    expect((await op.get(`/admin/v1/campaigns/${c.id}`)).body.rewards).toEqual([p.body]);

    // A single field changes only that field.
    const one = ok(await op.patch(`/admin/v1/campaigns/${c.id}/rewards/${r.body.id}`, { cta: 'Only this' }));
    expect(one).toEqual({ ...p.body, cta: 'Only this' });
  });

  it('defaults, and the public campaign read hides the internal fields', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    const r = ok(await op.post(`/admin/v1/campaigns/${c.id}/rewards`, {}));
    expect(r).toMatchObject({
      isUnlimited: false,
      limit: 1,
      conversionsRequired: 1,
      limitDuration: 'IN_TOTAL',
      numberOfWinners: null,
      order: null,
      metadata: {},
      title: null,
    });
    await newReward(c.id, everyField());
    const { key } = await newKey(acct.id);
    const pub = await asKey(key).get(`/v1/campaign/${c.id}`);
    expect(pub.status).toBe(200);
    expect(pub.body.rewards).toHaveLength(2);
    for (const rw of pub.body.rewards) {
      for (const hidden of ['title', 'order', 'limitDuration', 'numberOfWinners', 'couponCode', 'metadata']) {
        expect(rw).not.toHaveProperty(hidden);
      }
    }
  });

  it('isUnlimited reports limit -1, and back to the stored limit when limited again', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    const r = ok(await op.post(`/admin/v1/campaigns/${c.id}/rewards`, { isUnlimited: true, limit: 4 }));
    expect(r).toMatchObject({ isUnlimited: true, limit: -1 });
    const got = ok(await op.get(`/admin/v1/campaigns/${c.id}`)).rewards[0];
    expect(got).toMatchObject({ isUnlimited: true, limit: -1 });
    const limited = ok(await op.patch(`/admin/v1/campaigns/${c.id}/rewards/${r.id}`, { isUnlimited: false }));
    expect(limited).toMatchObject({ isUnlimited: false, limit: 4 });
    const unl = ok(await op.patch(`/admin/v1/campaigns/${c.id}/rewards/${r.id}`, { isUnlimited: true }));
    expect(unl.limit).toBe(-1);
  });

  it('numberOfWinners needs limitDuration PER_MONTH, on create and on change; nothing is written', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    expectValidation(
      await op.post(`/admin/v1/campaigns/${c.id}/rewards`, { numberOfWinners: 3 }),
      'numberOfWinners',
    );
    expectValidation(
      await op.post(`/admin/v1/campaigns/${c.id}/rewards`, { numberOfWinners: 3, limitDuration: 'IN_TOTAL' }),
      'numberOfWinners',
    );
    expect(await stack.ctx.db.select().from(rewards).where(eq(rewards.campaignId, c.id))).toHaveLength(0);

    const r = ok(
      await op.post(`/admin/v1/campaigns/${c.id}/rewards`, {
        numberOfWinners: 3,
        limitDuration: 'PER_MONTH',
      }),
    );
    expect(r).toMatchObject({ numberOfWinners: 3, limitDuration: 'PER_MONTH' });
    const path = `/admin/v1/campaigns/${c.id}/rewards/${r.id}`;
    expectValidation(await op.patch(path, { limitDuration: 'IN_TOTAL' }), 'numberOfWinners');
    expect(ok(await op.get(`/admin/v1/campaigns/${c.id}`)).rewards[0]).toMatchObject({
      numberOfWinners: 3,
      limitDuration: 'PER_MONTH',
    });
    const plain = ok(await op.patch(path, { limitDuration: 'IN_TOTAL', numberOfWinners: null }));
    expect(plain).toMatchObject({ numberOfWinners: null, limitDuration: 'IN_TOTAL' });
    expectValidation(await op.patch(path, { numberOfWinners: 2 }), 'numberOfWinners');
  });

  it.each([
    ['an unknown submissionType', { submissionType: 'EMAIL' }, 'submissionType'],
    ['a bad url', { imageUrl: 'not a url' }, 'imageUrl'],
    ['limit 0', { limit: 0 }, 'limit'],
    ['conversionsRequired as a string', { conversionsRequired: '2' }, 'conversionsRequired'],
    ['nested metadata', { metadata: { deep: { x: 1 } } }, 'metadata.deep'],
    [
      'an unknown form-field key',
      { submissionFormFields: [{ key: 'a', colour: 'red' }] },
      'submissionFormFields.0.colour',
    ],
    [
      'a prototype form-field key',
      { submissionFormFields: [{ key: '__proto__' }] },
      'submissionFormFields.0.key',
    ],
    [
      'a form-field key constructor',
      { submissionFormFields: [{ key: 'a' }, { key: 'constructor' }] },
      'submissionFormFields.1.key',
    ],
    [
      'a form-field key with brackets',
      { submissionFormFields: [{ key: 'a[b]' }] },
      'submissionFormFields.0.key',
    ],
    ['an empty form-field key', { submissionFormFields: [{ key: '' }] }, 'submissionFormFields.0.key'],
    [
      'a form-field key of 101 letters',
      { submissionFormFields: [{ key: 'k'.repeat(101) }] },
      'submissionFormFields.0.key',
    ],
    [
      'two form fields with one key',
      { submissionFormFields: [{ key: 'url' }, { key: 'note' }, { key: 'url' }] },
      'submissionFormFields.2.key',
    ],
    [
      'a form of 51 fields',
      { submissionFormFields: Array.from({ length: 51 }, (_, i) => ({ key: `f${i}` })) },
      'submissionFormFields',
    ],
    ['an unknown field', { points: 5 }, 'points'],
  ])('POST 400 for %s', async (_l, input, param) => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    expectValidation(await op.post(`/admin/v1/campaigns/${c.id}/rewards`, input), param);
    expect(await stack.ctx.db.select().from(rewards).where(eq(rewards.campaignId, c.id))).toHaveLength(0);
  });

  it('form-field keys: any script, digits, _ and -, up to 50 fields; PATCH holds them to the same rules', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    const fields = [
      { key: 'Straße_1', isRequired: true },
      { key: 'post-url' },
      ...Array.from({ length: 48 }, (_, i) => ({ key: `f${i}` })),
    ];
    const r = ok(
      await op.post(`/admin/v1/campaigns/${c.id}/rewards`, {
        submissionType: 'FORM',
        submissionFormFields: fields,
      }),
    );
    expect(r.submissionFormFields).toEqual(fields);
    const path = `/admin/v1/campaigns/${c.id}/rewards/${r.id}`;
    expectValidation(
      await op.patch(path, { submissionFormFields: [{ key: 'a' }, { key: 'a' }] }),
      'submissionFormFields.1.key',
    );
    expectValidation(
      await op.patch(path, { submissionFormFields: [{ key: 'prototype' }] }),
      'submissionFormFields.0.key',
    );
    expect(ok(await op.get(`/admin/v1/campaigns/${c.id}`)).rewards[0].submissionFormFields).toEqual(fields);
  });

  it('form-encoded reward bodies are coerced', async () => {
    const acct = await newAccount();
    const c = await newCampaign(acct.id);
    const r = await op.post(
      `/admin/v1/campaigns/${c.id}/rewards`,
      'title=Formed&conversionsRequired=3&isUnlimited=true&metadata[tier]=gold',
      form,
    );
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ title: 'Formed', conversionsRequired: 3, isUnlimited: true, limit: -1 });
    expect(r.body.metadata).toEqual({ tier: 'gold' });
  });

  it('404 for a reward of another campaign, an unknown reward or campaign; PATCH {} is 400', async () => {
    const acct = await newAccount();
    const a = await newCampaign(acct.id);
    const b = await newCampaign(acct.id);
    const rb = await newReward(b.id, { title: 'B reward' });
    expectErrorShape(
      await op.patch(`/admin/v1/campaigns/${a.id}/rewards/${rb.id}`, { title: 'hijack' }),
      404,
      'NOT_FOUND',
    );
    expectErrorShape(
      await op.patch(`/admin/v1/campaigns/${a.id}/rewards/crew_nope`, { title: 'x' }),
      404,
      'NOT_FOUND',
    );
    expectErrorShape(await op.post('/admin/v1/campaigns/nosuchid/rewards', { title: 'x' }), 404, 'NOT_FOUND');
    expectValidation(await op.patch(`/admin/v1/campaigns/${b.id}/rewards/${rb.id}`, {}));
    expect(ok(await op.get(`/admin/v1/campaigns/${b.id}`)).rewards[0].title).toBe('B reward');
  });
});

describe('queues', () => {
  it('GET /admin/v1/queues lists every queue with counts that follow it', async () => {
    const r = await op.get('/admin/v1/queues');
    expect(r.status).toBe(200);
    expect(r.body.queues.map((x: { name: string }) => x.name).sort()).toEqual([...QUEUE_NAMES].sort());
    const q = r.body.queues.find((x: { name: string }) => x.name === 'loyalty-action-batches');
    expect(q).toEqual({
      name: 'loyalty-action-batches',
      waiting: expect.any(Number),
      active: expect.any(Number),
      delayed: expect.any(Number),
      failed: expect.any(Number),
      completed: expect.any(Number),
    });

    // No worker runs in this stack: an accepted loyalty action waits in the queue (in a batch job).
    const acct = await newAccount();
    const c = await newCampaign(acct.id, { status: 'IN_PROGRESS' });
    const reward = await newReward(c.id);
    const { key } = await newKey(acct.id);
    const act = await asKey(key).post(`/v1/campaign/${c.id}/loyalty-action`, {
      participantEmail: email('p'),
      rewardId: reward.id,
    });
    expect(act.status).toBe(200);
    // Queued right after the answer (which waits for the COMMIT only).
    const batches = async () =>
      ok(await op.get('/admin/v1/queues')).queues.find(
        (x: { name: string }) => x.name === 'loyalty-action-batches',
      );
    const after = await eventually(batches, (b) => b.waiting > q.waiting);
    expect(after.waiting).toBe(q.waiting + 1);
  });
});

describe('queue dashboard (/admin/queues)', () => {
  const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  const get = (path: string, authorization?: string) =>
    stack.app.request(path, { headers: authorization ? { authorization } : {} });

  it('asks for Basic credentials without them, or with wrong ones', async () => {
    for (const auth of [undefined, basic('op', 'wrong'), basic(OPERATOR_TOKEN, ''), 'Bearer wrong']) {
      for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
        const res = await get(path, auth);
        expect(res.status, `${path} ${auth}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Basic /);
        expect(await res.text()).not.toContain('<html');
      }
    }
  });

  it('serves the HTML board with Basic (any user, token as password) or with the Bearer token', async () => {
    for (const auth of [
      basic('anything', OPERATOR_TOKEN),
      basic('', OPERATOR_TOKEN),
      `Bearer ${OPERATOR_TOKEN}`,
    ]) {
      const res = await get('/admin/queues', auth);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      expect(await res.text()).toMatch(/<html/i);
    }
    const api = await get('/admin/queues/api/queues', basic('x', OPERATOR_TOKEN));
    expect(api.status).toBe(200);
    expect(JSON.stringify(await api.json())).toContain('loyalty-actions');
  });

  it("refuses another site's state-changing requests (403) and bodies that are not JSON (400), adding nothing", async () => {
    const queue = stack.deps.queues.all[0]!;
    const add = `http://stampcard.test/admin/queues/api/queues/${queue.name}/add`;
    const auth = basic('ops', OPERATOR_TOKEN);
    const job = JSON.stringify({ name: 'cross-site', data: {}, options: { repeat: { every: 3_600_000 } } });
    const send = async (headers: Record<string, string>, body = job) => {
      const res = await stack.app.request(add, {
        method: 'POST',
        headers: { authorization: auth, host: 'stampcard.test', ...headers },
        body,
      });
      return { status: res.status, body: await res.json(), headers: res.headers };
    };
    const total = async () => {
      const counts = await queue.getJobCounts();
      return {
        schedulers: await queue.getJobSchedulersCount(),
        jobs: Object.values(counts).reduce((a, b) => a + b, 0),
      };
    };
    const before = await total();
    for (const headers of <Record<string, string>[]>[
      { origin: 'https://evil.example', 'content-type': 'application/json' },
      { origin: 'null', 'content-type': 'text/plain' },
      { origin: 'http://stampcard.test:8080', 'content-type': 'application/json' },
      { 'sec-fetch-site': 'cross-site', 'content-type': 'text/plain' },
      { 'sec-fetch-site': 'same-site', 'content-type': 'application/json' },
      { referer: 'https://evil.example/page', 'content-type': 'application/json' },
    ]) {
      const r = await send(headers);
      const body = expectErrorShape(r, 403, 'NOT_AUTHORIZED');
      expect(body.message, JSON.stringify(headers)).toMatch(/another site/);
      expect(r.headers.get('x-frame-options')).toBe('DENY');
    }
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const r = await send({ origin: 'http://stampcard.test', 'content-type': type });
      const body = expectErrorShape(r, 400, 'VALIDATION_ERROR');
      expect(body.errors[0]).toMatchObject({ location: 'headers', param: 'content-type' });
    }
    expect(await total()).toEqual(before);
    // The dashboard's own page (same Origin, JSON) and a client without Origin (curl, a script) still can.
    const own = await send({ origin: 'http://stampcard.test', 'content-type': 'application/json' });
    expect(own.status).toBe(200);
    const script = await send({ 'content-type': 'application/json' });
    expect(script.status).toBe(200);
    expect((await total()).jobs).toBe(before.jobs + 2);
    for (const j of await queue.getJobs()) if (j?.name === 'cross-site') await j.remove();
  });
});
