import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { client, expectErrorShape, overHttp, type Reply } from '../support/client';
import { makeWorld, uniqueEmail } from '../support/factories';
import { fingerprint } from '../support/refused';
import { OPERATOR_TOKEN } from '../support/stack';
import { useTestStack } from '../support/use';

/**
 * Generated bodies thrown at every write endpoint, public and operator, over real HTTP: random JSON values,
 * deep nesting, huge strings, control characters, unpaired surrogates, prototype keys, numbers at and past
 * every bound, and the form encodings of the same. Whatever comes in: never a 5xx, the documented body on
 * every non-200, nothing changed in the database after any 4xx, and the process still serves afterwards.
 *
 * CI runs a fixed seed and `FUZZ_RUNS` runs per endpoint (default 25); `FUZZ_RUNS=2000 FUZZ_SEED=… npm test
 * -- test/e2e/fuzz.test.ts` explores further.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);

const stack = useTestStack({ worker: false, http: true });

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udfffy',
    '\u202e',
    '',
    ' ',
    '__proto__',
    'constructor',
    'toString',
  ),
  fc.constantFrom('x'.repeat(300), 'é'.repeat(20_000), 'y'.repeat(1_100_000)),
  fc.constantFrom(
    'a@b.co',
    'not-an-email',
    'A@EXAMPLE.COM',
    '1.2.3.4',
    '::1',
    'https://example.com',
    'javascript:alert(1)',
  ),
);
const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(
    0,
    -1,
    1,
    2_147_483_647,
    2_147_483_648,
    -2_147_483_648,
    -2_147_483_649,
    3e9,
    1e308,
    -0,
    0.5,
    2 ** 53 + 2,
  ),
);
const hostileKey = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', ''),
  hostileString.filter((s) => s.length < 300),
);

/** Any JSON value, nesting a few levels, with every leaf kind above. */
const { value: hostileValue } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileKey, tie('value'), { maxKeys: 4, noNullPrototype: true }),
  ),
}));

/** A value nested `depth` levels deep, in arrays or objects. */
const deep = fc.tuple(fc.integer({ min: 3, max: 40 }), fc.boolean()).map(([depth, arrays]) => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = arrays ? [v] : { a: v };
  return v;
});

/** A plausible body for the endpoint, with some fields replaced by hostile values or keys. */
function bodyFor(base: Record<string, fc.Arbitrary<unknown>>) {
  const fields = Object.keys(base);
  return fc
    .tuple(
      fc.record(base, { requiredKeys: [] }),
      fc.dictionary(
        fc.oneof(fc.constantFrom(...fields, 'metadata'), hostileKey),
        fc.oneof(hostileValue, deep),
        {
          maxKeys: 3,
          noNullPrototype: true,
        },
      ),
    )
    .map(([good, bad]) => ({ ...good, ...bad }));
}

/** Percent-encoding that, unlike encodeURIComponent, also writes an unpaired surrogate (as its WTF-8 bytes). */
function encodeLoosely(s: string): string {
  let out = '';
  for (const ch of s) {
    const u = ch.charCodeAt(0);
    if (ch.length === 1 && u >= 0xd800 && u <= 0xdfff) {
      out += [0xe0 | (u >> 12), 0x80 | ((u >> 6) & 0x3f), 0x80 | (u & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    } else out += encodeURIComponent(ch);
  }
  return out;
}

/** `a[b][c]=v` form encoding of a value, as a browser form or a careless client writes it. */
function toForm(value: unknown): string {
  const pairs: string[] = [];
  const walk = (v: unknown, key: string) => {
    if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) walk(child, key ? `${key}[${k}]` : k);
    } else pairs.push(`${encodeLoosely(key)}=${encodeLoosely(String(v))}`);
  };
  walk(value, '');
  return pairs.join('&');
}

type Sent = { text: string; type: string | undefined };
const encodings = (body: fc.Arbitrary<unknown>): fc.Arbitrary<Sent> =>
  fc.oneof(
    body.map((b) => ({ text: JSON.stringify(b), type: 'application/json' })),
    body.map((b) => ({ text: toForm(b), type: 'application/x-www-form-urlencoded' })),
    hostileValue.map((b) => ({ text: JSON.stringify(b) ?? '', type: 'application/json' })),
    // Nesting far past the limit is written as text: as a value it would overflow the generator itself.
    fc.tuple(fc.integer({ min: 7, max: 20_000 }), fc.boolean()).map(([n, arrays]) => ({
      text: arrays ? `${'['.repeat(n)}${']'.repeat(n)}` : `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`,
      type: 'application/json',
    })),
    fc.integer({ min: 7, max: 20_000 }).map((n) => ({
      text: `metadata${'[a]'.repeat(n)}=1`,
      type: 'application/x-www-form-urlencoded',
    })),
    fc.string({ unit: 'binary', maxLength: 200 }).map((t) => ({ text: t, type: 'application/json' })),
    body.map((b) => ({ text: JSON.stringify(b), type: undefined })),
    body.map((b) => ({ text: JSON.stringify(b), type: 'text/plain' })),
  );

const email = fc.oneof(
  fc.constant(null).map(() => uniqueEmail('fuzz')),
  hostileString,
);
const small = fc.oneof(fc.integer({ min: -2, max: 5 }), hostileNumber);

describe('fuzzing every write endpoint', () => {
  it(
    'never a 5xx, always the documented body, nothing written by a refusal, and still serving',
    async () => {
      const w = await makeWorld(stack.ctx);
      const api = client(overHttp(stack.baseUrl!), w.key);
      const operator = client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
      const seeded = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
      });
      const participantId = seeded.body.action.participantId as string;
      const c = w.campaign.id;
      const hook = await operator.post(`/admin/v1/campaigns/${c}/webhook-endpoints`, {
        url: 'https://h.example/x',
      });
      const hookUrl = fc.oneof(
        hostileString,
        fc.webUrl(),
        fc.constantFrom('http://[::1]:0/', 'ftp://x', 'http://%zz'),
      );
      const endpoints: [string, string, 'api' | 'operator', fc.Arbitrary<unknown>][] = [
        [
          'POST',
          `/admin/v1/campaigns/${c}/webhook-endpoints`,
          'operator',
          bodyFor({
            url: hookUrl,
            eventTypes: hostileValue,
            kind: fc.constantFrom('NOTIFY', 'FULFILMENT', 'BOTH'),
            rateLimit: small,
            description: hostileString,
          }),
        ],
        [
          'PATCH',
          `/admin/v1/webhook-endpoints/${hook.body.id}`,
          'operator',
          bodyFor({ url: hookUrl, enabled: hostileValue, rateLimit: small, eventTypes: hostileValue }),
        ],
        [
          'POST',
          `/admin/v1/webhook-endpoints/${hook.body.id}/replay`,
          'operator',
          bodyFor({
            status: fc.constantFrom('FAILED', 'PENDING', 'X'),
            since: hostileNumber,
            eventType: hostileString,
          }),
        ],
        [
          'POST',
          `/admin/v1/webhook-endpoints/${hook.body.id}/rotate-secret`,
          'operator',
          bodyFor({ overlapMs: hostileNumber }),
        ],
        [
          'POST',
          `/v1/campaign/${c}/loyalty-action`,
          'api',
          bodyFor({
            participantEmail: email,
            rewardId: fc.constant(w.reward.id),
            firstName: hostileString,
            metadata: hostileValue,
            addParticipantIfNoneExists: fc.boolean(),
            ipAddress: hostileString,
          }),
        ],
        [
          'POST',
          `/v1/campaign/${c}/participant/${participantId}/loyalty-action`,
          'api',
          bodyFor({ rewardId: fc.constant(w.reward.id), metadata: hostileValue }),
        ],
        [
          'POST',
          '/admin/v1/accounts',
          'operator',
          bodyFor({
            name: hostileString,
            plan: fc.constantFrom('FREE', 'GROWTH', 'NOPE'),
            participantQuota: small,
            rateLimits: hostileValue,
          }),
        ],
        [
          'POST',
          `/admin/v1/accounts/${w.account.id}/users`,
          'operator',
          bodyFor({ email, role: fc.constantFrom('ADMIN', 'MEMBER', 'ROOT'), campaignIds: hostileValue }),
        ],
        ['POST', `/admin/v1/users/${w.user.id}/api-keys`, 'operator', bodyFor({})],
        [
          'POST',
          `/admin/v1/accounts/${w.account.id}/campaigns`,
          'operator',
          bodyFor({
            name: hostileString,
            currencyISO: hostileString,
            status: fc.constantFrom('DRAFT', 'IN_PROGRESS', 'X'),
            antiFraud: hostileValue,
          }),
        ],
        [
          'PATCH',
          `/admin/v1/campaigns/${c}`,
          'operator',
          bodyFor({ name: hostileString, requireRewardApproval: hostileValue }),
        ],
        [
          'POST',
          `/admin/v1/campaigns/${c}/rewards`,
          'operator',
          bodyFor({
            title: hostileString,
            limit: small,
            conversionsRequired: small,
            order: hostileNumber,
            submissionFormFields: hostileValue,
            metadata: hostileValue,
          }),
        ],
        [
          'PATCH',
          `/admin/v1/campaigns/${c}/rewards/${w.reward.id}`,
          'operator',
          bodyFor({
            title: hostileString,
            limit: small,
            limitDuration: fc.constantFrom('IN_TOTAL', 'PER_MONTH', 'YEARLY'),
            numberOfWinners: small,
          }),
        ],
      ];

      const statuses = new Map<number, number>();
      for (const [method, path, who, body] of endpoints) {
        const send = who === 'api' ? api : operator;
        await fc.assert(
          fc.asyncProperty(encodings(body), async ({ text, type }) => {
            const headers: Record<string, string> = type ? { 'content-type': type } : {};
            const before = await fingerprint(stack.ctx.db);
            const reply: Reply =
              method === 'POST'
                ? await send.post(path, text, headers)
                : await send.patch(path, text, headers);
            statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
            expect(reply.status, `${method} ${path} ${text.slice(0, 200)}`).toBeLessThan(500);
            if (reply.status !== 200) {
              expectErrorShape(reply, reply.status, reply.body?.code);
              expect(JSON.stringify(reply.body).length).toBeLessThan(16_384);
              expect(await fingerprint(stack.ctx.db)).toEqual(before);
            }
          }),
          { numRuns: RUNS, seed: SEED, endOnFailure: true },
        );
      }
      // Both outcomes were exercised: the generator is not only producing refusals.
      expect(statuses.get(400) ?? 0).toBeGreaterThan(0);
      expect(statuses.get(200) ?? 0).toBeGreaterThan(0);

      expect(Object.keys(Object.prototype)).toEqual([]);
      const after = await api.post(`/v1/campaign/${c}/loyalty-action`, {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
      });
      expect(after.status).toBe(200);
      expect(
        (await operator.post('/admin/v1/accounts', { name: 'Still serving', plan: 'GROWTH' })).status,
      ).toBe(200);
    },
    30_000 + RUNS * 9 * 50,
  );
});
