import { applyActions, updateCampaign } from '@stampcard/core';
import { loyaltyActions, participants } from '@stampcard/db';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, expectErrorShape, inProcess, type Reply } from '../../../test/support/client';
import { makeCampaign, makeReward, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * Every refusal of the loyalty-action endpoints, with the contract's error body, and proof that a refused
 * request writes nothing. The worker does not run in this file: accepted actions stay QUEUED, so the only
 * writers are the requests under test (tests in a file run one after another, on this file's own database).
 */
const stack = useTestStack({ worker: false });

type World = Awaited<ReturnType<typeof makeWorld>>;

const api = (key: string) => client(inProcess(stack.app), key);
const actionPath = (w: World) => `/v1/campaign/${w.campaign.id}/loyalty-action`;
const byIdPath = (w: World, participantId: string) =>
  `/v1/campaign/${w.campaign.id}/participant/${participantId}/loyalty-action`;
const JSON_TYPE = { 'content-type': 'application/json' };
const FORM_TYPE = { 'content-type': 'application/x-www-form-urlencoded' };

type Snapshot = {
  participants: number;
  loyaltyActions: number;
  events: number;
  accountParticipants: number;
  campaignParticipants: number;
};

/** Rows a loyalty action can write: participants, actions, outbox events, and the participant counters. */
async function snapshot(): Promise<Snapshot> {
  const rows = await stack.ctx.db.execute<Snapshot>(sql`select
    (select count(*) from participants)::int as "participants",
    (select count(*) from loyalty_actions)::int as "loyaltyActions",
    (select count(*) from events)::int as "events",
    (select coalesce(sum(participant_count), 0) from accounts)::int as "accountParticipants",
    (select coalesce(sum(participant_count), 0) from campaigns)::int as "campaignParticipants"`);
  return { ...rows[0]! };
}

/** Sends a request that must fail with `status`/`code`, and checks that nothing was written. */
async function expectRefused(send: () => Promise<Reply>, status: number, code: string) {
  const before = await snapshot();
  const reply = await send();
  const body = expectErrorShape(reply, status, code);
  expect(await snapshot()).toEqual(before);
  return body;
}

type Issue = { location: string; param: string; value: unknown; msg: string };

/** A 400 VALIDATION_ERROR that wrote nothing; its `errors` entries all have the contract's four fields. */
async function expectValidation(send: () => Promise<Reply>) {
  const body = await expectRefused(send, 400, 'VALIDATION_ERROR');
  expect(body.name).toBe('ValidationError');
  expect(Array.isArray(body.errors)).toBe(true);
  expect(body.errors.length).toBeGreaterThan(0);
  for (const e of body.errors) {
    expect(Object.keys(e).sort()).toEqual(['location', 'msg', 'param', 'value']);
    expect(typeof e.location).toBe('string');
    expect(typeof e.param).toBe('string');
    expect(typeof e.msg).toBe('string');
    expect(e.msg.length).toBeGreaterThan(0);
  }
  return body as { message: string; errors: Issue[] };
}

function issueFor(body: { errors: Issue[] }, param: string): Issue {
  const issue = body.errors.find((e) => e.param === param);
  if (!issue) throw new Error(`no error for param "${param}" in ${JSON.stringify(body.errors)}`);
  expect(issue.location).toBe('body');
  return issue;
}

/** An email address of exactly `n` characters, valid in every other respect. */
function emailOfLength(n: number): string {
  const labels = Math.floor((n - 13) / 51);
  const domain = `${Array.from({ length: labels }, (_, i) => String.fromCharCode(98 + i).repeat(50)).join('.')}.example.com`;
  const local = 'a'.repeat(n - 1 - domain.length);
  const email = `${local}@${domain}`;
  expect(email).toHaveLength(n);
  return email;
}

/** Accepts one action (a new participant is added) and answers the participant's id. */
async function seedParticipant(w: World, email = uniqueEmail()) {
  const r = await api(w.key).post(actionPath(w), { participantEmail: email, rewardId: w.reward.id });
  expect(r.status).toBe(200);
  return { email, id: r.body.action.participantId as string, actionId: r.body.action.id as string };
}

describe('400 VALIDATION_ERROR on the trigger by email', () => {
  it('refuses a malformed JSON body', async () => {
    const w = await makeWorld(stack.ctx);
    for (const raw of [`{"participantEmail": "${uniqueEmail()}", "rewardId": `, '{oops}', 'not json']) {
      const body = await expectValidation(() => api(w.key).post(actionPath(w), raw, JSON_TYPE));
      expect(body.errors[0]).toMatchObject({ location: 'body', param: '' });
    }
  });

  it('refuses a JSON body that is not an object', async () => {
    const w = await makeWorld(stack.ctx);
    for (const raw of ['null', '[]', '"text"', '42']) {
      await expectValidation(() => api(w.key).post(actionPath(w), raw, JSON_TYPE));
    }
  });

  it('refuses a missing participantEmail (and a missing rewardId)', async () => {
    const w = await makeWorld(stack.ctx);
    const body = await expectValidation(() => api(w.key).post(actionPath(w), { rewardId: w.reward.id }));
    expect(issueFor(body, 'participantEmail').value).toBeNull();
    expect(issueFor(body, 'participantEmail').msg).toBe('is required');
    expect(body.message).toContain('participantEmail: is required');

    const empty = await expectValidation(() => api(w.key).post(actionPath(w), {}));
    issueFor(empty, 'participantEmail');
    issueFor(empty, 'rewardId');
  });

  it('refuses an email that is not an email', async () => {
    const w = await makeWorld(stack.ctx);
    for (const bad of ['not-an-email', 'ada@', '@example.com', 'ada lovelace@example.com', '', 42, null]) {
      const body = await expectValidation(() =>
        api(w.key).post(actionPath(w), { participantEmail: bad, rewardId: w.reward.id }),
      );
      expect(issueFor(body, 'participantEmail').value).toEqual(bad);
    }
  });

  it('refuses an email longer than 254 characters, and accepts one of exactly 254', async () => {
    const w = await makeWorld(stack.ctx);
    const tooLong = emailOfLength(255);
    const body = await expectValidation(() =>
      api(w.key).post(actionPath(w), { participantEmail: tooLong, rewardId: w.reward.id }),
    );
    // A long value is echoed as a short excerpt, never whole.
    expect(issueFor(body, 'participantEmail').value).toBe(`${tooLong.slice(0, 64)}…`);

    const longest = emailOfLength(254);
    const ok = await api(w.key).post(actionPath(w), { participantEmail: longest, rewardId: w.reward.id });
    expect(ok.status).toBe(200);
  });

  it('refuses a rewardId of the wrong type', async () => {
    const w = await makeWorld(stack.ctx);
    const echoes: [unknown, unknown][] = [
      [123, 123],
      [true, true],
      [{ id: w.reward.id }, '{object with 1 keys}'],
      [[w.reward.id], '[array of 1]'],
      [null, null],
      ['', ''],
    ];
    for (const [bad, echoed] of echoes) {
      const body = await expectValidation(() =>
        api(w.key).post(actionPath(w), { participantEmail: uniqueEmail(), rewardId: bad }),
      );
      expect(issueFor(body, 'rewardId').value).toEqual(echoed);
    }
  });

  it('refuses addParticipantIfNoneExists given as a string in JSON', async () => {
    const w = await makeWorld(stack.ctx);
    for (const bad of ['false', 'true', 0, 1]) {
      const body = await expectValidation(() =>
        api(w.key).post(actionPath(w), {
          participantEmail: uniqueEmail(),
          rewardId: w.reward.id,
          addParticipantIfNoneExists: bad,
        }),
      );
      expect(issueFor(body, 'addParticipantIfNoneExists').value).toBe(bad);
    }
  });

  it('refuses an unknown field, naming it', async () => {
    const w = await makeWorld(stack.ctx);
    const body = await expectValidation(() =>
      api(w.key).post(actionPath(w), {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
        points: 5,
        participant_email: 'x@example.com',
      }),
    );
    expect(issueFor(body, 'points')).toMatchObject({ value: 5, msg: 'unknown field' });
    expect(issueFor(body, 'participant_email')).toMatchObject({
      value: 'x@example.com',
      msg: 'unknown field',
    });
  });

  it('refuses other fields of the wrong type or past their limits', async () => {
    const w = await makeWorld(stack.ctx);
    const cases: [Record<string, unknown>, string][] = [
      [{ firstName: 'x'.repeat(256) }, 'firstName'],
      [{ lastName: 7 }, 'lastName'],
      [{ ipAddress: 'not-an-ip' }, 'ipAddress'],
      [{ fingerprint: 'f'.repeat(256) }, 'fingerprint'],
    ];
    for (const [extra, param] of cases) {
      const body = await expectValidation(() =>
        api(w.key).post(actionPath(w), { participantEmail: uniqueEmail(), rewardId: w.reward.id, ...extra }),
      );
      issueFor(body, param);
    }
  });

  it('refuses metadata that is not a shallow object', async () => {
    const w = await makeWorld(stack.ctx);
    const cases: [unknown, string][] = [
      [{ nested: { a: 1 } }, 'metadata.nested'],
      [{ tags: ['a', 'b'] }, 'metadata.tags'],
      [['a'], 'metadata'],
      ['plan=pro', 'metadata'],
    ];
    for (const [metadata, param] of cases) {
      const body = await expectValidation(() =>
        api(w.key).post(actionPath(w), { participantEmail: uniqueEmail(), rewardId: w.reward.id, metadata }),
      );
      issueFor(body, param);
    }
  });

  it('refuses metadata with 101 keys, and accepts 100', async () => {
    const w = await makeWorld(stack.ctx);
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    const body = await expectValidation(() =>
      api(w.key).post(actionPath(w), {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
        metadata: keys(101),
      }),
    );
    expect(issueFor(body, 'metadata').msg).toMatch(/100 keys/);

    const ok = await api(w.key).post(actionPath(w), {
      participantEmail: uniqueEmail(),
      rewardId: w.reward.id,
      metadata: keys(100),
    });
    expect(ok.status).toBe(200);
  });

  it('refuses metadata over 16 KiB as JSON', async () => {
    const w = await makeWorld(stack.ctx);
    const body = await expectValidation(() =>
      api(w.key).post(actionPath(w), {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
        metadata: { blob: 'x'.repeat(17 * 1024) },
      }),
    );
    expect(issueFor(body, 'metadata').msg).toMatch(/16 KiB/);
  });

  it('refuses a body over 1 MiB with a 400, not a 413 or 500', async () => {
    const w = await makeWorld(stack.ctx);
    const raw = JSON.stringify({
      participantEmail: uniqueEmail(),
      rewardId: w.reward.id,
      firstName: 'x'.repeat(1024 * 1024 + 10),
    });
    const body = await expectValidation(() => api(w.key).post(actionPath(w), raw, JSON_TYPE));
    expect(body.message).toMatch(/1 MiB/);
    // Form-encoded bodies have the same limit.
    const form = `participantEmail=${encodeURIComponent(uniqueEmail())}&rewardId=${w.reward.id}&firstName=${'x'.repeat(1024 * 1024 + 10)}`;
    await expectValidation(() => api(w.key).post(actionPath(w), form, FORM_TYPE));
  });

  it('refuses an unsupported content type, naming the two it takes, on the content-type header', async () => {
    const w = await makeWorld(stack.ctx);
    const raw = JSON.stringify({ participantEmail: uniqueEmail(), rewardId: w.reward.id });
    for (const type of ['text/plain', 'application/xml', 'multipart/form-data; boundary=x']) {
      const body = await expectValidation(() =>
        api(w.key).post(actionPath(w), raw, { 'content-type': type }),
      );
      expect(body.message).toBe(
        `Unsupported Content-Type ${type.split(';')[0]}: send JSON with Content-Type: application/json, or form fields with Content-Type: application/x-www-form-urlencoded`,
      );
      expect(body.errors).toEqual([
        {
          location: 'headers',
          param: 'content-type',
          value: type,
          msg: expect.stringMatching(
            /^is not supported: send JSON with Content-Type: application\/json, or form fields/,
          ),
        },
      ]);
    }
    // The same body as JSON is accepted.
    expect((await api(w.key).post(actionPath(w), raw, JSON_TYPE)).status).toBe(200);
  });

  it('refuses JSON sent as a form (curl -d without a content type) by naming application/json, not the fields', async () => {
    const w = await makeWorld(stack.ctx);
    const raw = JSON.stringify({ participantEmail: uniqueEmail(), rewardId: w.reward.id });
    for (const json of [raw, ` \n${raw}`, '[1,2]']) {
      const body = await expectValidation(() => api(w.key).post(actionPath(w), json, FORM_TYPE));
      expect(body.message).toBe(
        'Request body is JSON sent as application/x-www-form-urlencoded (what curl -d sends unless told otherwise): send it with Content-Type: application/json',
      );
      expect(body.errors).toEqual([
        {
          location: 'headers',
          param: 'content-type',
          value: 'application/x-www-form-urlencoded',
          msg: 'says the body is form fields, but it is JSON: send it with Content-Type: application/json',
        },
      ]);
      expect(body.message).not.toMatch(/is required|unknown field/);
    }
    // The operator API answers the same (every route with a body is guarded alike).
    const op = await client(inProcess(stack.app), OPERATOR_TOKEN).post(
      '/admin/v1/accounts',
      '{"name":"Acme","plan":"GROWTH","participantQuota":10}',
      FORM_TYPE,
    );
    expect(expectErrorShape(op, 400, 'VALIDATION_ERROR').errors[0]).toMatchObject({
      location: 'headers',
      param: 'content-type',
    });
  });
});

describe('bodies without a content type', () => {
  /** Bytes, not a string: a string body would be given `text/plain` by the Request constructor. */
  const rawPost = (w: World, bytes: Uint8Array) =>
    stack.app.request(actionPath(w), {
      method: 'POST',
      headers: { authorization: `Bearer ${w.key}` },
      body: bytes,
    });

  it('reads a body without a content type as JSON', async () => {
    const w = await makeWorld(stack.ctx);
    const bytes = new TextEncoder().encode(
      JSON.stringify({ participantEmail: uniqueEmail(), rewardId: w.reward.id }),
    );
    const res = await rawPost(w, bytes);
    expect(res.headers.get('content-type')).toMatch(/json/);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { action: { status: string } };
    expect(body.action.status).toBe('QUEUED');
  });

  it('refuses a body without a content type that is not JSON, naming both content types', async () => {
    const w = await makeWorld(stack.ctx);
    const form = `participantEmail=${encodeURIComponent(uniqueEmail())}&rewardId=${w.reward.id}`;
    const body = await expectValidation(async () => {
      const res = await rawPost(w, new TextEncoder().encode(form));
      return { status: res.status, body: await res.json(), headers: res.headers };
    });
    expect(body.message).toBe(
      'Request body has no Content-Type and is not JSON: send JSON with Content-Type: application/json, or form fields with Content-Type: application/x-www-form-urlencoded',
    );
    expect(body.errors).toEqual([
      { location: 'headers', param: 'content-type', value: null, msg: expect.stringMatching(/^is missing/) },
    ]);
  });

  it('validates an empty body without a content type as {}', async () => {
    const w = await makeWorld(stack.ctx);
    const body = await expectValidation(async () => {
      const res = await rawPost(w, new Uint8Array(0));
      return { status: res.status, body: await res.json(), headers: res.headers };
    });
    issueFor(body, 'participantEmail');
    issueFor(body, 'rewardId');
  });
});

describe('400 INVALID_STATE: the campaign is not in progress', () => {
  it('refuses actions in a DRAFT campaign', async () => {
    const w = await makeWorld(stack.ctx, { campaign: { status: 'DRAFT' } });
    const body = await expectRefused(
      () => api(w.key).post(actionPath(w), { participantEmail: uniqueEmail(), rewardId: w.reward.id }),
      400,
      'INVALID_STATE',
    );
    expect(body.name).toBe('InvalidState');
    expect(body.message).toContain('DRAFT');
  });

  it('refuses actions in a COMPLETE campaign, by email and by id', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await seedParticipant(w);
    await updateCampaign(stack.ctx, w.campaign.id, { status: 'COMPLETE' });

    const body = await expectRefused(
      () => api(w.key).post(actionPath(w), { participantEmail: uniqueEmail(), rewardId: w.reward.id }),
      400,
      'INVALID_STATE',
    );
    expect(body.message).toContain('COMPLETE');
    await expectRefused(
      () => api(w.key).post(actionPath(w), { participantEmail: p.email, rewardId: w.reward.id }),
      400,
      'INVALID_STATE',
    );
    await expectRefused(
      () => api(w.key).post(byIdPath(w, p.id), { rewardId: w.reward.id }),
      400,
      'INVALID_STATE',
    );
  });
});

describe('404 NOT_FOUND', () => {
  it('refuses an unknown reward, and a reward of another campaign', async () => {
    const w = await makeWorld(stack.ctx);
    const sibling = await makeCampaign(stack.ctx, w.account.id);
    const siblingReward = await makeReward(stack.ctx, sibling.id);
    const stranger = await makeWorld(stack.ctx);
    const p = await seedParticipant(w);

    for (const rewardId of [`${w.reward.id}x`, 'crew_doesnotexist', siblingReward.id, stranger.reward.id]) {
      const body = await expectRefused(
        () => api(w.key).post(actionPath(w), { participantEmail: uniqueEmail(), rewardId }),
        404,
        'NOT_FOUND',
      );
      expect(body.message).toContain(rewardId);
      await expectRefused(() => api(w.key).post(byIdPath(w, p.id), { rewardId }), 404, 'NOT_FOUND');
    }
  });

  it('refuses an absent participant when addParticipantIfNoneExists is false', async () => {
    const w = await makeWorld(stack.ctx);
    const email = uniqueEmail('absent');
    await expectRefused(
      () =>
        api(w.key).post(actionPath(w), {
          participantEmail: email,
          rewardId: w.reward.id,
          addParticipantIfNoneExists: false,
          firstName: 'Ada',
        }),
      404,
      'NOT_FOUND',
    );
    expectErrorShape(
      await api(w.key).get(`/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}`),
      404,
      'NOT_FOUND',
    );

    // An existing participant (any case of its email) acts with addParticipantIfNoneExists false.
    const p = await seedParticipant(w);
    const ok = await api(w.key).post(actionPath(w), {
      participantEmail: p.email.toUpperCase(),
      rewardId: w.reward.id,
      addParticipantIfNoneExists: false,
    });
    expect(ok.status).toBe(200);
    expect(ok.body.action.participantId).toBe(p.id);
  });

  it('refuses a participant of another campaign when addParticipantIfNoneExists is false', async () => {
    const w = await makeWorld(stack.ctx);
    const sibling = await makeCampaign(stack.ctx, w.account.id);
    const siblingReward = await makeReward(stack.ctx, sibling.id);
    const p = await seedParticipant({ ...w, campaign: sibling, reward: siblingReward });
    await expectRefused(
      () =>
        api(w.key).post(actionPath(w), {
          participantEmail: p.email,
          rewardId: w.reward.id,
          addParticipantIfNoneExists: false,
        }),
      404,
      'NOT_FOUND',
    );
    await expectRefused(
      () => api(w.key).post(byIdPath(w, p.id), { rewardId: w.reward.id }),
      404,
      'NOT_FOUND',
    );
  });
});

describe('402 USAGE_LIMIT: the participant quota', () => {
  it('refuses a new participant past the quota; existing participants still act', async () => {
    const w = await makeWorld(stack.ctx, { account: { participantQuota: 2 } });
    const first = await seedParticipant(w);
    const second = await seedParticipant(w);

    const body = await expectRefused(
      () => api(w.key).post(actionPath(w), { participantEmail: uniqueEmail('third'), rewardId: w.reward.id }),
      402,
      'USAGE_LIMIT',
    );
    expect(body.name).toBe('UsageLimit');
    expect(body.message).toMatch(/quota/i);

    // The quota is the account's: another campaign of the account is refused too.
    const sibling = await makeCampaign(stack.ctx, w.account.id);
    const siblingReward = await makeReward(stack.ctx, sibling.id);
    await expectRefused(
      () =>
        api(w.key).post(`/v1/campaign/${sibling.id}/loyalty-action`, {
          participantEmail: first.email,
          rewardId: siblingReward.id,
        }),
      402,
      'USAGE_LIMIT',
    );

    for (const send of [
      // (Bodies differ from the seeding requests, which are still QUEUED: an identical one would be a 409.)
      () =>
        api(w.key).post(actionPath(w), {
          participantEmail: first.email,
          rewardId: w.reward.id,
          firstName: 'A',
        }),
      () =>
        api(w.key).post(actionPath(w), {
          participantEmail: second.email.toUpperCase(),
          rewardId: w.reward.id,
        }),
      () => api(w.key).post(byIdPath(w, first.id), { rewardId: w.reward.id }),
    ]) {
      const r = await send();
      expect(r.status).toBe(200);
      expect(r.body.success).toBe(true);
    }
    const campaign = await api(w.key).get(`/v1/campaign/${w.campaign.id}`);
    expect(campaign.body.participantCount).toBe(2);
  });

  it('never passes the quota under concurrent requests', async () => {
    const w = await makeWorld(stack.ctx, { account: { participantQuota: 2 } });
    const before = await snapshot();
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        api(w.key).post(actionPath(w), { participantEmail: uniqueEmail(`rush${i}`), rewardId: w.reward.id }),
      ),
    );
    const ok = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status !== 200);
    expect(ok).toHaveLength(2);
    for (const r of refused) expectErrorShape(r, 402, 'USAGE_LIMIT');
    const after = await snapshot();
    expect(after.participants - before.participants).toBe(2);
    expect(after.loyaltyActions - before.loyaltyActions).toBe(2);
    expect(after.accountParticipants - before.accountParticipants).toBe(2);
  });

  it('refuses every new participant with a quota of 0', async () => {
    const w = await makeWorld(stack.ctx, { account: { participantQuota: 0 } });
    await expectRefused(
      () => api(w.key).post(actionPath(w), { participantEmail: uniqueEmail(), rewardId: w.reward.id }),
      402,
      'USAGE_LIMIT',
    );
  });

  it('does not limit an account without a quota', async () => {
    const w = await makeWorld(stack.ctx, { account: { participantQuota: null } });
    for (let i = 0; i < 3; i++) await seedParticipant(w);
    const campaign = await api(w.key).get(`/v1/campaign/${w.campaign.id}`);
    expect(campaign.body.participantCount).toBe(3);
  });
});

describe('409 DUPLICATE_REQUEST', () => {
  it('refuses an identical request while the first is QUEUED, with the first request details', async () => {
    const w = await makeWorld(stack.ctx);
    const body = { participantEmail: uniqueEmail('dup'), rewardId: w.reward.id, metadata: { a: 1, b: 'x' } };
    const first = await api(w.key).post(actionPath(w), body);
    expect(first.status).toBe(200);
    expect(first.body.action.status).toBe('QUEUED');

    const dup = await expectRefused(() => api(w.key).post(actionPath(w), body), 409, 'DUPLICATE_REQUEST');
    expect(dup.name).toBe('DuplicateRequest');
    expect(dup.request).toEqual({
      method: 'POST',
      path: actionPath(w),
      startedAt: first.body.action.createdAt,
    });

    // The same body with its keys in another order is the same request.
    const reordered = {
      metadata: { b: 'x', a: 1 },
      rewardId: w.reward.id,
      participantEmail: body.participantEmail,
    };
    await expectRefused(() => api(w.key).post(actionPath(w), reordered), 409, 'DUPLICATE_REQUEST');

    const state = await api(w.key).get(
      `/v1/campaign/${w.campaign.id}/loyalty-action/${first.body.action.id}`,
    );
    expect(state.body.status).toBe('QUEUED');
  });

  it('accepts exactly one of several identical requests sent at once', async () => {
    const w = await makeWorld(stack.ctx);
    const body = { participantEmail: uniqueEmail('race'), rewardId: w.reward.id };
    const before = await snapshot();
    const replies = await Promise.all(Array.from({ length: 5 }, () => api(w.key).post(actionPath(w), body)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 200)) expectErrorShape(r, 409, 'DUPLICATE_REQUEST');
    const after = await snapshot();
    expect(after.participants - before.participants).toBe(1);
    expect(after.loyaltyActions - before.loyaltyActions).toBe(1);
  });

  it('accepts a request with a different body', async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeReward(stack.ctx, w.campaign.id);
    const email = uniqueEmail('diff');
    const first = await api(w.key).post(actionPath(w), { participantEmail: email, rewardId: w.reward.id });
    expect(first.status).toBe(200);

    for (const body of [
      { participantEmail: email, rewardId: other.id },
      { participantEmail: email, rewardId: w.reward.id, metadata: { n: 2 } },
      { participantEmail: email, rewardId: w.reward.id, firstName: 'Ada' },
    ]) {
      const r = await api(w.key).post(actionPath(w), body);
      expect(r.status).toBe(200);
      expect(r.body.action.participantId).toBe(first.body.action.participantId);
      expect(r.body.action.id).not.toBe(first.body.action.id);
    }
  });

  it('accepts the identical request again once the first is applied', async () => {
    const w = await makeWorld(stack.ctx);
    const body = { participantEmail: uniqueEmail('again'), rewardId: w.reward.id };
    const first = await api(w.key).post(actionPath(w), body);
    expect(first.status).toBe(200);
    await expectRefused(() => api(w.key).post(actionPath(w), body), 409, 'DUPLICATE_REQUEST');

    await applyActions(stack.ctx, [first.body.action.id]);

    const again = await api(w.key).post(actionPath(w), body);
    expect(again.status).toBe(200);
    expect(again.body.action.id).not.toBe(first.body.action.id);
  });

  it('refuses an identical trigger by participant id while the first is QUEUED', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await seedParticipant(w);
    const first = await api(w.key).post(byIdPath(w, p.id), { rewardId: w.reward.id });
    expect(first.status).toBe(200);
    const dup = await expectRefused(
      () => api(w.key).post(byIdPath(w, p.id), { rewardId: w.reward.id }),
      409,
      'DUPLICATE_REQUEST',
    );
    expect(dup.request).toMatchObject({ method: 'POST', path: byIdPath(w, p.id) });
  });
});

describe('form-encoded bodies', () => {
  it('accepts participantEmail, rewardId and addParticipantIfNoneExists=false for an existing participant', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await seedParticipant(w);
    const before = await snapshot();
    const r = await api(w.key).post(
      actionPath(w),
      `participantEmail=${encodeURIComponent(p.email)}&rewardId=${w.reward.id}&addParticipantIfNoneExists=false`,
      FORM_TYPE,
    );
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      success: true,
      action: { status: 'QUEUED', participantId: p.id, rewardId: w.reward.id },
    });
    const after = await snapshot();
    expect(after).toEqual({ ...before, loyaltyActions: before.loyaltyActions + 1 });
  });

  it('reads addParticipantIfNoneExists=false as the boolean: an absent participant is a 404', async () => {
    const w = await makeWorld(stack.ctx);
    await expectRefused(
      () =>
        api(w.key).post(
          actionPath(w),
          `participantEmail=${encodeURIComponent(uniqueEmail('absent'))}&rewardId=${w.reward.id}&addParticipantIfNoneExists=false`,
          FORM_TYPE,
        ),
      404,
      'NOT_FOUND',
    );
  });

  it('adds a participant with metadata[plan]=pro as metadata { plan: "pro" }', async () => {
    const w = await makeWorld(stack.ctx);
    const email = uniqueEmail('form');
    const r = await api(w.key).post(
      actionPath(w),
      `participantEmail=${encodeURIComponent(email)}&rewardId=${w.reward.id}&firstName=Ada&metadata[plan]=pro&metadata%5Bseats%5D=3`,
      FORM_TYPE,
    );
    expect(r.status).toBe(200);
    expect(r.body.message).toMatch(/Participant added/);
    const p = await api(w.key).get(`/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}`);
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({
      firstName: 'Ada',
      metadata: { plan: 'pro', seats: '3' },
      loyaltyActionSource: 'DIRECT',
    });
    const [row] = await stack.ctx.db.select().from(participants).where(eq(participants.id, p.body.id));
    expect(row?.metadata).toEqual({ plan: 'pro', seats: '3' });
  });

  it('validates form bodies like JSON ones', async () => {
    const w = await makeWorld(stack.ctx);
    const email = encodeURIComponent(uniqueEmail());
    const cases: [string, string][] = [
      [`rewardId=${w.reward.id}`, 'participantEmail'],
      [`participantEmail=nope&rewardId=${w.reward.id}`, 'participantEmail'],
      [
        `participantEmail=${email}&rewardId=${w.reward.id}&addParticipantIfNoneExists=maybe`,
        'addParticipantIfNoneExists',
      ],
      [`participantEmail=${email}&rewardId=${w.reward.id}&points=5`, 'points'],
      [`participantEmail=${email}&rewardId=${w.reward.id}&metadata[a][b]=1`, 'metadata.a'],
    ];
    for (const [form, param] of cases) {
      const body = await expectValidation(() => api(w.key).post(actionPath(w), form, FORM_TYPE));
      issueFor(body, param);
    }
  });
});

describe('trigger by participant id', () => {
  it('accepts an action for an existing participant', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await seedParticipant(w);
    const r = await api(w.key).post(byIdPath(w, p.id), {
      rewardId: w.reward.id,
      metadata: { source: 'crm' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      success: true,
      action: { status: 'QUEUED', participantId: p.id, rewardId: w.reward.id },
    });
    expect(r.body.action.id).toMatch(/^act_/);
    expect(Number.isInteger(r.body.action.createdAt)).toBe(true);
    const [row] = await stack.ctx.db
      .select()
      .from(loyaltyActions)
      .where(eq(loyaltyActions.id, r.body.action.id));
    expect(row).toMatchObject({ participantId: p.id, status: 'QUEUED', metadata: { source: 'crm' } });
  });

  it('answers 404 for an unknown participant id, and adds nobody', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await seedParticipant(w);
    for (const id of [`${p.id}x`, 'doesnotexist']) {
      await expectRefused(
        () => api(w.key).post(byIdPath(w, id), { rewardId: w.reward.id }),
        404,
        'NOT_FOUND',
      );
    }
  });

  it('validates its body', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await seedParticipant(w);
    const missing = await expectValidation(() => api(w.key).post(byIdPath(w, p.id), {}));
    issueFor(missing, 'rewardId');
    const unknown = await expectValidation(() =>
      api(w.key).post(byIdPath(w, p.id), { rewardId: w.reward.id, participantEmail: p.email }),
    );
    expect(issueFor(unknown, 'participantEmail').msg).toBe('unknown field');
    const nested = await expectValidation(() =>
      api(w.key).post(byIdPath(w, p.id), { rewardId: w.reward.id, metadata: { a: { b: 1 } } }),
    );
    issueFor(nested, 'metadata.a');
    await expectValidation(() => api(w.key).post(byIdPath(w, p.id), '{"rewardId":', JSON_TYPE));
  });
});

describe('GET /v1/campaign/{id}/loyalty-action/{actionId}', () => {
  it("answers a QUEUED action's state", async () => {
    const w = await makeWorld(stack.ctx);
    const p = await seedParticipant(w);
    const r = await api(w.key).get(`/v1/campaign/${w.campaign.id}/loyalty-action/${p.actionId}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      id: p.actionId,
      status: 'QUEUED',
      participantId: p.id,
      rewardId: w.reward.id,
      appliedAt: null,
      unlockedRewards: [],
    });
  });

  it('answers 404 for an unknown action id, and for an action of another campaign', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await seedParticipant(w);
    const sibling = await makeCampaign(stack.ctx, w.account.id);
    const base = `/v1/campaign/${w.campaign.id}/loyalty-action`;
    const b = expectErrorShape(await api(w.key).get(`${base}/act_doesnotexist`), 404, 'NOT_FOUND');
    expect(b.message).toContain('act_doesnotexist');
    expectErrorShape(await api(w.key).get(`${base}/${p.actionId}x`), 404, 'NOT_FOUND');
    expectErrorShape(
      await api(w.key).get(`/v1/campaign/${sibling.id}/loyalty-action/${p.actionId}`),
      404,
      'NOT_FOUND',
    );
  });
});
