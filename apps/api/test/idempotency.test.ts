import { createApp } from '@stampcard/api';
import { manualClock } from '@stampcard/core';
import {
  accounts,
  addPeriods,
  DEFAULT_RETENTION,
  idempotencyKeys,
  loyaltyActions,
  maintainPartitions,
  participants,
  partitionName,
  periodStart,
  readPartitions,
} from '@stampcard/db';
import { and, eq, sql } from 'drizzle-orm';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import {
  client,
  eventually,
  expectErrorShape,
  inProcess,
  overHttp,
  type Reply,
} from '../../../test/support/client';
import { makeUserWithKey, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { paddedTriggerBody, rawPost } from '../../../test/support/raw-post';
import { fingerprint, refusals } from '../../../test/support/refused';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * `Idempotency-Key` on every POST, over HTTP. The worker does not run: accepted actions stay QUEUED, so a
 * `?wait=true` trigger waits its whole `maxWaitMs` (a request that is still running), and the only writers
 * are the requests under test. The clock is the test's: keys expire 24 h after their first request.
 */
const clock = manualClock(Date.now());
const MAX_WAIT_MS = 1500;
const stack = useTestStack({ http: true, worker: false, maxWaitMs: MAX_WAIT_MS, clock });
const expectRefused = refusals(stack);

type World = Awaited<ReturnType<typeof makeWorld>>;

const api = (key: string) => client(overHttp(stack.baseUrl!), key);
const operator = () => client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
const triggerPath = (w: World) => `/v1/campaign/${w.campaign.id}/loyalty-action`;
const participantPath = (w: World) => `/v1/campaign/${w.campaign.id}/participant`;
const withKey = (key: string) => ({ 'Idempotency-Key': key });
let seq = 0;
const newKey = () => `idem-${Date.now().toString(36)}-${seq++}`;

const actionsOf = async (w: World) =>
  stack.ctx.db.select().from(loyaltyActions).where(eq(loyaltyActions.campaignId, w.campaign.id));
const accountsNamed = async (name: string) =>
  stack.ctx.db.select().from(accounts).where(eq(accounts.name, name));
const partitionOfKey = (key: string) =>
  stack.ctx.db.execute<{ partition: string }>(
    sql`select tableoid::regclass::text as partition from ${idempotencyKeys} where key = ${key}`,
  );
const keyRows = async (key: string) =>
  stack.ctx.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key));

/** The repeat is the first answer again: same status and body, marked replayed, and nothing written. */
async function expectReplay(first: Reply, send: () => Promise<Reply>) {
  const before = await fingerprint(stack.ctx.db);
  const again = await send();
  expect(await fingerprint(stack.ctx.db)).toEqual(before);
  expect(again.status).toBe(first.status);
  expect(again.body).toEqual(first.body);
  expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(first.headers.get('idempotent-replayed')).toBeNull();
  // A replay is another request: its own request id.
  expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
  return again;
}

function keyIssue(body: { errors: { location: string; param: string; value: unknown; msg: string }[] }) {
  expect(body.errors).toHaveLength(1);
  expect(body.errors[0]).toMatchObject({ location: 'headers', param: 'Idempotency-Key' });
  return body.errors[0]!;
}

describe('a repeat with the same key and request', () => {
  it('replays a trigger: same status and body, one loyalty action', async () => {
    const w = await makeWorld(stack.ctx);
    const key = newKey();
    const body = { participantEmail: uniqueEmail(), rewardId: w.reward.id };
    const first = await api(w.key).post(triggerPath(w), body, withKey(key));
    expect(first.status).toBe(200);
    expect(first.body.action.status).toBe('QUEUED');

    await expectReplay(first, () => api(w.key).post(triggerPath(w), body, withKey(key)));
    await expectReplay(first, () => api(w.key).post(triggerPath(w), body, withKey(key)));
    expect(await actionsOf(w)).toHaveLength(1);
    const [row] = await keyRows(key);
    expect(row).toMatchObject({ scope: `key:${w.keyId}`, state: 'DONE', responseStatus: 200 });
  });

  it('replays a form-encoded trigger too (the body guard still reads the body after the key)', async () => {
    const w = await makeWorld(stack.ctx);
    const key = newKey();
    const form = `participantEmail=${encodeURIComponent(uniqueEmail())}&rewardId=${w.reward.id}&metadata[source]=form`;
    const type = { 'content-type': 'application/x-www-form-urlencoded' };
    const first = await api(w.key).post(triggerPath(w), form, { ...type, ...withKey(key) });
    expect(first.status).toBe(200);
    await expectReplay(first, () => api(w.key).post(triggerPath(w), form, { ...type, ...withKey(key) }));
    const [action] = await actionsOf(w);
    expect(action?.metadata).toEqual({ source: 'form' });
  });

  it('replays an added participant as first answered, even after the participant changed', async () => {
    const w = await makeWorld(stack.ctx);
    const key = newKey();
    const body = { email: uniqueEmail(), firstName: 'Ada' };
    const first = await api(w.key).post(participantPath(w), body, withKey(key));
    expect(first.status).toBe(200);
    expect(first.body.firstName).toBe('Ada');
    const changed = await api(w.key).patch(`${participantPath(w)}/${first.body.id}`, { firstName: 'Grace' });
    expect(changed.status).toBe(200);

    const again = await expectReplay(first, () => api(w.key).post(participantPath(w), body, withKey(key)));
    expect(again.body.firstName).toBe('Ada');
    const rows = await stack.ctx.db
      .select()
      .from(participants)
      .where(eq(participants.campaignId, w.campaign.id));
    expect(rows).toHaveLength(1);
  });

  it('replays a form approval with its Stampcard-Loyalty-Action-Id, and records one action', async () => {
    const w = await makeWorld(stack.ctx, {
      reward: {
        conversionsRequired: 1,
        submissionType: 'FORM',
        submissionFormFields: [{ key: 'handle', label: 'Your handle', isRequired: true }],
        submissionFormMessages: { required: 'Please fill this in', alreadySubmitted: 'Already sent' },
      },
    });
    const email = uniqueEmail('form');
    expect((await api(w.key).post(participantPath(w), { email })).status).toBe(200);
    const submitted = await api(w.key).post(
      `/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}/form-submission`,
      { rewardId: w.reward.id, formData: { handle: '@ada' } },
    );
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
    const key = newKey();
    const approve = () =>
      api(w.key).post(
        `/v1/campaign/${w.campaign.id}/form-submission/${submitted.body.id}/approve`,
        undefined,
        withKey(key),
      );
    const first = await approve();
    expect(first.status).toBe(200);
    const actionId = first.headers.get('stampcard-loyalty-action-id');
    expect(actionId).toMatch(/^act_/);
    const again = await expectReplay(first, approve);
    expect(again.headers.get('stampcard-loyalty-action-id')).toBe(actionId);
    expect(await actionsOf(w)).toHaveLength(1);
  });

  it('replays an operator POST: one account', async () => {
    const key = newKey();
    const name = `Idempotent ${key}`;
    const first = await operator().post('/admin/v1/accounts', { name, plan: 'GROWTH' }, withKey(key));
    expect(first.status).toBe(200);
    await expectReplay(first, () =>
      operator().post('/admin/v1/accounts', { name, plan: 'GROWTH' }, withKey(key)),
    );
    expect(await accountsNamed(name)).toHaveLength(1);
    expect((await keyRows(key))[0]?.scope).toBe('operator');
  });

  it('replays a refusal below 500 too (a 404 stays that 404)', async () => {
    const w = await makeWorld(stack.ctx);
    const key = newKey();
    const body = { participantEmail: uniqueEmail(), rewardId: 'crew_missing' };
    const first = await api(w.key).post(triggerPath(w), body, withKey(key));
    expectErrorShape(first, 404, 'NOT_FOUND');
    await expectReplay(first, () => api(w.key).post(triggerPath(w), body, withKey(key)));
  });

  it('costs nothing without the header: no key is stored', async () => {
    const w = await makeWorld(stack.ctx);
    const before = await stack.ctx.db.select().from(idempotencyKeys);
    const r = await api(w.key).post(triggerPath(w), {
      participantEmail: uniqueEmail(),
      rewardId: w.reward.id,
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('idempotent-replayed')).toBeNull();
    expect(await stack.ctx.db.select().from(idempotencyKeys)).toHaveLength(before.length);
  });
});

describe('keys', () => {
  it('refuses the same key with another body, path or query: 400, nothing written', async () => {
    const w = await makeWorld(stack.ctx);
    const key = newKey();
    const body = { participantEmail: uniqueEmail(), rewardId: w.reward.id };
    expect((await api(w.key).post(triggerPath(w), body, withKey(key))).status).toBe(200);

    for (const send of [
      () => api(w.key).post(triggerPath(w), { ...body, participantEmail: uniqueEmail() }, withKey(key)),
      () => api(w.key).post(`${triggerPath(w)}?wait=true`, body, withKey(key)),
      () => api(w.key).post(participantPath(w), { email: body.participantEmail }, withKey(key)),
    ]) {
      const refused = await expectRefused(send, 400, 'VALIDATION_ERROR');
      expect(keyIssue(refused).msg).toMatch(/another request/);
      expect(keyIssue(refused).value).toBe(key);
    }
    expect(await actionsOf(w)).toHaveLength(1);
  });

  it('are scoped to the API key: the same key and body on another key runs anew', async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeUserWithKey(stack.ctx, w.account.id);
    const key = newKey();
    const body = { participantEmail: uniqueEmail(), rewardId: w.reward.id };
    const first = await api(w.key).post(triggerPath(w), body, withKey(key));
    const second = await api(other.key).post(triggerPath(w), body, withKey(key));
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(second.body.action.id).not.toBe(first.body.action.id);
    expect(await actionsOf(w)).toHaveLength(2);
    const scopes = (await keyRows(key)).map((r) => r.scope).sort();
    expect(scopes).toEqual([`key:${w.keyId}`, `key:${other.keyId}`].sort());
  });

  it('refuses a value that is empty, too long, or not printable ASCII: 400, nothing written', async () => {
    const w = await makeWorld(stack.ctx);
    const body = { participantEmail: uniqueEmail(), rewardId: w.reward.id };
    for (const bad of ['', 'a b', 'tab\there', 'caf\u00e9', 'k'.repeat(256)]) {
      const refused = await expectRefused(
        () => api(w.key).post(triggerPath(w), body, withKey(bad)),
        400,
        'VALIDATION_ERROR',
      );
      const issue = keyIssue(refused);
      expect(issue.msg).toMatch(/1 to 255 printable ASCII/);
      // An excerpt, never the whole value.
      expect(String(issue.value).length).toBeLessThanOrEqual(65);
    }
    for (const good of ['k'.repeat(255), '!~"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}', 'x']) {
      const r = await api(w.key).post(
        triggerPath(w),
        { ...body, participantEmail: uniqueEmail() },
        withKey(good),
      );
      expect(r.status, good).toBe(200);
    }
  });

  it('still refuses a chunked body over 1 MiB with the body-limit 400, and stores no key', async () => {
    const w = await makeWorld(stack.ctx);
    const key = newKey();
    const before = await fingerprint(stack.ctx.db);
    const r = await rawPost(
      new URL(triggerPath(w), stack.baseUrl!),
      { authorization: `Bearer ${w.key}`, ...withKey(key) },
      paddedTriggerBody(uniqueEmail(), w.reward.id, 1024 * 1024 + 64),
      { chunked: true },
    );
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('VALIDATION_ERROR');
    expect(r.body.message).toBe('Request body is larger than 1 MiB');
    expect(r.headers.connection).toBe('close');
    expect(await fingerprint(stack.ctx.db)).toEqual(before);
  });
});

describe('a repeat while the first is running', () => {
  it('is a 409 DUPLICATE_REQUEST; once the first has answered, it is replayed', async () => {
    const w = await makeWorld(stack.ctx);
    const key = newKey();
    const body = { participantEmail: uniqueEmail(), rewardId: w.reward.id };
    const path = `${triggerPath(w)}?wait=true`;
    const started = clock.now().getTime();
    const firstP = api(w.key).post(path, body, withKey(key));
    // The first holds its key once its claim is in (its action is recorded right after).
    await eventually(
      () => actionsOf(w),
      (rows) => rows.length === 1,
    );
    const duplicate = await expectRefused(
      () => api(w.key).post(path, body, withKey(key)),
      409,
      'DUPLICATE_REQUEST',
    );
    expect(duplicate.request).toEqual({ method: 'POST', path: triggerPath(w), startedAt: started });

    const first = await firstP;
    expect(first.status).toBe(200);
    expect(first.body.action.status).toBe('QUEUED');
    await expectReplay(first, () => api(w.key).post(path, body, withKey(key)));
    expect(await actionsOf(w)).toHaveLength(1);
  });

  it('takes over a claim whose process died (RUNNING past lockedUntil), and not one still locked', async () => {
    const key = newKey();
    const name = `Taken over ${key}`;
    const first = await operator().post('/admin/v1/accounts', { name, plan: 'GROWTH' }, withKey(key));
    expect(first.status).toBe(200);
    const where = and(eq(idempotencyKeys.scope, 'operator'), eq(idempotencyKeys.key, key));
    const now = clock.now().getTime();
    // As a claim is left by a process that died mid-request: RUNNING, no answer, still locked.
    await stack.ctx.db
      .update(idempotencyKeys)
      .set({
        state: 'RUNNING',
        responseStatus: null,
        responseBody: null,
        lockedUntil: new Date(now + 60_000),
      })
      .where(where);
    const locked = await expectRefused(
      () => operator().post('/admin/v1/accounts', { name, plan: 'GROWTH' }, withKey(key)),
      409,
      'DUPLICATE_REQUEST',
    );
    expect(locked.request).toMatchObject({ method: 'POST', path: '/admin/v1/accounts' });

    await stack.ctx.db
      .update(idempotencyKeys)
      .set({ lockedUntil: new Date(now - 1) })
      .where(where);
    // Another request cannot take it over: the key still names the first request.
    await expectRefused(
      () => operator().post('/admin/v1/accounts', { name: `${name} 2`, plan: 'GROWTH' }, withKey(key)),
      400,
      'VALIDATION_ERROR',
    );
    const rerun = await operator().post('/admin/v1/accounts', { name, plan: 'GROWTH' }, withKey(key));
    expect(rerun.status).toBe(200);
    expect(rerun.headers.get('idempotent-replayed')).toBeNull();
    expect(rerun.body.id).not.toBe(first.body.id);
    expect(await accountsNamed(name)).toHaveLength(2);
    const [row] = await keyRows(key);
    expect(row).toMatchObject({ state: 'DONE', responseStatus: 200 });
    expect(JSON.parse(row!.responseBody!).id).toBe(rerun.body.id);
  });
});

/** A transaction holding the account's row lock until `release()`: a new participant waits behind it. */
async function holdAccountLock(accountId: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const tx = stack.ctx.db
    .transaction(async (t) => {
      await t.execute(sql`select id from accounts where id = ${accountId} for update`);
      locked();
      await released;
    })
    .catch(() => {});
  await isLocked;
  return {
    release: async () => {
      release();
      await tx;
    },
  };
}

describe('an answer that did nothing is not kept', () => {
  it('a 503 (the store too slow) frees the key: the repeat runs', async () => {
    const w = await makeWorld(stack.ctx);
    const key = newKey();
    const body = { email: uniqueEmail() };
    // Past DB_STATEMENT_TIMEOUT_MS (3 s) PostgreSQL cancels the wait: 503, before the request's own deadline.
    const app = createApp({ ...stack.deps, requestTimeoutMs: 10_000 });
    const lock = await holdAccountLock(w.account.id);
    let refused: Reply;
    try {
      refused = await client(inProcess(app), w.key).post(participantPath(w), body, withKey(key));
    } finally {
      await lock.release();
    }
    expectErrorShape(refused, 503, 'UNAVAILABLE');
    expect(await keyRows(key)).toEqual([]);

    const again = await api(w.key).post(participantPath(w), body, withKey(key));
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.email).toBe(body.email);
    expect((await keyRows(key))[0]).toMatchObject({ state: 'DONE', responseStatus: 200 });
  });

  it('a 503 of the request deadline frees the key once the abandoned work has ended', async () => {
    const w = await makeWorld(stack.ctx);
    const key = newKey();
    const body = { email: uniqueEmail() };
    const app = createApp({ ...stack.deps, requestTimeoutMs: 300 });
    const lock = await holdAccountLock(w.account.id);
    let refused: Reply;
    try {
      refused = await client(inProcess(app), w.key).post(participantPath(w), body, withKey(key));
      expectErrorShape(refused, 503, 'UNAVAILABLE');
      // The work still waits for the lock: its claim holds the key meanwhile.
      expect((await keyRows(key))[0]?.state).toBe('RUNNING');
      const held = await api(w.key).post(participantPath(w), body, withKey(key));
      expectErrorShape(held, 409, 'DUPLICATE_REQUEST');
    } finally {
      await lock.release();
    }
    // Past its deadline the work rolls back instead of committing, and then gives the key up.
    await eventually(
      () => keyRows(key),
      (rows) => rows.length === 0,
    );
    expect(await stack.ctx.db.select().from(participants).where(eq(participants.email, body.email))).toEqual(
      [],
    );
    const again = await api(w.key).post(participantPath(w), body, withKey(key));
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('expiry and retention', () => {
  it('keeps an answer 24 h; after that the key runs anew', async () => {
    const key = newKey();
    const name = `Expiring ${key}`;
    const send = () => operator().post('/admin/v1/accounts', { name, plan: 'GROWTH' }, withKey(key));
    const first = await send();
    expect(first.status).toBe(200);
    clock.advance(24 * 3600_000 - 1000);
    await expectReplay(first, send);
    clock.advance(2000);
    const anew = await send();
    expect(anew.status).toBe(200);
    expect(anew.headers.get('idempotent-replayed')).toBeNull();
    expect(anew.body.id).not.toBe(first.body.id);
    expect(await accountsNamed(name)).toHaveLength(2);
    // And the new answer is the one replayed from now on.
    await expectReplay(anew, send);
  });

  it('holds across midnight UTC: a key first sent a second before is replayed a second after, from the day before', async () => {
    // Tonight's: the migration made today's and tomorrow's partitions.
    const midnight = addPeriods(periodStart(new Date(), 'day'), 'day', 1).getTime();
    clock.set(midnight - 1000);
    const key = newKey();
    const name = `Midnight ${key}`;
    const send = () => operator().post('/admin/v1/accounts', { name, plan: 'GROWTH' }, withKey(key));
    const first = await send();
    expect(first.status).toBe(200);
    clock.set(midnight + 1000);
    await expectReplay(first, send);
    expect(await accountsNamed(name)).toHaveLength(1);
    // The row lies in the partition of the day before (today's, or the legacy one that ends tonight), and the
    // repeat after midnight found it there.
    const tomorrow = partitionName('idempotency_keys', new Date(midnight), 'day');
    expect((await readPartitions(stack.ctx.db)).map((p) => p.name)).toContain(tomorrow);
    const [placed] = await partitionOfKey(key);
    expect(placed!.partition).not.toBe(tomorrow);
    expect(placed!.partition).not.toBe('idempotency_keys_default');
    clock.set(Date.now());
  });

  it('one claim wins among 20 at once, across two days of rows, and the others are told it runs or replay it', async () => {
    // The key's row of yesterday expired; 20 repeats at once race to claim it today: one runs.
    const key = newKey();
    const name = `Race ${key}`;
    const send = () => operator().post('/admin/v1/accounts', { name, plan: 'GROWTH' }, withKey(key));
    const first = await send();
    expect(first.status).toBe(200);
    clock.advance(24 * 3600_000 + 1000);
    const answers = await Promise.all(Array.from({ length: 20 }, send));
    const fresh = answers.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') === null);
    expect(fresh).toHaveLength(1);
    for (const r of answers.filter((r) => r !== fresh[0])) {
      expect([200, 409]).toContain(r.status);
      if (r.status === 200) expect(r.body).toEqual(fresh[0]!.body);
    }
    expect(await accountsNamed(name)).toHaveLength(2);
    clock.set(Date.now());
  });

  it('leaves expired keys to the worker, which drops their day whole once all of it has expired', async () => {
    const key = newKey();
    const sent = await operator().post('/admin/v1/accounts', { name: key, plan: 'GROWTH' }, withKey(key));
    expect(sent.status).toBe(200);
    const [row] = await keyRows(key);
    const [{ partition: day } = { partition: '' }] = await partitionOfKey(key);
    expect(day).toMatch(/^idempotency_keys_(legacy|\d{8})$/);
    const sqlClient = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
    try {
      // The day after its own, the key still lives: its day stays.
      const endOfDay = addPeriods(periodStart(row!.startedAt, 'day'), 'day', 1);
      const early = await maintainPartitions(
        sqlClient,
        new Date(endOfDay.getTime() + 3600_000),
        DEFAULT_RETENTION,
      );
      expect(early!.dropped).not.toContain(day);
      expect(await keyRows(key)).toHaveLength(1);
      // 24 h after its day ended, every key of it has expired: the day goes, with no DELETE.
      const late = await maintainPartitions(
        sqlClient,
        new Date(endOfDay.getTime() + 86_400_000),
        DEFAULT_RETENTION,
      );
      expect(late!.dropped).toContain(day);
      expect(late!.failed).toEqual([]);
      expect(await keyRows(key)).toEqual([]);
    } finally {
      await sqlClient.end();
    }
  });
});
