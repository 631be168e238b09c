import { EVENT_SCHEMAS, type EventData } from '@stampcard/core';
import { accounts, campaigns, events, loyaltyActions, participantRewards, participants } from '@stampcard/db';
import { and, asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, expectErrorShape, inProcess, type Reply } from '../../../test/support/client';
import { makeCampaign, makeUserWithKey, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { actionJob } from '../../../test/support/jobs';
import { fingerprint, refusals } from '../../../test/support/refused';
import { useTestStack } from '../../../test/support/use';

const stack = useTestStack();
const expectRefused = refusals(stack);

type World = Awaited<ReturnType<typeof makeWorld>>;
type Issue = { location: string; param: string; value: unknown; msg: string };

const api = (key?: string) => client(inProcess(stack.app), key);
const at = (w: World, campaignId = w.campaign.id) => `/v1/campaign/${campaignId}`;
const one = (w: World, idOrEmail: string) => `${at(w)}/participant/${encodeURIComponent(idOrEmail)}`;

/** A string body is sent as raw JSON text (so keys such as `__proto__` arrive as written). */
const JSON_TYPE = { 'content-type': 'application/json' };
const add = (w: World, body: unknown, campaignId = w.campaign.id) =>
  api(w.key).post(`${at(w, campaignId)}/participant`, body, JSON_TYPE);
const patch = (w: World, idOrEmail: string, body: unknown) =>
  api(w.key).patch(one(w, idOrEmail), body, JSON_TYPE);
const remove = (w: World, idOrEmail: string) => api(w.key).delete(one(w, idOrEmail));
const list = (w: World, query = '') => api(w.key).get(`${at(w)}/participants${query ? `?${query}` : ''}`);

/** Adds a participant and answers it (200 expected). */
async function added(w: World, body: Record<string, unknown> = {}) {
  const r = await add(w, { email: uniqueEmail(), ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { id: string; email: string; metadata: Record<string, unknown> } & Record<string, any>;
}

/** Triggers one loyalty action and waits until the worker has applied it. */
async function act(w: World, email: string) {
  const r = await api(w.key).post(`${at(w)}/loyalty-action?wait=true`, {
    participantEmail: email,
    rewardId: w.reward.id,
  });
  expect(r.body.action?.status, JSON.stringify(r.body)).toBe('APPLIED');
  return r.body.action as { id: string; participantId: string };
}

const params = (body: { errors: Issue[] }) => body.errors.map((e) => e.param);

async function campaignRow(w: World) {
  const [row] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
  return row!;
}

async function accountCount(w: World) {
  const [row] = await stack.ctx.db.select().from(accounts).where(eq(accounts.id, w.account.id));
  return row!.participantCount;
}

/** The campaign's events of a type, oldest first, each parsed with the schema of its type. */
async function eventsOf<T extends 'NEW_PARTICIPANT_ADDED' | 'PARTICIPANT_UPDATED'>(
  w: World,
  type: T,
): Promise<EventData<T>[]> {
  const rows = await stack.ctx.db
    .select()
    .from(events)
    .where(and(eq(events.campaignId, w.campaign.id), eq(events.type, type)))
    .orderBy(asc(events.seq));
  return rows.map((r) => EVENT_SCHEMAS[type].parse(r.data) as EventData<T>);
}

/** Every way a caller can fail to reach `send`'s campaign: each a 403 that writes nothing. */
async function expectForbidden(w: World, send: (key: string | undefined) => Promise<Reply>) {
  const other = await makeWorld(stack.ctx);
  const member = await makeUserWithKey(stack.ctx, w.account.id, { role: 'MEMBER', campaignIds: [] });
  const b = await expectRefused(() => send(other.key), 403, 'NOT_AUTHORIZED');
  expect(b.message).toMatch(/another account/);
  await expectRefused(() => send(member.key), 403, 'NOT_AUTHORIZED');
  await expectRefused(() => send(undefined), 403, 'NOT_AUTHORIZED');
}

describe('POST /v1/campaign/{id}/participant', () => {
  it('adds a participant (source DIRECT) with every field, counts it and records NEW_PARTICIPANT_ADDED', async () => {
    const w = await makeWorld(stack.ctx);
    const email = uniqueEmail('Ada');
    const r = await add(w, {
      email: email.toUpperCase(),
      firstName: 'Ada',
      lastName: 'Lovelace',
      ipAddress: '203.0.113.7',
      fingerprint: 'fp-123',
      metadata: { plan: 'pro', seats: 3, trial: false, ref: null },
      notes: 'Met at the conference',
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      email: email.toLowerCase(),
      firstName: 'Ada',
      lastName: 'Lovelace',
      loyaltyActionSource: 'DIRECT',
      loyaltyActionCount: 0,
      isWinner: false,
      fraudRiskLevel: 'LOW',
      notes: 'Met at the conference',
      metadata: { plan: 'pro', seats: 3, trial: false, ref: null },
      rewards: [],
      rank: 1,
      monthlyRank: 0,
    });
    expect(r.body.id).not.toContain('@');
    const [row] = await stack.ctx.db.select().from(participants).where(eq(participants.id, r.body.id));
    expect(row).toMatchObject({ ipAddress: '203.0.113.7', fingerprint: 'fp-123' });
    // The same object as the read answers.
    expect((await api(w.key).get(one(w, r.body.id))).body).toEqual(r.body);
    expect(await campaignRow(w)).toMatchObject({ participantCount: 1 });
    expect(await accountCount(w)).toBe(1);
    const added = await eventsOf(w, 'NEW_PARTICIPANT_ADDED');
    expect(added).toHaveLength(1);
    expect(added[0]!.participant).toMatchObject({ id: r.body.id, loyaltyActionSource: 'DIRECT' });
  });

  it('is idempotent on the email: an existing participant is answered unchanged, and nothing is written', async () => {
    const w = await makeWorld(stack.ctx);
    const first = await added(w, { firstName: 'Ada', metadata: { points: 1 } });
    const before = await fingerprint(stack.ctx.db);
    const again = await add(w, {
      email: first.email.toUpperCase(),
      firstName: 'Someone else',
      metadata: { points: 99 },
      notes: 'ignored',
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first);
    expect(await fingerprint(stack.ctx.db)).toEqual(before);
    // Concurrent adds of one new email make one participant.
    const email = uniqueEmail('race');
    const replies = await Promise.all(Array.from({ length: 10 }, () => add(w, { email })));
    expect(replies.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(replies.map((r) => r.body.id)).size).toBe(1);
    expect(await campaignRow(w)).toMatchObject({ participantCount: 2 });
    expect(await eventsOf(w, 'NEW_PARTICIPANT_ADDED')).toHaveLength(2);
  });

  it('accepts a form-encoded body', async () => {
    const w = await makeWorld(stack.ctx);
    const email = uniqueEmail('form');
    const r = await api(w.key).post(
      `${at(w)}/participant`,
      `email=${encodeURIComponent(email)}&firstName=Grace&metadata[source]=form`,
      { 'content-type': 'application/x-www-form-urlencoded' },
    );
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ email, firstName: 'Grace', metadata: { source: 'form' } });
  });

  it('adds to DRAFT and IN_PROGRESS campaigns; COMPLETE is 400 INVALID_STATE, DELETED 404', async () => {
    const w = await makeWorld(stack.ctx);
    const draft = await makeCampaign(stack.ctx, w.account.id, { status: 'DRAFT' });
    expect((await add(w, { email: uniqueEmail() }, draft.id)).status).toBe(200);
    const complete = await makeCampaign(stack.ctx, w.account.id, { status: 'COMPLETE' });
    const b = await expectRefused(() => add(w, { email: uniqueEmail() }, complete.id), 400, 'INVALID_STATE');
    expect(b.message).toMatch(/COMPLETE/);
    const deleted = await makeCampaign(stack.ctx, w.account.id, { status: 'DELETED' });
    await expectRefused(() => add(w, { email: uniqueEmail() }, deleted.id), 404, 'NOT_FOUND');
    await expectRefused(() => add(w, { email: uniqueEmail() }, 'nosuchcampaign'), 404, 'NOT_FOUND');
  });

  it('refuses a new participant past the quota with 402 (an existing one is still answered)', async () => {
    const w = await makeWorld(stack.ctx, { account: { participantQuota: 1 } });
    const first = await added(w);
    const b = await expectRefused(() => add(w, { email: uniqueEmail() }), 402, 'USAGE_LIMIT');
    expect(b.name).toBe('UsageLimit');
    expect((await add(w, { email: first.email })).body.id).toBe(first.id);
  });

  it('admits exactly one of 10 parallel new participants at quota - 1', async () => {
    const w = await makeWorld(stack.ctx, { account: { participantQuota: 3 } });
    await added(w);
    await added(w);
    const replies = await Promise.all(Array.from({ length: 10 }, () => add(w, { email: uniqueEmail('q') })));
    const ok = replies.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 200)) expectErrorShape(r, 402, 'USAGE_LIMIT');
    expect(await stack.ctx.db.$count(participants, eq(participants.campaignId, w.campaign.id))).toBe(3);
    expect(await campaignRow(w)).toMatchObject({ participantCount: 3 });
    expect(await accountCount(w)).toBe(3);
    expect(await eventsOf(w, 'NEW_PARTICIPANT_ADDED')).toHaveLength(3);
  });

  it('refuses bad input with 400 naming the field, and writes nothing', async () => {
    const w = await makeWorld(stack.ctx);
    const tooManyKeys = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i]));
    for (const [body, param] of [
      [{}, 'email'],
      [{ email: 'not-an-email' }, 'email'],
      [{ email: `${'a'.repeat(250)}@example.com` }, 'email'],
      [{ email: uniqueEmail(), firstName: 'x'.repeat(256) }, 'firstName'],
      [{ email: uniqueEmail(), notes: 'x'.repeat(10_001) }, 'notes'],
      [{ email: uniqueEmail(), ipAddress: 'here' }, 'ipAddress'],
      [{ email: uniqueEmail(), metadata: { nested: { no: 1 } } }, 'metadata.nested'],
      [{ email: uniqueEmail(), metadata: tooManyKeys }, 'metadata'],
      [{ email: uniqueEmail(), metadata: { big: 'x'.repeat(16 * 1024) } }, 'metadata'],
      [{ email: uniqueEmail(), colour: 'red' }, 'colour'],
      [`{"email":"${uniqueEmail()}","metadata":{"__proto__":{"polluted":true}}}`, 'metadata.__proto__'],
      [`{"email":"${uniqueEmail()}","metadata":{"constructor":1}}`, 'metadata.constructor'],
    ] as const) {
      const b = await expectRefused(() => add(w, body), 400, 'VALIDATION_ERROR');
      expect(params(b).includes(param), JSON.stringify(b.errors)).toBe(true);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses callers who cannot reach the campaign with 403', async () => {
    const w = await makeWorld(stack.ctx);
    await expectForbidden(w, (key) => api(key).post(`${at(w)}/participant`, { email: uniqueEmail() }));
  });
});

describe('POST and PATCH /v1/campaign/{id}/participant/{idOrEmail}', () => {
  it('changes the profile by email or id, with POST or PATCH, and records PARTICIPANT_UPDATED', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await added(w, { firstName: 'Ada', notes: 'old' });
    const r = await api(w.key).post(one(w, p.email.toUpperCase()), { lastName: 'Lovelace', notes: null });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: p.id, firstName: 'Ada', lastName: 'Lovelace', notes: null, rank: 1 });
    expect((await api(w.key).get(one(w, p.id))).body).toEqual(r.body);

    const r2 = await patch(w, p.id, { firstName: null, lastName: 'Byron' });
    expect(r2.body).toMatchObject({ firstName: null, lastName: 'Byron' });

    const updates = await eventsOf(w, 'PARTICIPANT_UPDATED');
    expect(updates.map((e) => e.changed)).toEqual([
      ['lastName', 'notes'],
      ['firstName', 'lastName'],
    ]);
    expect(updates[1]).toMatchObject({
      participant: { id: p.id, firstName: null, lastName: 'Byron' },
      campaign: { id: w.campaign.id, name: w.campaign.name },
    });
  });

  it('records no event when no value changed', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await added(w, { firstName: 'Ada', metadata: { a: 1 } });
    const r = await patch(w, p.id, {
      firstName: 'Ada',
      email: p.email.toUpperCase(),
      metadata: { a: 1, gone: null },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ firstName: 'Ada', email: p.email, metadata: { a: 1 } });
    expect(await eventsOf(w, 'PARTICIPANT_UPDATED')).toEqual([]);
  });

  it('merges metadata: new keys added, given keys replaced, null deletes', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await added(w, { metadata: { a: 1, b: 'x', c: true, keep: 'me' } });
    const r = await patch(w, p.email, { metadata: { b: 'y', c: null, d: 2, absent: null } });
    expect(r.status).toBe(200);
    expect(r.body.metadata).toEqual({ a: 1, b: 'y', d: 2, keep: 'me' });
    const [row] = await stack.ctx.db.select().from(participants).where(eq(participants.id, p.id));
    expect(row!.metadata).toEqual({ a: 1, b: 'y', d: 2, keep: 'me' });
    expect((await eventsOf(w, 'PARTICIPANT_UPDATED')).map((e) => e.changed)).toEqual([['metadata']]);
  });

  it('adds metadataIncrement to stored numbers; an absent or null key counts from 0', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await added(w, { metadata: { points: 5, level: null, price: 0.1, tier: 'gold' } });
    const r = await patch(w, p.id, {
      metadataIncrement: { points: 25, level: 1, price: 0.2, fresh: -3 },
      metadata: { tier: 'platinum' },
    });
    expect(r.status).toBe(200);
    expect(r.body.metadata).toEqual({ points: 30, level: 1, price: 0.3, fresh: -3, tier: 'platinum' });
    const r2 = await patch(w, p.id, { metadataIncrement: { points: -40.5 } });
    expect(r2.body.metadata.points).toBe(-10.5);
    // Form bodies send numbers as strings.
    const r3 = await api(w.key).patch(one(w, p.id), 'metadataIncrement[points]=10.5', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(r3.status).toBe(200);
    expect(r3.body.metadata.points).toBe(0);
  });

  it('loses none of 20 concurrent increments', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await added(w, { metadata: { points: 100 } });
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0
          ? patch(w, p.id, { metadataIncrement: { points: 1, visits: 1 } })
          : api(w.key).post(one(w, p.email), { metadataIncrement: { points: 1, visits: 1 } }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    const seen = replies.map((r) => r.body.metadata.points).sort((a, b) => a - b);
    // Each request saw its own increment land: the answers are 101..120, each once.
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => 101 + i));
    const [row] = await stack.ctx.db.select().from(participants).where(eq(participants.id, p.id));
    expect(row!.metadata).toEqual({ points: 120, visits: 20 });
    expect(await eventsOf(w, 'PARTICIPANT_UPDATED')).toHaveLength(20);
  });

  it('changes the email (normalised); the old one no longer finds the participant', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await added(w);
    const next = uniqueEmail('Renamed');
    const r = await patch(w, p.email, { email: next.toUpperCase() });
    expect(r.status).toBe(200);
    expect(r.body.email).toBe(next.toLowerCase());
    expect((await api(w.key).get(one(w, next))).body.id).toBe(p.id);
    expectErrorShape(await api(w.key).get(one(w, p.email)), 404, 'NOT_FOUND');
  });

  it("refuses another participant's email with 400 naming email, and writes nothing", async () => {
    const w = await makeWorld(stack.ctx);
    const a = await added(w);
    const b = await added(w);
    const body = await expectRefused(
      () => patch(w, a.id, { email: b.email.toUpperCase(), firstName: 'X' }),
      400,
      'VALIDATION_ERROR',
    );
    expect(params(body)).toEqual(['email']);
    expect(body.message).toMatch(/another participant/);
  });

  it('refuses an increment of a stored value that is not a number, naming the key; nothing written', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await added(w, { metadata: { tier: 'gold', vip: true, points: 1 } });
    const body = await expectRefused(
      () => patch(w, p.id, { metadataIncrement: { points: 1, tier: 1, vip: 2 }, lastName: 'X' }),
      400,
      'VALIDATION_ERROR',
    );
    expect(params(body)).toEqual(['metadataIncrement.tier', 'metadataIncrement.vip']);
    expect(body.errors[0]).toMatchObject({ value: 'gold', location: 'body' });
  });

  it('refuses a change that would take the stored metadata past its limits; nothing written', async () => {
    const w = await makeWorld(stack.ctx);
    const ninety = Object.fromEntries(Array.from({ length: 90 }, (_, i) => [`k${i}`, i]));
    const p = await added(w, { metadata: ninety });
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`n${i}`, i]));
    const keys = await expectRefused(() => patch(w, p.id, { metadata: eleven }), 400, 'VALIDATION_ERROR');
    expect(keys.errors[0]).toMatchObject({ param: 'metadata', msg: expect.stringMatching(/101 keys/) });
    const viaIncrement = await expectRefused(
      () =>
        patch(w, p.id, {
          metadata: { n0: 0, n1: 1, n2: 2, n3: 3, n4: 4, n5: 5, n6: 6, n7: 7, n8: 8, n9: 9 },
          metadataIncrement: { more: 1 },
        }),
      400,
      'VALIDATION_ERROR',
    );
    expect(params(viaIncrement)).toEqual(['metadata']);
    // Ten more keys fit, and deleting one makes room for another.
    expect(
      (await patch(w, p.id, { metadata: { ...Object.fromEntries(Object.entries(eleven).slice(0, 10)) } }))
        .status,
    ).toBe(200);
    expect((await patch(w, p.id, { metadata: { k0: null, extra: 1 } })).status).toBe(200);

    const big = await added(w, { metadata: { a: 'x'.repeat(8000), b: 'y'.repeat(8000) } });
    const size = await expectRefused(
      () => patch(w, big.id, { metadata: { c: 'z'.repeat(1000) } }),
      400,
      'VALIDATION_ERROR',
    );
    expect(size.errors[0].msg).toMatch(/bytes as JSON/);
    // A sum past the largest double is refused too.
    const huge = await added(w, { metadata: { n: 1e308 } });
    const range = await expectRefused(
      () => patch(w, huge.id, { metadataIncrement: { n: 1e308 } }),
      400,
      'VALIDATION_ERROR',
    );
    expect(params(range)[0]).toMatch(/^metadataIncrement/);
  });

  it('refuses bad input with 400 and writes nothing', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await added(w, { metadata: { points: 1 } });
    for (const [body, param] of [
      [{}, ''],
      [{ email: 'nope' }, 'email'],
      [{ email: null }, 'email'],
      [{ firstName: 'x'.repeat(256) }, 'firstName'],
      [{ notes: 'x'.repeat(10_001) }, 'notes'],
      [{ ipAddress: '1.2.3.4' }, 'ipAddress'],
      [{ metadata: { deep: [1] } }, 'metadata.deep'],
      [{ metadata: null }, 'metadata'],
      [{ metadataIncrement: { points: 'ten' } }, 'metadataIncrement.points'],
      [{ metadataIncrement: { points: true } }, 'metadataIncrement.points'],
      [{ metadataIncrement: { points: null } }, 'metadataIncrement.points'],
      [{ metadataIncrement: [1] }, 'metadataIncrement'],
      [{ metadata: { points: 2 }, metadataIncrement: { points: 1 } }, 'metadataIncrement.points'],
      ['{"metadata":{"__proto__":{"polluted":true}}}', 'metadata.__proto__'],
      ['{"metadataIncrement":{"__proto__":1}}', 'metadataIncrement.__proto__'],
      ['{"metadataIncrement":{"prototype":1}}', 'metadataIncrement.prototype'],
      ['{"metadataIncrement":{"points":1e400}}', 'metadataIncrement.points'],
    ] as const) {
      const b = await expectRefused(() => patch(w, p.id, body), 400, 'VALIDATION_ERROR');
      expect(params(b).includes(param), `${JSON.stringify(body)}: ${JSON.stringify(b.errors)}`).toBe(true);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('answers 404 for an unknown participant or campaign, 403 for callers who cannot reach it', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await added(w);
    await expectRefused(() => patch(w, 'nosuchparticipant', { firstName: 'X' }), 404, 'NOT_FOUND');
    await expectRefused(() => patch(w, uniqueEmail('nobody'), { firstName: 'X' }), 404, 'NOT_FOUND');
    await expectRefused(
      () => api(w.key).patch(`/v1/campaign/nosuchcampaign/participant/${p.id}`, { firstName: 'X' }),
      404,
      'NOT_FOUND',
    );
    // A participant of another campaign of the same account is not found here.
    const sibling = await makeCampaign(stack.ctx, w.account.id);
    await expectRefused(
      () => api(w.key).patch(`/v1/campaign/${sibling.id}/participant/${p.id}`, { firstName: 'X' }),
      404,
      'NOT_FOUND',
    );
    await expectForbidden(w, (key) => api(key).patch(one(w, p.id), { firstName: 'X' }));
    await expectForbidden(w, (key) => api(key).post(one(w, p.id), { firstName: 'X' }));
  });
});

describe('DELETE /v1/campaign/{id}/participant/{idOrEmail}', () => {
  it("removes the participant with its rewards; the campaign's and the account's counters follow", async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1, isUnlimited: true } });
    const winner = uniqueEmail('winner');
    const other = uniqueEmail('other');
    await act(w, winner);
    await act(w, winner);
    await act(w, other);
    const idle = await added(w);
    expect(await campaignRow(w)).toMatchObject({
      participantCount: 3,
      loyaltyActionCount: 3,
      winnerCount: 2,
    });
    expect(await accountCount(w)).toBe(3);
    const winnerId = (await api(w.key).get(one(w, winner))).body.id;

    const r = await remove(w, winner);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true });
    expect(await campaignRow(w)).toMatchObject({
      participantCount: 2,
      loyaltyActionCount: 1,
      winnerCount: 1,
    });
    expect(await accountCount(w)).toBe(2);
    expect((await api(w.key).get(at(w))).body).toMatchObject({
      participantCount: 2,
      loyaltyActionCount: 1,
      winnerCount: 1,
    });
    expectErrorShape(await api(w.key).get(one(w, winner)), 404, 'NOT_FOUND');
    expect(
      await stack.ctx.db.$count(participantRewards, eq(participantRewards.participantId, winnerId)),
    ).toBe(0);
    // Its applied actions stay in the ledger as history.
    expect(await stack.ctx.db.$count(loyaltyActions, eq(loyaltyActions.participantId, winnerId))).toBe(2);

    // A participant that is no winner leaves winnerCount as it is; by id works as by email.
    expect((await remove(w, idle.id)).status).toBe(200);
    expect(await campaignRow(w)).toMatchObject({
      participantCount: 1,
      loyaltyActionCount: 1,
      winnerCount: 1,
    });
    // The same email can join again, as a new participant.
    const back = await added(w, { email: winner });
    expect(back.id).not.toBe(winnerId);
    expect(back.loyaltyActionCount).toBe(0);
  });

  it('frees a place in the quota', async () => {
    const w = await makeWorld(stack.ctx, { account: { participantQuota: 1 } });
    const p = await added(w);
    await expectRefused(() => add(w, { email: uniqueEmail() }), 402, 'USAGE_LIMIT');
    expect((await remove(w, p.id)).status).toBe(200);
    await added(w);
  });

  it('rejects its QUEUED actions: once the worker runs they are REJECTED, never APPLIED', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const email = uniqueEmail('queued');
    await act(w, email);
    await stack.stopWorker();
    let actionId = '';
    try {
      const r = await api(w.key).post(`${at(w)}/loyalty-action`, {
        participantEmail: email,
        rewardId: w.reward.id,
      });
      expect(r.body.action.status).toBe('QUEUED');
      actionId = r.body.action.id;
      expect((await remove(w, email)).status).toBe(200);
    } finally {
      stack.startWorker();
    }
    // The worker takes the job and finds nothing to apply.
    await eventually(
      async () => (await actionJob(stack, actionId))?.getState(),
      (state) => state === 'completed',
    );
    const a = await api(w.key).get(`${at(w)}/loyalty-action/${actionId}`);
    expect(a.body).toMatchObject({ status: 'REJECTED', reason: 'PARTICIPANT_DELETED', appliedAt: null });
    expect(await campaignRow(w)).toMatchObject({
      participantCount: 0,
      loyaltyActionCount: 0,
      winnerCount: 0,
    });
  });

  it('keeps every counter exact while actions for the participant race its removal', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true, conversionsRequired: 2 } });
    const doomed = uniqueEmail('doomed');
    const stays = uniqueEmail('stays');
    const { participantId } = await act(w, doomed);
    await act(w, stays);
    const trigger = (email: string) =>
      api(w.key).post(`${at(w)}/loyalty-action`, {
        participantEmail: email,
        rewardId: w.reward.id,
        addParticipantIfNoneExists: false,
        metadata: { n: Math.random() },
      });
    const byId = () =>
      api(w.key).post(`${at(w)}/participant/${participantId}/loyalty-action`, {
        rewardId: w.reward.id,
        metadata: { n: Math.random() },
      });
    // Actions keep arriving, a few ms apart, before, during and after the removal: some are applied before
    // it, some are still QUEUED when it runs, some are recorded just as it commits.
    const pause = () => new Promise((r) => setTimeout(r, 3));
    const sent: Promise<Reply>[] = [];
    for (let i = 0; i < 16; i++) {
      sent.push(i % 2 === 0 ? byId() : trigger(doomed));
      if (i < 6) sent.push(trigger(stays));
      if (i === 8) sent.push(remove(w, participantId));
      await pause();
    }
    const replies = await Promise.all(sent);
    for (const r of replies) expect([200, 404], JSON.stringify(r.body)).toContain(r.status);
    // Wait until the worker has settled every action.
    await eventually(
      () =>
        stack.ctx.db.$count(
          loyaltyActions,
          and(eq(loyaltyActions.campaignId, w.campaign.id), eq(loyaltyActions.status, 'QUEUED')),
        ),
      (n) => n === 0,
    );
    const [kept] = await stack.ctx.db
      .select()
      .from(participants)
      .where(eq(participants.campaignId, w.campaign.id));
    expect(kept!.email).toBe(stays);
    expect(kept!.loyaltyActionCount).toBe(7);
    const appliedForKept = await stack.ctx.db.$count(
      loyaltyActions,
      and(eq(loyaltyActions.participantId, kept!.id), eq(loyaltyActions.status, 'APPLIED')),
    );
    expect(appliedForKept).toBe(7);
    // The campaign counts exactly what the remaining participant holds.
    expect(await campaignRow(w)).toMatchObject({
      participantCount: 1,
      loyaltyActionCount: 7,
      winnerCount: kept!.approvedRewardCount > 0 ? 1 : 0,
    });
    // Every action of the removed participant not applied before the removal was rejected.
    const doomedActions = await stack.ctx.db
      .select()
      .from(loyaltyActions)
      .where(eq(loyaltyActions.participantId, participantId));
    for (const a of doomedActions) {
      expect(['APPLIED', 'REJECTED']).toContain(a.status);
      if (a.status === 'REJECTED')
        expect(['PARTICIPANT_DELETED', 'PARTICIPANT_NOT_FOUND']).toContain(a.reason);
    }
  });

  it('answers 404 for an unknown or already removed participant, 403 for callers who cannot reach it', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await added(w);
    await expectRefused(() => remove(w, 'nosuchparticipant'), 404, 'NOT_FOUND');
    await expectRefused(() => remove(w, uniqueEmail('nobody')), 404, 'NOT_FOUND');
    await expectRefused(
      () => api(w.key).delete(`/v1/campaign/nosuchcampaign/participant/${p.id}`),
      404,
      'NOT_FOUND',
    );
    await expectForbidden(w, (key) => api(key).delete(one(w, p.id)));
    expect((await remove(w, p.id)).status).toBe(200);
    await expectRefused(() => remove(w, p.id), 404, 'NOT_FOUND');
  });
});

describe('GET /v1/campaign/{id}/participants', () => {
  /** Pages with `query` until `more` is false; answers each page's ids. */
  async function pages(w: World, query: string) {
    const seen: string[][] = [];
    let nextId: string | null = null;
    do {
      const r = await list(w, [query, nextId ? `nextId=${nextId}` : ''].filter(Boolean).join('&'));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['limit', 'more', 'nextId', 'participants']);
      seen.push(r.body.participants.map((p: { id: string }) => p.id));
      expect(r.body.nextId === null).toBe(!r.body.more);
      nextId = r.body.nextId;
    } while (nextId && seen.length < 100);
    return seen;
  }

  it('pages through every participant exactly once, by id, with rewards and without ranks', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1 } });
    const other = await makeWorld(stack.ctx);
    await added(other);
    const ids: string[] = [];
    for (let i = 0; i < 45; i++) ids.push((await added(w, { metadata: { i } })).id);
    ids.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

    const byDefault = await pages(w, '');
    expect(byDefault.map((p) => p.length)).toEqual([20, 20, 5]);
    expect(byDefault.flat()).toEqual(ids);
    const bySeven = await pages(w, 'limit=7');
    expect(bySeven.map((p) => p.length)).toEqual([7, 7, 7, 7, 7, 7, 3]);
    expect(bySeven.flat()).toEqual(ids);

    const first = await list(w, 'limit=1');
    expect(first.body).toMatchObject({ limit: 1, more: true, nextId: ids[1] });
    const item = first.body.participants[0];
    expect(item).toMatchObject({ id: ids[0], rewards: [], loyaltyActionCount: 0 });
    for (const key of ['rank', 'monthlyRank', 'prevMonthlyRank']) expect(item).not.toHaveProperty(key);
    const all = await list(w, 'limit=100');
    expect(all.body).toMatchObject({ limit: 100, more: false, nextId: null });
    expect(all.body.participants).toHaveLength(45);
    // The last page exactly: more false, no cursor.
    expect((await list(w, `nextId=${ids[40]}&limit=5`)).body).toMatchObject({ more: false, nextId: null });
    // A cursor is a position: it still works once its participant is gone.
    expect((await remove(w, ids[40]!)).status).toBe(200);
    const after = await list(w, `nextId=${ids[40]}`);
    expect(after.body.participants.map((p: { id: string }) => p.id)).toEqual(ids.slice(41));
    // An empty campaign.
    const empty = await makeWorld(stack.ctx);
    expect((await list(empty)).body).toEqual({ participants: [], limit: 20, nextId: null, more: false });
  });

  it('filters by fraudRiskLevel and isWinner, and lists earned rewards', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1 } });
    const winnerEmail = uniqueEmail('winner');
    await act(w, winnerEmail);
    const risky = await added(w);
    const plain = await added(w);
    await stack.ctx.db
      .update(participants)
      .set({ fraudRiskLevel: 'HIGH' })
      .where(eq(participants.id, risky.id));
    const winner = (await api(w.key).get(one(w, winnerEmail))).body;

    const winners = await list(w, 'isWinner=true');
    expect(winners.body.participants.map((p: { id: string }) => p.id)).toEqual([winner.id]);
    expect(winners.body.participants[0]).toMatchObject({
      isWinner: true,
      rewards: [{ rewardId: w.reward.id }],
    });
    const rest = (await list(w, 'isWinner=false')).body.participants.map((p: { id: string }) => p.id);
    expect(rest.sort()).toEqual([risky.id, plain.id].sort());
    expect((await list(w, 'fraudRiskLevel=HIGH')).body.participants.map((p: { id: string }) => p.id)).toEqual(
      [risky.id],
    );
    expect((await list(w, 'fraudRiskLevel=MEDIUM')).body.participants).toEqual([]);
    expect(
      (await list(w, 'fraudRiskLevel=LOW&isWinner=false')).body.participants.map((p: { id: string }) => p.id),
    ).toEqual([plain.id]);
  });

  it('visits every participant exactly once while 30 others are being added', async () => {
    const w = await makeWorld(stack.ctx);
    const before = new Set<string>();
    for (const r of await Promise.all(
      Array.from({ length: 40 }, () => add(w, { email: uniqueEmail('pre') })),
    )) {
      before.add(r.body.id);
    }
    let joinedSoFar = 0;
    const joining = (async () => {
      const replies: Reply[] = [];
      for (let i = 0; i < 30; i++) {
        replies.push(await add(w, { email: uniqueEmail('new') }));
        joinedSoFar++;
      }
      return replies;
    })();
    const joinedAtStart = joinedSoFar;
    const seen: string[] = [];
    let pagesRead = 0;
    let nextId: string | null = null;
    do {
      const r = await list(w, `limit=3${nextId ? `&nextId=${nextId}` : ''}`);
      expect(r.status).toBe(200);
      seen.push(...r.body.participants.map((p: { id: string }) => p.id));
      nextId = r.body.nextId;
      pagesRead++;
    } while (nextId);
    const joinedAtEnd = joinedSoFar;
    const joined = await joining;
    expect(joined.every((r) => r.status === 200)).toBe(true);
    expect(pagesRead).toBeGreaterThan(10);
    // The adds did overlap the paging, or this test would prove nothing.
    expect(joinedAtStart).toBe(0);
    expect(joinedAtEnd).toBeGreaterThan(0);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of before) expect(seen).toContain(id);
    const all = new Set([...before, ...joined.map((r) => r.body.id)]);
    for (const id of seen) expect(all.has(id)).toBe(true);
    expect([...seen].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(seen);
  });

  it('refuses bad paging with 400 and callers who cannot reach the campaign with 403', async () => {
    const w = await makeWorld(stack.ctx);
    for (const [q, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['nextId=', 'nextId'],
      ['isWinner=yes', 'isWinner'],
      ['fraudRiskLevel=EXTREME', 'fraudRiskLevel'],
      ['colour=red', 'colour'],
    ] as const) {
      const b = await expectRefused(() => list(w, q), 400, 'VALIDATION_ERROR');
      expect(b.errors).toEqual([expect.objectContaining({ location: 'query', param })]);
    }
    await expectRefused(() => api(w.key).get('/v1/campaign/nosuchcampaign/participants'), 404, 'NOT_FOUND');
    await expectForbidden(w, (key) => api(key).get(`${at(w)}/participants`));
  });
});
