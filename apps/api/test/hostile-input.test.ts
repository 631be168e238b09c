import { participants } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { client, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { refusals } from '../../../test/support/refused';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * Input an attacker or a careless client sends: prototype keys, deep nesting, strings PostgreSQL refuses,
 * integers past their column, and bodies with thousands of problems. Each is a 400 with the documented
 * body that names the field, writes nothing, and leaves the process serving everyone else.
 */
const stack = useTestStack({ worker: false });
const expectRefused = refusals(stack);

const api = (key: string) => client(inProcess(stack.app), key);
const operator = () => client(inProcess(stack.app), OPERATOR_TOKEN);
const JSON_TYPE = { 'content-type': 'application/json' };
const FORM_TYPE = { 'content-type': 'application/x-www-form-urlencoded' };

type Issue = { location: string; param: string; value: unknown; msg: string };
const params = (body: { errors: Issue[] }) => body.errors.map((e) => e.param);

afterEach(() => {
  // Nothing any test sent may have reached Object.prototype.
  expect(Object.keys(Object.prototype)).toEqual([]);
  expect(({} as Record<string, unknown>).x).toBeUndefined();
});

async function world() {
  const w = await makeWorld(stack.ctx);
  return { ...w, path: `/v1/campaign/${w.campaign.id}/loyalty-action` };
}

describe('prototype keys', () => {
  it('a form key __proto__[x] is refused at every depth, and JSON requests of every tenant still work', async () => {
    const w = await world();
    const other = await world();
    for (const form of [
      '__proto__[x]=1',
      `participantEmail=${uniqueEmail()}&rewardId=${w.reward.id}&metadata[__proto__][x]=1`,
      `participantEmail=${uniqueEmail()}&rewardId=${w.reward.id}&__proto__=1`,
      'constructor[prototype][x]=1',
      `participantEmail=${uniqueEmail()}&rewardId=${w.reward.id}&metadata[constructor]=1`,
      'prototype=1',
    ]) {
      const body = await expectRefused(
        () => api(w.key).post(w.path, form, FORM_TYPE),
        400,
        'VALIDATION_ERROR',
      );
      expect(body.errors.some((e: Issue) => /__proto__|constructor|prototype/.test(e.param))).toBe(true);
    }
    // The same goes for an unknown campaign and for the operator API.
    await expectRefused(
      () => api(w.key).post('/v1/campaign/nope/loyalty-action', '__proto__[x]=1', FORM_TYPE),
      400,
      'VALIDATION_ERROR',
    );
    await expectRefused(
      () => operator().post('/admin/v1/accounts', 'name=A&plan=GROWTH&__proto__[x]=1', FORM_TYPE),
      400,
      'VALIDATION_ERROR',
    );
    const ok = await api(other.key).post(other.path, {
      participantEmail: uniqueEmail(),
      rewardId: other.reward.id,
    });
    expect(ok.status).toBe(200);
    const op = await operator().post('/admin/v1/accounts', { name: 'After', plan: 'GROWTH' });
    expect(op.status).toBe(200);
  });

  it('__proto__, constructor and prototype inside JSON metadata are refused, not dropped', async () => {
    const w = await world();
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const raw = `{"participantEmail":"${uniqueEmail()}","rewardId":"${w.reward.id}","metadata":{"${key}":"x","ok":1}}`;
      const body = await expectRefused(
        () => api(w.key).post(w.path, raw, JSON_TYPE),
        400,
        'VALIDATION_ERROR',
      );
      expect(params(body)).toEqual([`metadata.${key}`]);
      expect(body.errors[0].msg).toBe('this key is not allowed');
    }
    // A top-level one too, and one in an operator body.
    const top = `{"__proto__":{"x":1},"participantEmail":"${uniqueEmail()}","rewardId":"${w.reward.id}"}`;
    expect(
      params(await expectRefused(() => api(w.key).post(w.path, top, JSON_TYPE), 400, 'VALIDATION_ERROR')),
    ).toEqual(['__proto__']);
    const reward = `{"title":"T","metadata":{"constructor":{"prototype":{"x":1}}}}`;
    await expectRefused(
      () => operator().post(`/admin/v1/campaigns/${w.campaign.id}/rewards`, reward, JSON_TYPE),
      400,
      'VALIDATION_ERROR',
    );
  });

  it('prototype keys in the query string are ignored like any unknown query parameter', async () => {
    const w = await world();
    const r = await api(w.key).post(`${w.path}?__proto__[x]=1&constructor[prototype][y]=2&prototype=3`, {
      participantEmail: uniqueEmail(),
      rewardId: w.reward.id,
    });
    expect(r.status).toBe(200);
  });

  it('ordinary keys that name Object methods are plain data', async () => {
    const w = await world();
    const email = uniqueEmail();
    const r = await api(w.key).post(
      w.path,
      `participantEmail=${email}&rewardId=${w.reward.id}&metadata[toString]=a&metadata[hasOwnProperty]=b&metadata[valueOf]=3`,
      FORM_TYPE,
    );
    expect(r.status).toBe(200);
    const [p] = await stack.ctx.db.select().from(participants).where(eq(participants.email, email));
    expect(p!.metadata).toEqual({ toString: 'a', hasOwnProperty: 'b', valueOf: '3' });
  });
});

describe('depth', () => {
  it('JSON nested 10,000 levels is a 400 that names the limit, not a 500', async () => {
    const w = await world();
    const deep = `{"participantEmail":"${uniqueEmail()}","rewardId":"${w.reward.id}","metadata":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    const body = await expectRefused(() => api(w.key).post(w.path, deep, JSON_TYPE), 400, 'VALIDATION_ERROR');
    expect(body.message).toMatch(/nested more than 6 levels/);
    const objects = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    await expectRefused(
      () => operator().post('/admin/v1/accounts', objects, JSON_TYPE),
      400,
      'VALIDATION_ERROR',
    );
  });

  it('a form key nested 10,000 levels is refused the same way', async () => {
    const w = await world();
    const form = `participantEmail=${uniqueEmail()}&rewardId=${w.reward.id}&metadata${'[a]'.repeat(10_000)}=1`;
    const body = await expectRefused(() => api(w.key).post(w.path, form, FORM_TYPE), 400, 'VALIDATION_ERROR');
    expect(body.message).toMatch(/nested more than 6 levels/);
  });

  it('metadata one level too deep is refused with a short excerpt of the value', async () => {
    const w = await world();
    const body = await expectRefused(
      () =>
        api(w.key).post(w.path, {
          participantEmail: uniqueEmail(),
          rewardId: w.reward.id,
          metadata: { nested: { a: 'x'.repeat(5000), b: [1, 2, 3] } },
        }),
      400,
      'VALIDATION_ERROR',
    );
    expect(body.errors[0]).toMatchObject({ param: 'metadata.nested', value: '{object with 2 keys}' });
    expect(JSON.stringify(body).length).toBeLessThan(2000);
  });
});

describe('strings PostgreSQL refuses', () => {
  const nul = 'a\u0000b';
  const lone = 'a\ud800b';

  it('NUL and unpaired surrogates in names, metadata keys and values are 400s that name the field', async () => {
    const w = await world();
    const base = () => ({ participantEmail: uniqueEmail(), rewardId: w.reward.id });
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base(), firstName: nul }, 'firstName'],
      [{ ...base(), lastName: lone }, 'lastName'],
      [{ ...base(), fingerprint: nul }, 'fingerprint'],
      [{ ...base(), metadata: { note: nul } }, 'metadata.note'],
      [{ ...base(), metadata: { note: lone } }, 'metadata.note'],
      [{ ...base(), metadata: { [`k${nul}`]: 1 } }, `metadata.k${nul}`],
      [{ ...base(), metadata: { [`k${lone}`]: 1 } }, `metadata.k${lone}`],
      [{ participantEmail: `a${nul}@example.com`, rewardId: w.reward.id }, 'participantEmail'],
    ];
    for (const [payload, param] of cases) {
      // JSON.stringify writes a lone surrogate as the escape \ud800, as a hostile client would.
      const body = await expectRefused(() => api(w.key).post(w.path, payload), 400, 'VALIDATION_ERROR');
      expect(params(body)).toEqual([param]);
      expect(body.errors[0].msg).toMatch(/NUL|surrogate/);
    }
  });

  it('the same in form bodies and in operator fields', async () => {
    const w = await world();
    await expectRefused(
      () =>
        api(w.key).post(
          w.path,
          `participantEmail=${uniqueEmail()}&rewardId=${w.reward.id}&firstName=a%00b`,
          FORM_TYPE,
        ),
      400,
      'VALIDATION_ERROR',
    );
    for (const [path, payload, param] of [
      ['/admin/v1/accounts', { name: nul, plan: 'GROWTH' }, 'name'],
      [`/admin/v1/accounts/${w.account.id}/campaigns`, { name: lone }, 'name'],
      [`/admin/v1/campaigns/${w.campaign.id}/rewards`, { title: 'T', couponCode: nul }, 'couponCode'],
      [
        `/admin/v1/campaigns/${w.campaign.id}/rewards`,
        { title: 'T', submissionFormFields: [{ key: nul }] },
        'submissionFormFields.0.key',
      ],
    ] as const) {
      const body = await expectRefused(() => operator().post(path, payload), 400, 'VALIDATION_ERROR');
      expect(params(body)).toEqual([param]);
    }
    const patch = await expectRefused(
      () => operator().patch(`/admin/v1/campaigns/${w.campaign.id}`, { name: nul }),
      400,
      'VALIDATION_ERROR',
    );
    expect(params(patch)).toEqual(['name']);
  });

  it('a NUL in the path or the query is a 400, not a database error', async () => {
    const w = await world();
    const path = await expectRefused(
      () =>
        api(w.key).post('/v1/campaign/a%00b/loyalty-action', {
          participantEmail: uniqueEmail(),
          rewardId: w.reward.id,
        }),
      400,
      'VALIDATION_ERROR',
    );
    expect(path.errors[0].location).toBe('params');
    const email = await expectRefused(
      () => api(w.key).get(`/v1/campaign/${w.campaign.id}/participant/a%00@example.com`),
      400,
      'VALIDATION_ERROR',
    );
    expect(email.errors[0].location).toBe('params');
    const query = await expectRefused(() => api(w.key).get(`/v1/campaigns?x=%00`), 400, 'VALIDATION_ERROR');
    expect(query.errors[0].location).toBe('query');
  });
});

describe('integers are bounded by their columns', () => {
  it('3e9 is refused for every integer of the operator API, and the column maximum is accepted', async () => {
    const w = await world();
    const big = 3e9;
    const cases: [string, Record<string, unknown>, string][] = [
      ['/admin/v1/accounts', { name: 'A', plan: 'GROWTH', participantQuota: big }, 'participantQuota'],
      ['/admin/v1/accounts', { name: 'A', plan: 'GROWTH', rateLimits: { hour: big } }, 'rateLimits.hour'],
      [
        `/admin/v1/campaigns/${w.campaign.id}/rewards`,
        { title: 'T', conversionsRequired: big },
        'conversionsRequired',
      ],
      [`/admin/v1/campaigns/${w.campaign.id}/rewards`, { title: 'T', limit: big }, 'limit'],
      [`/admin/v1/campaigns/${w.campaign.id}/rewards`, { title: 'T', order: big }, 'order'],
      [`/admin/v1/campaigns/${w.campaign.id}/rewards`, { title: 'T', order: -big }, 'order'],
      [
        `/admin/v1/campaigns/${w.campaign.id}/rewards`,
        { title: 'T', limitDuration: 'PER_MONTH', numberOfWinners: big },
        'numberOfWinners',
      ],
      [
        `/admin/v1/accounts/${w.account.id}/campaigns`,
        { name: 'C', antiFraud: { ipThrottle: big } },
        'antiFraud.ipThrottle',
      ],
    ];
    for (const [path, payload, param] of cases) {
      const body = await expectRefused(() => operator().post(path, payload), 400, 'VALIDATION_ERROR');
      expect(params(body)).toEqual([param]);
    }
    const patch = await expectRefused(
      () => operator().patch(`/admin/v1/campaigns/${w.campaign.id}/rewards/${w.reward.id}`, { limit: big }),
      400,
      'VALIDATION_ERROR',
    );
    expect(params(patch)).toEqual(['limit']);
    const max = await operator().post(`/admin/v1/campaigns/${w.campaign.id}/rewards`, {
      title: 'Max',
      limit: 2_147_483_647,
      conversionsRequired: 2_147_483_647,
      order: -2_147_483_648,
    });
    expect(max.status).toBe(200);
    expect(max.body).toMatchObject({
      limit: 2_147_483_647,
      conversionsRequired: 2_147_483_647,
      order: -2_147_483_648,
    });
    const form = await expectRefused(
      () =>
        operator().post('/admin/v1/accounts', 'name=A&plan=GROWTH&participantQuota=3000000000', FORM_TYPE),
      400,
      'VALIDATION_ERROR',
    );
    expect(params(form)).toEqual(['participantQuota']);
  });
});

describe('error bodies stay small', () => {
  it('100,000 unknown form fields: a short 400, not megabytes', async () => {
    const w = await world();
    const form = Array.from({ length: 100_000 }, (_, i) => `f${i}=1`).join('&');
    const r = await api(w.key).post(w.path, form, FORM_TYPE);
    const body = await expectRefused(async () => r, 400, 'VALIDATION_ERROR');
    expect(body.message).toMatch(/more than 1000 form fields/);
    expect(JSON.stringify(body).length).toBeLessThan(2000);
  });

  it('many problems: at most 25 listed, with the total and a message that says how many more', async () => {
    const w = await world();
    const payload: Record<string, unknown> = { participantEmail: uniqueEmail(), rewardId: w.reward.id };
    for (let i = 0; i < 900; i++) payload[`unknown${i}`] = 'x'.repeat(100);
    const body = await expectRefused(() => api(w.key).post(w.path, payload), 400, 'VALIDATION_ERROR');
    expect(body.errors).toHaveLength(25);
    expect(body.errorCount).toBe(900);
    expect(body.message).toMatch(/and 895 more problems$/);
    expect(body.errors[0]).toEqual({
      location: 'body',
      param: 'unknown0',
      value: `${'x'.repeat(64)}…`,
      msg: 'unknown field',
    });
    expect(JSON.stringify(body).length).toBeLessThan(6000);
  });
});
