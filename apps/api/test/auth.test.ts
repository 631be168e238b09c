import { revokeApiKey, updateCampaign } from '@stampcard/core';
import { loyaltyActions, participants } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, expectErrorShape, inProcess, type Reply } from '../../../test/support/client';
import { makeCampaign, makeUserWithKey, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

// The worker runs so that `?wait=true` applies actions; requests refused here never reach it.
const stack = useTestStack();

const api = (key?: string) => client(inProcess(stack.app), key);

/** Sends a request with a raw Authorization header (or none). */
async function withAuthHeader(path: string, authorization?: string): Promise<Reply> {
  return client(inProcess(stack.app)).get(path, authorization === undefined ? {} : { authorization });
}

async function rowCounts() {
  const [p] = await stack.ctx.db.select({ n: sql<number>`count(*)::int` }).from(participants);
  const [a] = await stack.ctx.db.select({ n: sql<number>`count(*)::int` }).from(loyaltyActions);
  return { participants: p!.n, loyaltyActions: a!.n };
}

/** A participant with one applied action in the world's campaign, added through the API. */
async function addParticipant(w: Awaited<ReturnType<typeof makeWorld>>) {
  const email = uniqueEmail('auth');
  const r = await api(w.key).post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
    participantEmail: email,
    rewardId: w.reward.id,
  });
  expect(r.status).toBe(200);
  return { email, id: r.body.action.participantId as string };
}

describe('API key authentication (403 NOT_AUTHORIZED)', () => {
  it('accepts a valid key (sanity check for the refusals below)', async () => {
    const w = await makeWorld(stack.ctx);
    const r = await api(w.key).get('/v1/campaigns');
    expect(r.status).toBe(200);
    expect(r.body.campaigns.map((c: { id: string }) => c.id)).toEqual([w.campaign.id]);
  });

  it('refuses a request without an Authorization header', async () => {
    const b = expectErrorShape(await withAuthHeader('/v1/campaigns'), 403, 'NOT_AUTHORIZED');
    expect(b.name).toBe('NotAuthorized');
    expect(b.message).toMatch(/API key/i);
  });

  it('refuses malformed Authorization headers', async () => {
    const w = await makeWorld(stack.ctx);
    for (const header of [
      '',
      'Bearer',
      'Bearer ',
      w.key, // no scheme
      `Token ${w.key}`,
      `Basic ${Buffer.from(`x:${w.key}`).toString('base64')}`,
      `Bearer ${w.key} extra`,
      `Bearer${w.key}`,
    ]) {
      const r = await withAuthHeader(`/v1/campaign/${w.campaign.id}`, header);
      expectErrorShape(r, 403, 'NOT_AUTHORIZED');
    }
  });

  it('accepts the bearer scheme case-insensitively', async () => {
    const w = await makeWorld(stack.ctx);
    const r = await withAuthHeader(`/v1/campaign/${w.campaign.id}`, `bearer ${w.key}`);
    expect(r.status).toBe(200);
    expect(r.body.id).toBe(w.campaign.id);
  });

  it('refuses a mistyped key', async () => {
    const w = await makeWorld(stack.ctx);
    const last = w.key.slice(-1);
    const typos = [
      `${w.key.slice(0, -1)}${last === 'a' ? 'b' : 'a'}`,
      `${w.key}x`,
      w.key.slice(0, -1),
      w.key.toUpperCase(),
      'sk_thisisnotakey',
    ];
    for (const key of typos) {
      const b = expectErrorShape(await api(key).get('/v1/campaigns'), 403, 'NOT_AUTHORIZED');
      expect(b.message).toMatch(/revoked or mistyped/);
    }
  });

  it('refuses a revoked key, while another key of the same user still works', async () => {
    const w = await makeWorld(stack.ctx);
    expect((await api(w.key).get(`/v1/campaign/${w.campaign.id}`)).status).toBe(200);
    const { key: other } = await makeUserWithKey(stack.ctx, w.account.id);

    await revokeApiKey(stack.ctx, w.keyId);

    expectErrorShape(await api(w.key).get(`/v1/campaign/${w.campaign.id}`), 403, 'NOT_AUTHORIZED');
    expectErrorShape(await api(w.key).get('/v1/campaigns'), 403, 'NOT_AUTHORIZED');
    const before = await rowCounts();
    const post = await api(w.key).post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
      participantEmail: uniqueEmail(),
      rewardId: w.reward.id,
    });
    expectErrorShape(post, 403, 'NOT_AUTHORIZED');
    expect(await rowCounts()).toEqual(before);

    expect((await api(other).get(`/v1/campaign/${w.campaign.id}`)).status).toBe(200);
  });

  it('refuses an account on the FREE plan', async () => {
    const w = await makeWorld(stack.ctx, { account: { plan: 'FREE' } });
    const b = expectErrorShape(await api(w.key).get('/v1/campaigns'), 403, 'NOT_AUTHORIZED');
    expect(b.message).toMatch(/paid plan/i);
    expectErrorShape(await api(w.key).get(`/v1/campaign/${w.campaign.id}`), 403, 'NOT_AUTHORIZED');

    const before = await rowCounts();
    const post = await api(w.key).post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
      participantEmail: uniqueEmail(),
      rewardId: w.reward.id,
    });
    expectErrorShape(post, 403, 'NOT_AUTHORIZED');
    expect(await rowCounts()).toEqual(before);
  });

  it('accepts every paid plan', async () => {
    for (const plan of ['STARTER', 'GROWTH', 'ENTERPRISE'] as const) {
      const w = await makeWorld(stack.ctx, { account: { plan } });
      expect((await api(w.key).get(`/v1/campaign/${w.campaign.id}`)).status).toBe(200);
    }
  });
});

describe("another account's data (403 NOT_AUTHORIZED)", () => {
  it('refuses the campaign, its participants and its loyalty actions, and writes nothing', async () => {
    const mine = await makeWorld(stack.ctx);
    const theirs = await makeWorld(stack.ctx);
    const p = await addParticipant(theirs);
    const base = `/v1/campaign/${theirs.campaign.id}`;

    const campaign = expectErrorShape(await api(mine.key).get(base), 403, 'NOT_AUTHORIZED');
    expect(campaign.message).toMatch(/another account/);
    expectErrorShape(
      await api(mine.key).get(`${base}/participant/${encodeURIComponent(p.email)}`),
      403,
      'NOT_AUTHORIZED',
    );
    expectErrorShape(await api(mine.key).get(`${base}/participant/${p.id}`), 403, 'NOT_AUTHORIZED');

    const before = await rowCounts();
    for (const body of [
      { participantEmail: uniqueEmail(), rewardId: theirs.reward.id },
      { participantEmail: p.email, rewardId: theirs.reward.id },
    ]) {
      expectErrorShape(await api(mine.key).post(`${base}/loyalty-action`, body), 403, 'NOT_AUTHORIZED');
    }
    expectErrorShape(
      await api(mine.key).post(`${base}/participant/${p.id}/loyalty-action`, { rewardId: theirs.reward.id }),
      403,
      'NOT_AUTHORIZED',
    );
    expect(await rowCounts()).toEqual(before);

    // Their campaign is not in my list, and is still intact for its owner.
    const list = await api(mine.key).get('/v1/campaigns');
    expect(list.body.campaigns.map((c: { id: string }) => c.id)).toEqual([mine.campaign.id]);
    const owner = await api(theirs.key).get(base);
    expect(owner.body).toMatchObject({ participantCount: 1, loyaltyActionCount: 1 });
  });

  it("refuses to read another account's loyalty action", async () => {
    const mine = await makeWorld(stack.ctx);
    const theirs = await makeWorld(stack.ctx);
    const r = await api(theirs.key).post(`/v1/campaign/${theirs.campaign.id}/loyalty-action`, {
      participantEmail: uniqueEmail(),
      rewardId: theirs.reward.id,
    });
    expect(r.status).toBe(200);
    expectErrorShape(
      await api(mine.key).get(`/v1/campaign/${theirs.campaign.id}/loyalty-action/${r.body.action.id}`),
      403,
      'NOT_AUTHORIZED',
    );
    // Through my own campaign the action id does not resolve either.
    expectErrorShape(
      await api(mine.key).get(`/v1/campaign/${mine.campaign.id}/loyalty-action/${r.body.action.id}`),
      404,
      'NOT_FOUND',
    );
  });
});

describe('team members', () => {
  it('refuses a MEMBER without API access to the campaign', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await addParticipant(w);
    const { key } = await makeUserWithKey(stack.ctx, w.account.id, { role: 'MEMBER' });
    const base = `/v1/campaign/${w.campaign.id}`;

    const b = expectErrorShape(await api(key).get(base), 403, 'NOT_AUTHORIZED');
    expect(b.message).toMatch(/access/);
    expectErrorShape(
      await api(key).get(`${base}/participant/${encodeURIComponent(p.email)}`),
      403,
      'NOT_AUTHORIZED',
    );
    expectErrorShape(await api(key).get(`${base}/participant/${p.id}`), 403, 'NOT_AUTHORIZED');

    const before = await rowCounts();
    expectErrorShape(
      await api(key).post(`${base}/loyalty-action`, {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
      }),
      403,
      'NOT_AUTHORIZED',
    );
    expectErrorShape(
      await api(key).post(`${base}/participant/${p.id}/loyalty-action`, { rewardId: w.reward.id }),
      403,
      'NOT_AUTHORIZED',
    );
    expect(await rowCounts()).toEqual(before);

    const list = await api(key).get('/v1/campaigns');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ campaigns: [] });
  });

  it('lets a MEMBER with API access reach its campaigns only, and list only those', async () => {
    const w = await makeWorld(stack.ctx);
    const granted = await makeCampaign(stack.ctx, w.account.id, { name: 'Granted' });
    const other = await makeCampaign(stack.ctx, w.account.id, { name: 'Not granted' });
    const { key } = await makeUserWithKey(stack.ctx, w.account.id, {
      role: 'MEMBER',
      campaignIds: [w.campaign.id, granted.id],
    });

    const one = await api(key).get(`/v1/campaign/${w.campaign.id}`);
    expect(one.status).toBe(200);
    expect(one.body.id).toBe(w.campaign.id);
    expect((await api(key).get(`/v1/campaign/${granted.id}`)).status).toBe(200);
    expectErrorShape(await api(key).get(`/v1/campaign/${other.id}`), 403, 'NOT_AUTHORIZED');

    const list = await api(key).get('/v1/campaigns');
    expect(list.status).toBe(200);
    expect(list.body.campaigns.map((c: { id: string }) => c.id).sort()).toEqual(
      [w.campaign.id, granted.id].sort(),
    );
    // The account's admin sees all three.
    const all = await api(w.key).get('/v1/campaigns');
    expect(all.body.campaigns).toHaveLength(3);

    // The member can act on and read participants of its campaign.
    const email = uniqueEmail('member');
    const act = await api(key).post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
      participantEmail: email,
      rewardId: w.reward.id,
    });
    expect(act.status).toBe(200);
    expect(act.body.action.status).toBe('APPLIED');
    const p = await api(key).get(`/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}`);
    expect(p.status).toBe(200);
    expect(p.body.email).toBe(email);
  });
});

describe('campaigns that do not exist (404 NOT_FOUND)', () => {
  it('answers 404 for an unknown campaign id', async () => {
    const w = await makeWorld(stack.ctx);
    const unknown = `zz${w.campaign.id}`;
    const b = expectErrorShape(await api(w.key).get(`/v1/campaign/${unknown}`), 404, 'NOT_FOUND');
    expect(b.name).toBe('NotFound');
    expectErrorShape(
      await api(w.key).get(`/v1/campaign/${unknown}/participant/${encodeURIComponent(uniqueEmail())}`),
      404,
      'NOT_FOUND',
    );
    const before = await rowCounts();
    expectErrorShape(
      await api(w.key).post(`/v1/campaign/${unknown}/loyalty-action`, {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
      }),
      404,
      'NOT_FOUND',
    );
    expect(await rowCounts()).toEqual(before);
  });

  it('answers 404 for a DELETED campaign, on every endpoint, and writes nothing', async () => {
    const w = await makeWorld(stack.ctx);
    const p = await addParticipant(w);
    const base = `/v1/campaign/${w.campaign.id}`;
    expect((await api(w.key).get(base)).status).toBe(200);

    await updateCampaign(stack.ctx, w.campaign.id, { status: 'DELETED' });

    expectErrorShape(await api(w.key).get(base), 404, 'NOT_FOUND');
    expectErrorShape(
      await api(w.key).get(`${base}/participant/${encodeURIComponent(p.email)}`),
      404,
      'NOT_FOUND',
    );
    expectErrorShape(await api(w.key).get(`${base}/participant/${p.id}`), 404, 'NOT_FOUND');
    const before = await rowCounts();
    expectErrorShape(
      await api(w.key).post(`${base}/loyalty-action`, {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
      }),
      404,
      'NOT_FOUND',
    );
    expectErrorShape(
      await api(w.key).post(`${base}/participant/${p.id}/loyalty-action`, { rewardId: w.reward.id }),
      404,
      'NOT_FOUND',
    );
    expect(await rowCounts()).toEqual(before);

    // A MEMBER that was granted the campaign sees the same 404.
    const { key } = await makeUserWithKey(stack.ctx, w.account.id, {
      role: 'MEMBER',
      campaignIds: [w.campaign.id],
    });
    expectErrorShape(await api(key).get(base), 404, 'NOT_FOUND');
  });
});

describe('routes outside the API resources', () => {
  it('answers an unknown path with the 404 NOT_FOUND error body', async () => {
    const w = await makeWorld(stack.ctx);
    const v1 = expectErrorShape(await api(w.key).get('/v1/no-such-thing'), 404, 'NOT_FOUND');
    expect(v1.message).toContain('/v1/no-such-thing');
    expectErrorShape(await api(w.key).get('/v1/campaign'), 404, 'NOT_FOUND');
    expectErrorShape(await api().get('/no-such-thing'), 404, 'NOT_FOUND');
    expectErrorShape(
      await api(w.key).delete(`/v1/campaign/${w.campaign.id}/no-such-thing`),
      404,
      'NOT_FOUND',
    );
    expectErrorShape(await api().get('/v2/campaigns'), 404, 'NOT_FOUND');
    // A long path is echoed as an excerpt.
    const long = expectErrorShape(await api().get(`/${'x'.repeat(5000)}`), 404, 'NOT_FOUND');
    expect(long.message.length).toBeLessThan(300);
  });

  it('answers a known path with a method it does not take 405 METHOD_NOT_ALLOWED, listing its methods in Allow', async () => {
    const w = await makeWorld(stack.ctx);
    const raw = (method: string, path: string, key?: string) =>
      stack.app.request(path, { method, headers: key ? { authorization: `Bearer ${key}` } : {} });
    const reply = async (res: Response): Promise<Reply> => ({
      status: res.status,
      body: await res.json(),
      headers: res.headers,
    });
    const action = `/v1/campaign/${w.campaign.id}/loyalty-action`;
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
      const res = await raw(method, action, w.key);
      expect(res.headers.get('allow'), method).toBe('POST, OPTIONS');
      const body = expectErrorShape(await reply(res), 405, 'METHOD_NOT_ALLOWED');
      expect(body).toMatchObject({
        name: 'MethodNotAllowed',
        message: `${method} is not allowed on ${action}: it takes POST, OPTIONS`,
        allowedMethods: ['POST', 'OPTIONS'],
      });
    }
    // A path with several routes lists them all; HEAD wherever GET is.
    const participant = `/v1/campaign/${w.campaign.id}/participant/ada@example.com`;
    const put = await raw('PUT', participant, w.key);
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, HEAD, POST, PATCH, DELETE, OPTIONS');
    // Paths outside /v1 too: the operator API, and /health without a key.
    const admin = await raw('DELETE', '/admin/v1/accounts', OPERATOR_TOKEN);
    expectErrorShape(await reply(admin), 405, 'METHOD_NOT_ALLOWED');
    expect(admin.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
    const health = await raw('POST', '/health');
    expectErrorShape(await reply(health), 405, 'METHOD_NOT_ALLOWED');
    expect(health.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    // The API key is checked first, as on every /v1 path: without one the answer is 403, known path or not.
    expectErrorShape(await reply(await raw('PUT', action)), 403, 'NOT_AUTHORIZED');
  });

  it('answers OPTIONS on a known path 204 with Allow, HEAD as GET without a body, and both 404 on an unknown path', async () => {
    const w = await makeWorld(stack.ctx);
    const auth = { authorization: `Bearer ${w.key}` };
    const campaign = `/v1/campaign/${w.campaign.id}`;
    const options = await stack.app.request(`${campaign}/loyalty-action`, {
      method: 'OPTIONS',
      headers: auth,
    });
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toBe('POST, OPTIONS');
    expect(await options.text()).toBe('');
    const head = await stack.app.request(campaign, { method: 'HEAD', headers: auth });
    const get = await stack.app.request(campaign, { method: 'GET', headers: auth });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    expect(await head.text()).toBe('');
    for (const method of ['OPTIONS', 'HEAD']) {
      const res = await stack.app.request('/v1/no-such-thing', { method, headers: auth });
      expect(res.status, method).toBe(404);
      expect(res.headers.get('allow')).toBeNull();
    }
  });

  it('GET /health answers 200 without a key', async () => {
    const r = await api().get('/health');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ok' });
  });

  it('GET /ready answers 200 with the checks of PostgreSQL and Redis', async () => {
    const r = await api().get('/ready');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });
  });

  it('carries a request id on answers and errors', async () => {
    const ok = await api().get('/health');
    expect(ok.headers.get('x-request-id')).toMatch(/\S/);
    const err = await api().get('/v1/campaigns', { 'x-request-id': 'trace-123' });
    expectErrorShape(err, 403, 'NOT_AUTHORIZED');
    expect(err.headers.get('x-request-id')).toBe('trace-123');
    expect(err.body.requestId).toBe('trace-123');
  });
});
