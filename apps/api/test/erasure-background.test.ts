import { events } from '@stampcard/db';
import { and, eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../../../test/support/client';
import { dumpDatabase, tablesHolding } from '../../../test/support/dump';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

/**
 * Right to erasure, bounded (docs/security.md): deleting a participant with a long history commits its removal,
 * `PARTICIPANT_DELETED`, its erasure record and the first batch (its newest 2,000 events) in one short
 * transaction and answers `Stampcard-Erasure: PENDING`; the worker erases the rest, one short transaction a
 * batch, and its relay resumes an erasure whose job was lost (Redis lost it, a worker died). No worker runs
 * at first, so what the request alone did can be seen.
 */
const stack = useTestStack({ http: true, worker: false });
const receiver = useReceivers();

/** Events that show the participant's email still (the erased copy has `""`). */
async function eventsShowing(campaignId: string, email: string): Promise<number> {
  const [row] = await stack.ctx.db
    .select({ n: sql<number>`count(*)::int` })
    .from(events)
    .where(
      and(eq(events.campaignId, campaignId), sql`(${events.data} #>> '{participant,email}') = ${email}`),
    );
  return row!.n;
}

/** Every job of the erasure queue dropped: the chain of batches is lost, as when Redis loses its data. */
async function loseErasureJobs() {
  await stack.deps.queues.forJob('participant-erasure.run').obliterate({ force: true });
}

describe('erasing a long history', () => {
  it('answers after one bounded batch, erases the rest in the background, and resumes a lost erasure', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const base = `/v1/campaign/${w.campaign.id}`;
    const t = Date.now().toString(36);
    const person = { email: uniqueEmail(`bg${t}`), firstName: `Bgname${t}` };
    // Its answer is stored under the key, the person in it: the last phase of the erasure scrubs it.
    const added = await api.post(`${base}/participant`, person, { 'Idempotency-Key': `bg-${t}` });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const participantId = added.body.id as string;
    // 30,000 more events that show it (copies of its NEW_PARTICIPANT_ADDED), in one statement.
    const history = 30_000;
    await stack.ctx.db.execute(sql`
      insert into ${events} (id, campaign_id, type, data, created_at)
      select 'evt_bg' || g || ${t}, campaign_id, type, data, created_at
      from ${events}, generate_series(1, ${history}) g
      where campaign_id = ${w.campaign.id} and type = 'NEW_PARTICIPANT_ADDED'`);
    expect(await eventsShowing(w.campaign.id, person.email)).toBe(history + 1);

    const deleted = await api.delete(`${base}/participant/${participantId}`);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(deleted.body).toEqual({ success: true });
    expect(deleted.headers.get('stampcard-erasure')).toBe('PENDING');
    // The request's transaction scrubbed one batch, no more: the newest 2,000 events.
    expect(await eventsShowing(w.campaign.id, person.email)).toBe(history + 1 - 2000);
    const [newest] = await stack.ctx.db.execute<{ email: string }>(sql`
      select data #>> '{participant,email}' as email from ${events}
      where campaign_id = ${w.campaign.id} and (data #>> '{participant,id}') = ${participantId}
      order by seq desc limit 1`);
    expect(newest!.email).toBe('');
    const [recorded] = await stack.ctx.db
      .select()
      .from(events)
      .where(and(eq(events.campaignId, w.campaign.id), eq(events.type, 'PARTICIPANT_DELETED')));
    expect(recorded!.data).toMatchObject({ participantId, erasedEventCount: 2000 });
    // Meanwhile the event feed shows the events the background has not reached yet (the oldest) erased.
    const feed = await api.get(`${base}/events?limit=100`);
    expect(feed.status).toBe(200);
    expect(feed.body.events).toHaveLength(100);
    expect(JSON.stringify(feed.body)).not.toContain(person.email);
    expect(JSON.stringify(feed.body)).not.toContain(person.firstName);
    expect(feed.body.events[0].data.participant).toMatchObject({ id: participantId, email: '' });
    const pending = await api.get(`${base}/participant/${participantId}/erasure`);
    expect(pending.status).toBe(200);
    expect(pending.body).toMatchObject({
      participantId,
      status: 'PENDING',
      erasedEventCount: 2000,
      erasedAnswerCount: 0,
      batches: 1,
      finishedAt: null,
    });

    // The deletion's commit handed its next batch on (the after-commit hand-off): one job, by the step's id.
    const queued = await eventually(
      () => stack.deps.queues.forJob('participant-erasure.run').getJob(`erasure-${participantId}-1`),
      (job) => job !== undefined,
    );
    expect(queued!.data).toEqual({ participantId, batch: 1 });
    // Its next job lost before any worker ran it: the relay's sweep puts it back.
    await loseErasureJobs();
    const worker = stack.startWorker();
    await worker.relay.runOnce();
    const progress = () => api.get(`${base}/participant/${participantId}/erasure`);
    await eventually(progress, (r) => r.body.batches >= 4);
    // A worker stopped mid-erasure and its chain lost again: a new worker's relay resumes from the cursor.
    await stack.stopWorker();
    await loseErasureJobs();
    const resumed = stack.startWorker();
    await resumed.relay.runOnce();
    const done = await eventually(progress, (r) => r.body.status === 'DONE', 60_000);
    expect(done.body).toMatchObject({
      participantId,
      status: 'DONE',
      erasedEventCount: history + 1,
      erasedAnswerCount: 1,
      finishedAt: expect.any(Number),
    });
    // Each batch was its own transaction of at most 2,000 events, plus the last one for the stored answers.
    expect(done.body.batches).toBeGreaterThanOrEqual(Math.ceil((history + 1) / 2000));

    const dump = await dumpDatabase(stack.dbUrl);
    expect(tablesHolding(dump, person.email)).toEqual([]);
    expect(tablesHolding(dump, person.firstName)).toEqual([]);
    const replay = await api.post(`${base}/participant`, person, { 'Idempotency-Key': `bg-${t}` });
    expect(replay.body).toMatchObject({ id: participantId, email: '', firstName: null });
  });

  it('finishes a short history in the request: DONE, and nothing for the worker', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const base = `/v1/campaign/${w.campaign.id}`;
    const person = { email: uniqueEmail('short'), firstName: 'Shortname' };
    const added = await api.post(`${base}/participant`, person);
    const deleted = await api.delete(`${base}/participant/${person.email}`);
    expect(deleted.status).toBe(200);
    expect(deleted.headers.get('stampcard-erasure')).toBe('DONE');
    const erasure = await api.get(`${base}/participant/${added.body.id}/erasure`);
    expect(erasure.body).toMatchObject({ status: 'DONE', erasedEventCount: 1, batches: 1 });
    expect(await eventsShowing(w.campaign.id, person.email)).toBe(0);
    // Not a deleted participant (another campaign's, or none): 404 with the error body.
    const other = await makeWorld(stack.ctx);
    const elsewhere = await client(overHttp(stack.baseUrl!), other.key).get(
      `/v1/campaign/${other.campaign.id}/participant/${added.body.id}/erasure`,
    );
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body).toMatchObject({ code: 'NOT_FOUND', status: 404 });
  });

  it('sends a held message of an event not yet reached erased all the same', async () => {
    await stack.stopWorker();
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const base = `/v1/campaign/${w.campaign.id}`;
    const t = Date.now().toString(36);
    const person = { email: uniqueEmail(`held${t}`), firstName: `Heldname${t}` };
    stack.startDispatcher();
    const rx = await receiver();
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    // Disabled: the message of the participant's first event waits (PENDING) until it is enabled again.
    const off = await operator(stack).patch(`/admin/v1/webhook-endpoints/${ep.id}`, { enabled: false });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    const added = await api.post(`${base}/participant`, person);
    expect(added.status).toBe(200);
    await eventually(
      async () => {
        await stack.dispatcher!.sweeper.runOnce();
        return messagesOf(stack, ep.id);
      },
      (ms) => ms.length === 1 && ms[0].status === 'PENDING',
    );
    // 3,000 newer events: the first one is left to the background, which does not run (no worker).
    await stack.ctx.db.execute(sql`
      insert into ${events} (id, campaign_id, type, data, created_at)
      select 'evt_held' || g || ${t}, campaign_id, type, data, created_at
      from ${events}, generate_series(1, 3000) g
      where campaign_id = ${w.campaign.id} and type = 'NEW_PARTICIPANT_ADDED'`);
    const deleted = await api.delete(`${base}/participant/${added.body.id}`);
    expect(deleted.headers.get('stampcard-erasure')).toBe('PENDING');
    expect(await eventsShowing(w.campaign.id, person.email)).toBe(1001);

    const on = await operator(stack).patch(`/admin/v1/webhook-endpoints/${ep.id}`, { enabled: true });
    expect(on.status, JSON.stringify(on.body)).toBe(200);
    const got = await eventually(
      async () => rx.received.filter((r) => r.json?.type === 'NEW_PARTICIPANT_ADDED'),
      (list) => list.length === 1,
    );
    expect(got[0]!.json.data.participant).toMatchObject({ id: added.body.id, email: '', firstName: null });
    expect(rx.received.map((r) => r.body).join('\n')).not.toContain(person.email);
    // Sent erased while the stored event still shows the person: the background has not reached it.
    expect(await eventsShowing(w.campaign.id, person.email)).toBe(1001);
  });
});
