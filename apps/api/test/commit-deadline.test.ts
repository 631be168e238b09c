import { loyaltyActions } from '@stampcard/db';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, expectErrorShape, overHttp, type Reply } from '../../../test/support/client';
import { makeUserWithKey, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { capturedLogger } from '../../../test/support/logs';
import { fingerprint } from '../../../test/support/refused';
import { commitsInFlight, installSlowCommits } from '../../../test/support/slow-commit';
import { useFreezableStack } from '../../../test/support/use';

/**
 * A request whose COMMIT is already on its way when its deadline passes is told what happened: 200 once it
 * committed, a 503 "nothing was written" only when nothing was, and a 503 that says the outcome is unknown
 * (naming the action to look up) when the database stopped answering after the COMMIT went out.
 *
 * The COMMIT is held on the server, in this file's own database (`installSlowCommits`: `metadata.commitSleepMs`
 * and `commitFails`). The whole stack runs over HTTP, its pool through a proxy that can make PostgreSQL
 * silent while a COMMIT is in flight.
 */
const REQUEST_TIMEOUT_MS = 1000;
const STATEMENT_TIMEOUT_MS = 3000;
/** Longer than the request's budget, shorter than the wait for a COMMIT in flight. */
const SLOW_COMMIT_MS = 1500;

const { logger, lines } = capturedLogger('info');
const { db, proxy, stack } = useFreezableStack({
  http: true,
  worker: false,
  requestTimeoutMs: REQUEST_TIMEOUT_MS,
  statementTimeoutMs: STATEMENT_TIMEOUT_MS,
  logger,
  prepare: installSlowCommits,
});

const inFlight = () => commitsInFlight(db);

async function world() {
  const w = await makeWorld(stack.ctx);
  const api = client(overHttp(stack.baseUrl!), w.key);
  const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;
  let n = 0;
  /** A trigger for `email`; each has its own metadata, so none is the 409 of an identical one in flight. */
  const trigger = (email: string, commit: { commitSleepMs?: number; commitFails?: boolean } = {}) =>
    api.post(path, { participantEmail: email, rewardId: w.reward.id, metadata: { n: n++, ...commit } });
  // A participant that exists: its triggers take the group commit (one shared INSERT).
  const email = uniqueEmail();
  expect((await trigger(email)).status).toBe(200);
  return { ...w, api, trigger, email };
}

async function ledgerRow(id: string) {
  const [row] = await db.db.select().from(loyaltyActions).where(eq(loyaltyActions.id, id));
  return row;
}

const linesWith = (msg: string) => lines.filter((l) => JSON.parse(l).msg === msg);

describe('a COMMIT in flight when the deadline passes', () => {
  it('is waited for: the request answers 200, and its action is in the ledger', async () => {
    const w = await world();
    const r = await w.trigger(w.email, { commitSleepMs: SLOW_COMMIT_MS });
    expect(r.status).toBe(200);
    expect((await ledgerRow(r.body.action.id))?.status).toBe('QUEUED');
  });

  it('several requests sharing one group commit: each answers 200 with its own recorded action', async () => {
    const w = await world();
    // The two group commits the API runs at once are busy, within the budget of their own requests...
    const busy = [w.trigger(w.email, { commitSleepMs: 400 })];
    await eventually(inFlight, (pids) => pids.length === 1);
    busy.push(w.trigger(w.email, { commitSleepMs: 400 }));
    await eventually(inFlight, (pids) => pids.length === 2);
    // ...so these six queue and then share one INSERT, whose COMMIT outlasts their deadline.
    const replies = await Promise.all(
      Array.from({ length: 6 }, () => w.trigger(w.email, { commitSleepMs: SLOW_COMMIT_MS })),
    );
    for (const r of [...replies, ...(await Promise.all(busy))]) expect(r.status).toBe(200);
    const ids = replies.map((r) => r.body.action.id as string);
    expect(new Set(ids).size).toBe(6);
    const rows = await db.sql<{ status: string; tx: string }[]>`
      select status, xmin::text as tx from loyalty_actions where id in ${db.sql(ids)}`;
    expect(rows.map((r) => r.status)).toEqual(Array(6).fill('QUEUED'));
    expect(new Set(rows.map((r) => r.tx)).size).toBe(1);
  });

  it('a new participant and its action in one transaction: 200, both recorded', async () => {
    const w = await world();
    const r = await w.trigger(uniqueEmail(), { commitSleepMs: SLOW_COMMIT_MS });
    expect(r.status).toBe(200);
    expect(r.body.message).toMatch(/Participant added/);
    expect((await ledgerRow(r.body.action.id))?.participantId).toBe(r.body.action.participantId);
  });

  it('refused by the database at COMMIT: 503 "nothing was accepted", and nothing was', async () => {
    const w = await world();
    const before = await fingerprint(db.db);
    const r = await w.trigger(w.email, { commitSleepMs: SLOW_COMMIT_MS, commitFails: true });
    const body = expectErrorShape(r, 503, 'UNAVAILABLE');
    expect(body.message).toMatch(/nothing was (accepted|written)/);
    expect(await fingerprint(db.db)).toEqual(before);
  });

  it('the database silent until past the wait: a 503 that says the outcome is unknown and names the action, which did land', async () => {
    const w = await world();
    const reply = w.trigger(w.email, { commitSleepMs: SLOW_COMMIT_MS });
    await eventually(inFlight, (pids) => pids.length === 1);
    // The COMMIT is on the server; its answer will not come back until the proxy thaws.
    proxy.freeze();
    let r: Reply;
    try {
      r = await reply;
    } finally {
      proxy.thaw();
    }
    const body = expectErrorShape(r, 503, 'UNAVAILABLE');
    expect(body.outcome).toBe('UNKNOWN');
    expect(body.message).toMatch(/unknown/);
    expect(body.actionId).toMatch(/^act_/);
    // It had committed: the action is there to look up, and the late commit is logged as such.
    const found = await eventually(
      () => w.api.get(`/v1/campaign/${w.campaign.id}/loyalty-action/${body.actionId}`),
      (g) => g.status === 200,
    );
    expect(found.body.id ?? found.body.action?.id).toBe(body.actionId);
    await eventually(
      async () =>
        linesWith(
          'a write committed after its request was answered with a 503 that said its outcome was unknown',
        ),
      (l) => l.some((line) => JSON.parse(line).actionId === body.actionId),
    );
  });

  it('the connection lost during COMMIT: a 503 that says the outcome is unknown, never "nothing was written"', async () => {
    const w = await world();
    const reply = w.trigger(w.email, { commitSleepMs: STATEMENT_TIMEOUT_MS });
    const [pid] = await eventually(inFlight, (pids) => pids.length === 1);
    await db.sql`select pg_terminate_backend(${pid!})`;
    const body = expectErrorShape(await reply, 503, 'UNAVAILABLE');
    expect(body.outcome).toBe('UNKNOWN');
    expect(body.actionId).toMatch(/^act_/);
    expect(body.message).not.toMatch(/nothing was/);
  });
});

describe('a request whose deadline passes before its write is sent', () => {
  it('waiting for a group commit: 503 "nothing was written", its row is never written, and its end is logged once', async () => {
    const w = await world();
    // Both group commits the API runs at once are held at COMMIT...
    const first = w.trigger(w.email, { commitSleepMs: 2500 });
    await eventually(inFlight, (pids) => pids.length === 1);
    const second = w.trigger(w.email, { commitSleepMs: 2500 });
    await eventually(inFlight, (pids) => pids.length === 2);
    // ...so these wait for a batch past their deadline.
    const late = await Promise.all([w.trigger(w.email), w.trigger(w.email), w.trigger(w.email)]);
    for (const r of late) {
      const body = expectErrorShape(r, 503, 'UNAVAILABLE');
      expect(body.message).toMatch(/nothing was written/);
      expect(body.outcome).toBeUndefined();
    }
    const held = await Promise.all([first, second]);
    for (const r of held) expect(r.status).toBe(200);
    // One more action after them: the batches behind the held ones have run by the time it is answered.
    expect((await w.trigger(w.email)).status).toBe(200);
    const [{ count }] = (await db.db.execute<{ count: number }>(
      sql`select count(*)::int as count from loyalty_actions where campaign_id = ${w.campaign.id}`,
    )) as unknown as [{ count: number }];
    // The first (participant-creating) action, the two held ones and the last one: none of the three refused.
    expect(count).toBe(4);
    // Each abandoned request's end is logged once, by its request id; none as an unhandled error.
    for (const r of late) {
      const requestId = r.headers.get('x-request-id');
      await eventually(
        async () =>
          linesWith('abandoned request ended after its answer').filter(
            (l) => JSON.parse(l).requestId === requestId,
          ),
        (l) => l.length === 1,
      );
    }
    const ids = new Set(late.map((r) => r.headers.get('x-request-id')));
    expect(linesWith('unhandled error').filter((l) => ids.has(JSON.parse(l).requestId))).toEqual([]);
  });

  it('held up before it reads its body (its API key looked up in a silent database): it stops there, and its end is logged once, not as an unhandled error', async () => {
    const w = await world();
    // A key this process has not looked up yet: its request waits for PostgreSQL before anything else.
    const { key } = await makeUserWithKey(stack.ctx, w.account.id);
    proxy.freeze();
    let r: Reply;
    try {
      r = await client(overHttp(stack.baseUrl!), key).post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: w.email,
        rewardId: w.reward.id,
      });
    } finally {
      proxy.thaw();
    }
    const body = expectErrorShape(r, 503, 'UNAVAILABLE');
    expect(body.message).toMatch(/nothing was written/);
    const requestId = r.headers.get('x-request-id');
    const about = (l: string) => JSON.parse(l).requestId === requestId;
    await eventually(
      async () => linesWith('abandoned request ended after its answer').filter(about),
      (l) => l.length === 1,
    );
    expect(lines.filter(about).map((l) => JSON.parse(l).msg)).not.toContain('unhandled error');
  });
});
