import { readFileSync } from 'node:fs';
import { createStampcardClient, type Retry, verify, WebhookVerificationError } from '@stampcard/client';
import { idempotencyKeys, loyaltyActions } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { eventually } from '../support/client';
import { TEST_RATE_LIMITS, uniqueEmail } from '../support/factories';
import { ROOT, runToEnd } from '../support/processes';
import { useReceivers } from '../support/receiver';
import { commitsInFlight, installSlowCommits } from '../support/slow-commit';
import { OPERATOR_TOKEN } from '../support/stack';
import { useFreezableStack } from '../support/use';

/**
 * `@stampcard/client` against the whole service over HTTP (API, worker, dispatcher, real PostgreSQL and
 * Redis): the operator sets a program up, the business counts actions and reads its participant, a receiver
 * verifies the signed webhook, and real 429s and 503s are retried with the request's one Idempotency-Key.
 * The stack's pool goes through a proxy that can make PostgreSQL silent, which is how a real 503 is made.
 */
const REQUEST_TIMEOUT_MS = 1000;

const { db, proxy, stack } = useFreezableStack({
  http: true,
  dispatcher: true,
  requestTimeoutMs: REQUEST_TIMEOUT_MS,
  prepare: installSlowCommits,
});
const startReceiver = useReceivers();

const operator = () => createStampcardClient({ baseUrl: stack.baseUrl!, apiKey: OPERATOR_TOKEN });

/** What an operator sets up for a business, through the client: account, admin's API key, program, reward. */
async function program(rateLimits: Record<string, number> = TEST_RATE_LIMITS) {
  const op = operator();
  const account = await op.POST('/admin/v1/accounts', { body: { name: 'Acme', plan: 'GROWTH', rateLimits } });
  const accountId = account.data!.id;
  const user = await op.POST('/admin/v1/accounts/{accountId}/users', {
    params: { path: { accountId } },
    body: { email: uniqueEmail('admin'), role: 'ADMIN' },
  });
  const campaign = await op.POST('/admin/v1/accounts/{accountId}/campaigns', {
    params: { path: { accountId } },
    body: { name: 'Coffee', status: 'IN_PROGRESS' },
  });
  const campaignId = campaign.data!.id;
  const reward = await op.POST('/admin/v1/campaigns/{id}/rewards', {
    params: { path: { id: campaignId } },
    body: { title: 'Free coffee', conversionsRequired: 2, isUnlimited: true },
  });
  const newKey = async () => {
    const res = await op.POST('/admin/v1/users/{userId}/api-keys', {
      params: { path: { userId: user.data!.id } },
    });
    return { key: res.data!.key!, keyId: res.data!.id };
  };
  return { accountId, campaignId, rewardId: reward.data!.id, ...(await newKey()), newKey };
}

/** The Idempotency-Keys the API holds for one API key's requests. */
const keysOf = (keyId: string) =>
  stack.ctx.db
    .select({ key: idempotencyKeys.key, path: idempotencyKeys.path, status: idempotencyKeys.responseStatus })
    .from(idempotencyKeys)
    .where(eq(idempotencyKeys.scope, `key:${keyId}`));

const actionsOf = (participantId: string) =>
  stack.ctx.db.$count(loyaltyActions, eq(loyaltyActions.participantId, participantId));

describe('the typed client against the running service', () => {
  it('sets up, counts actions, reads the participant, and the webhook verifies with the re-exported verify', async () => {
    const p = await program();
    const receiver = await startReceiver();
    const endpoint = await operator().POST('/admin/v1/campaigns/{id}/webhook-endpoints', {
      params: { path: { id: p.campaignId } },
      body: { url: receiver.url, eventTypes: ['PARTICIPANT_REACHED_A_GOAL'] },
    });
    expect(endpoint.error).toBeUndefined();
    const secret = endpoint.data!.secret!;

    const api = createStampcardClient({ baseUrl: stack.baseUrl!, apiKey: p.key });
    const email = uniqueEmail('ada');
    const path = { id: p.campaignId };
    const first = await api.POST('/v1/campaign/{id}/loyalty-action', {
      params: { path },
      body: { participantEmail: email, rewardId: p.rewardId, firstName: 'Ada' },
    });
    expect(first.response.status).toBe(200);
    expect(first.data?.action.status).toBe('QUEUED');

    const second = await api.POST('/v1/campaign/{id}/loyalty-action', {
      params: { path, query: { wait: 'true' } },
      body: { participantEmail: email, rewardId: p.rewardId },
    });
    expect(second.data?.action).toMatchObject({
      status: 'APPLIED',
      unlockedRewards: [expect.objectContaining({ rewardId: p.rewardId })],
    });

    const participant = await api.GET('/v1/campaign/{id}/participant/{idOrEmail}', {
      params: { path: { id: p.campaignId, idOrEmail: email } },
    });
    expect(participant.data).toMatchObject({
      email,
      firstName: 'Ada',
      loyaltyActionCount: 2,
      isWinner: true,
    });

    // An error is the API's error body, typed.
    const missing = await api.GET('/v1/campaign/{id}/participant/{idOrEmail}', {
      params: { path: { id: p.campaignId, idOrEmail: 'nobody@example.com' } },
    });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.code).toBe('NOT_FOUND');

    // Each POST carried an Idempotency-Key of its own, which the API kept with its answer.
    const held = await keysOf(p.keyId);
    expect(held).toHaveLength(2);
    expect(new Set(held.map((k) => k.key)).size).toBe(2);
    for (const k of held)
      expect(k.key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    const [delivery] = await receiver.waitFor(1);
    const event = verify({ headers: delivery!.headers, body: delivery!.body, secret }) as {
      type: string;
      data: { participant: { email: string } };
    };
    expect(event.type).toBe('PARTICIPANT_REACHED_A_GOAL');
    expect(event.data.participant.email).toBe(email);
    expect(() =>
      verify({ headers: delivery!.headers, body: delivery!.body.replace(email, 'eve@example.com'), secret }),
    ).toThrow(WebhookVerificationError);
  });

  it('a 429 is retried after its Retry-After with the same Idempotency-Key, the one the API then holds', async () => {
    // One request per 5 s window: the second is refused until the first leaves it.
    const p = await program({ ...TEST_RATE_LIMITS, second: 1 });
    const retries: Retry[] = [];
    const api = createStampcardClient({
      baseUrl: stack.baseUrl!,
      apiKey: p.key,
      retry: { onRetry: (r) => retries.push(r) },
    });
    expect((await api.GET('/v1/campaigns')).response.status).toBe(200);

    const body = { participantEmail: uniqueEmail(), rewardId: p.rewardId };
    const started = Date.now();
    const accepted = await api.POST('/v1/campaign/{id}/loyalty-action', {
      params: { path: { id: p.campaignId } },
      body,
    });
    expect(accepted.response.status).toBe(200);
    // Refused at least once (again only if a retry met the window's very edge), each time waited as told.
    expect(retries.length).toBeGreaterThanOrEqual(1);
    for (const r of retries) {
      expect(r.response.status).toBe(429);
      const retryAfter = Number(r.response.headers.get('Retry-After'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(r.delayMs).toBe(retryAfter * 1000);
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(retries.reduce((sum, r) => sum + r.delayMs, 0));
    const key = retries[0]!.request.headers.get('Idempotency-Key')!;
    expect(key).toBeTruthy();

    // The refused attempt claimed nothing; the retry that ran holds the key, with its answer.
    expect((await keysOf(p.keyId)).map((k) => [k.key, k.status])).toEqual([[key, 200]]);
    expect(await actionsOf(accepted.data!.action.participantId)).toBe(1);
  });

  it('a 429 whose Retry-After is past maxWaitMs is answered at once, as is one past maxAttempts', async () => {
    const p = await program({ ...TEST_RATE_LIMITS, second: 1 });
    const retries: Retry[] = [];
    const onRetry = (r: Retry) => retries.push(r);
    const patient = createStampcardClient({ baseUrl: stack.baseUrl!, apiKey: p.key, retry: { onRetry } });
    expect((await patient.GET('/v1/campaigns')).response.status).toBe(200);

    for (const retry of [{ maxWaitMs: 500 }, { maxAttempts: 1 }, false as const]) {
      const api = createStampcardClient({
        baseUrl: stack.baseUrl!,
        apiKey: p.key,
        retry: retry && { ...retry, onRetry },
      });
      const refused = await api.GET('/v1/campaigns');
      expect(refused.response.status, JSON.stringify(retry)).toBe(429);
      expect(refused.error).toMatchObject({ code: 'RATE_LIMIT', policyName: 'SECOND' });
      expect(Number(refused.response.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
    }
    expect(retries).toEqual([]);
  });

  it('a 503 (PostgreSQL silent past the deadline, nothing written) is retried with the same Idempotency-Key', async () => {
    const p = await program();
    // A key the API has not seen yet is looked up in PostgreSQL: with the proxy frozen, that look-up hangs.
    const { key: apiKey, keyId } = await p.newKey();
    const retries: Retry[] = [];
    const api = createStampcardClient({
      baseUrl: stack.baseUrl!,
      apiKey,
      retry: {
        onRetry: (r) => {
          retries.push(r);
          proxy.thaw();
        },
      },
    });
    const body = { participantEmail: uniqueEmail(), rewardId: p.rewardId };
    const send = () =>
      api.POST('/v1/campaign/{id}/loyalty-action', { params: { path: { id: p.campaignId } }, body });
    proxy.freeze();
    let accepted: Awaited<ReturnType<typeof send>>;
    try {
      accepted = await send();
    } finally {
      proxy.thaw();
    }
    expect(retries.map((r) => r.response.status)).toEqual([503]);
    expect(accepted.response.status).toBe(200);
    const key = retries[0]!.request.headers.get('Idempotency-Key')!;
    expect((await keysOf(keyId)).map((k) => [k.key, k.status])).toEqual([[key, 200]]);

    const again = await api.POST('/v1/campaign/{id}/loyalty-action', {
      params: { path: { id: p.campaignId }, header: { 'Idempotency-Key': key } },
      body,
    });
    expect(again.response.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.data?.action.id).toBe(accepted.data?.action.id);
    expect(await actionsOf(accepted.data!.action.participantId)).toBe(1);
  });

  it('a 503 that says the write may have landed (outcome UNKNOWN) is answered, not repeated', async () => {
    const p = await program();
    const retries: Retry[] = [];
    const api = createStampcardClient({
      baseUrl: stack.baseUrl!,
      apiKey: p.key,
      retry: { onRetry: (r) => retries.push(r) },
    });
    // The action's COMMIT sleeps on the server; its connection is cut meanwhile: nobody can say if it landed.
    const reply = api.POST('/v1/campaign/{id}/loyalty-action', {
      params: { path: { id: p.campaignId } },
      body: { participantEmail: uniqueEmail(), rewardId: p.rewardId, metadata: { commitSleepMs: 3000 } },
    });
    const [pid] = await eventually(
      () => commitsInFlight(db),
      (pids) => pids.length === 1,
    );
    await db.sql`select pg_terminate_backend(${pid!})`;
    const unknown = await reply;
    expect(unknown.response.status).toBe(503);
    expect(unknown.error).toMatchObject({ code: 'UNAVAILABLE', outcome: 'UNKNOWN' });
    expect(retries).toEqual([]);
  });

  it("the READMEs' TypeScript examples run as written against the running service", async () => {
    const p = await program();
    const env = {
      API_KEY: p.key,
      CAMPAIGN_ID: p.campaignId,
      REWARD_ID: p.rewardId,
      STAMPCARD_URL: stack.baseUrl!,
    };
    for (const [file, section] of [
      ['README.md', '## Try it'],
      ['packages/client/README.md', '## Use'],
    ] as const) {
      const text = readFileSync(`${ROOT}${file}`, 'utf8');
      const code = text.slice(text.indexOf(section)).match(/```ts\n([\s\S]*?)```/)![1]!;
      const run = await runTypeScript(code, env);
      expect(run.stderr, file).toBe('');
      expect(run.code, file).toBe(0);
      expect(run.stdout, file).toContain('APPLIED');
    }
    const grace = await createStampcardClient({ baseUrl: stack.baseUrl!, apiKey: p.key }).GET(
      '/v1/campaign/{id}/participant/{idOrEmail}',
      { params: { path: { id: p.campaignId, idOrEmail: 'grace@example.com' } } },
    );
    expect(grace.data?.firstName).toBe('Grace');
  });
});

/** Runs TypeScript as a user's script in the repository's folder would run (`npx tsx`), with `env` set. */
const runTypeScript = (code: string, env: Record<string, string>) =>
  runToEnd(
    process.execPath,
    [`${ROOT}node_modules/tsx/dist/cli.mjs`, '--input-type=module', '-e', code],
    env,
  );
