import { request as httpRequest } from 'node:http';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { client, expectErrorShape, overHttp } from '../support/client';
import { makeWorld } from '../support/factories';
import { startProcess, waitForOutput } from '../support/processes';
import { OPERATOR_TOKEN } from '../support/stack';
import { useTestStack } from '../support/use';

/**
 * Two API processes share one Redis: the one this test serves, and a second one started as production starts
 * it (`scripts/start.ts api`) on the same database and queue prefix. Rate limits and concurrency are global.
 */
const stack = useTestStack({ worker: false, http: true, requestTimeoutMs: 2000 });

type SecondApi = Awaited<ReturnType<typeof startSecondApi>>;
let shared: Promise<SecondApi> | undefined;
/** One second process for the tests that leave it running. */
const sharedSecondApi = () => {
  shared ??= startSecondApi(false);
  return shared;
};
afterAll(async () => {
  const s = await shared;
  if (s && s.run.child.exitCode === null) {
    s.run.child.kill('SIGTERM');
    await s.run.exited;
  }
});

async function startSecondApi(ownedByTest = true) {
  const run = startProcess(
    {
      NODE_ENV: 'test',
      ...stack.storeEnv,
      OPERATOR_TOKEN,
      PORT: '0',
      HOST: '127.0.0.1',
      REQUEST_TIMEOUT_MS: '2000',
    },
    ['scripts/start.ts', 'api'],
  );
  if (ownedByTest) {
    onTestFinished(async () => {
      if (run.child.exitCode === null && run.child.signalCode === null) {
        run.child.kill('SIGTERM');
        await run.exited;
      }
    });
  }
  const [, port] = await waitForOutput(run, /"port":(\d+)/, 30_000);
  return { run, baseUrl: `http://127.0.0.1:${port}` };
}

/**
 * A request kept in flight: its headers and half its body are sent, the rest when `finish()` is called. The
 * route reads the body, so the request holds its concurrency slot until then.
 */
function heldRequest(baseUrl: string, key: string, campaignId: string) {
  const body = JSON.stringify({ email: `held-${Math.random().toString(36).slice(2)}@example.com` });
  const url = new URL(`/v1/campaign/${campaignId}/participant`, baseUrl);
  const req = httpRequest(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    },
  });
  const status = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
  });
  req.write(body.slice(0, 5));
  return {
    status: () => status,
    finish: () => {
      req.end(body.slice(5));
      return status;
    },
  };
}

/** Until the served API has admitted the request (a held request's slot is taken before its body is read). */
const settle = () => new Promise((r) => setTimeout(r, 300));

describe('two API processes sharing one Redis', () => {
  it('count one key against one set of windows, whichever process answers', async () => {
    const second = await sharedSecondApi();
    const w = await makeWorld(stack.ctx, { account: { rateLimits: null } });
    const a = client(overHttp(stack.baseUrl!), w.key);
    const b = client(overHttp(second.baseUrl), w.key);
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await (i % 2 ? b : a).get('/v1/campaigns')).status);
    expect(statuses).toEqual(Array(30).fill(200));
    for (const api of [a, b]) {
      const r = await api.get('/v1/campaigns');
      expect(expectErrorShape(r, 429, 'RATE_LIMIT').policyName).toBe('SECOND');
    }
  });

  it('hold three requests in flight between them: the fourth is refused on either', async () => {
    const second = await sharedSecondApi();
    const w = await makeWorld(stack.ctx, { account: { rateLimits: { concurrency: 3 } } });
    const held = [
      heldRequest(stack.baseUrl!, w.key, w.campaign.id),
      heldRequest(stack.baseUrl!, w.key, w.campaign.id),
      heldRequest(second.baseUrl, w.key, w.campaign.id),
    ];
    await settle();
    const onB = await client(overHttp(second.baseUrl), w.key).get('/v1/campaigns');
    expect(expectErrorShape(onB, 429, 'RATE_LIMIT').policyName).toBe('CONCURRENCY');
    const onA = await client(overHttp(stack.baseUrl!), w.key).get('/v1/campaigns');
    expect(expectErrorShape(onA, 429, 'RATE_LIMIT').policyName).toBe('CONCURRENCY');
    expect(await held[2]!.finish()).toBe(200);
    expect((await client(overHttp(stack.baseUrl!), w.key).get('/v1/campaigns')).status).toBe(200);
    expect(await Promise.all([held[0]!.finish(), held[1]!.finish()])).toEqual([200, 200]);
  });

  it('a process killed mid-request leaves a lease that expires: the slot comes back', async () => {
    const second = await startSecondApi();
    const w = await makeWorld(stack.ctx, { account: { rateLimits: { concurrency: 1 } } });
    const held = heldRequest(second.baseUrl, w.key, w.campaign.id);
    held.status().catch(() => {});
    await settle();
    second.run.child.kill('SIGKILL');
    await second.run.exited;
    const a = client(overHttp(stack.baseUrl!), w.key);
    const refused = await a.get('/v1/campaigns');
    expect(expectErrorShape(refused, 429, 'RATE_LIMIT').policyName).toBe('CONCURRENCY');
    // The lease lasts the request's budget (2 s here) and a 5 s margin.
    const started = Date.now();
    let status = 429;
    while (status === 429 && Date.now() - started < 15_000) {
      await new Promise((r) => setTimeout(r, 250));
      status = (await a.get('/v1/campaigns')).status;
    }
    expect(status).toBe(200);
  });
});
