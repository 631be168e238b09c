import { EVENT_SCHEMAS, isEmittedEventType } from '@stampcard/core';
import { events } from '@stampcard/db';
import { and, asc, eq, sql } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../../../test/support/client';
import { dumpDatabase, tablesHolding } from '../../../test/support/dump';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { type Received, useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { messagesOf, registerEndpoint } from '../../../test/support/webhooks';

/**
 * Right to erasure (docs/security.md): deleting a participant records `PARTICIPANT_DELETED` and erases the
 * person from everything Stampcard keeps (stored events and so webhook messages, receivers' answers, stored
 * `Idempotency-Key` answers), while ids and counts stay; deleting an earned reward records
 * `PARTICIPANT_REWARD_DELETED`. Both are delivered, signed, like every event. Over HTTP, through the whole
 * stack (API, worker, dispatcher), checked on a `pg_dump` of the whole database.
 */
const stack = useTestStack({ http: true, dispatcher: true, sweep: true });
const receiver = useReceivers();

let seq = 0;
const tag = () => `${Date.now().toString(36)}x${seq++}`;

/** The deliveries of one event type, each verified with the endpoint's secret and parsed with its schema. */
function delivered(received: Received[], secret: string, type: string) {
  const wh = new Webhook(secret);
  return received
    .filter((r) => r.json?.type === type)
    .map((r) => {
      expect(wh.verify(r.body, r.headers as Record<string, string>)).toEqual(r.json);
      return r.json as { type: string; data: any };
    });
}

describe('deleting a participant erases the person', () => {
  it('records PARTICIPANT_DELETED and PARTICIPANT_REWARD_DELETED, delivers them signed, and leaves the email and names nowhere', async () => {
    const w = await makeWorld(stack.ctx, {
      campaign: { requireRewardApproval: true },
      reward: {
        conversionsRequired: 1,
        isUnlimited: true,
        submissionType: 'FORM',
        submissionFormFields: [{ key: 'address', label: 'Address', isRequired: true }],
      },
    });
    // A receiver that echoes what it gets: its answers, kept as attempt excerpts, hold the person too.
    const rx = await receiver((r) => ({ body: r.body }));
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const base = `/v1/campaign/${w.campaign.id}`;
    const t = tag();
    const person = {
      email: uniqueEmail(`erase${t}`),
      firstName: `Firstname${t}`,
      lastName: `Lastname${t}`,
      phone: `phone${t}`,
      notes: `notes${t}`,
      address: `address${t}`,
    };
    const other = { email: uniqueEmail(`keep${t}`), firstName: `Keeper${t}` };
    const addBody = {
      email: person.email,
      firstName: person.firstName,
      lastName: person.lastName,
      metadata: { phone: person.phone },
    };
    const idem = { 'Idempotency-Key': `erase-${t}` };

    const added = await api.post(`${base}/participant`, addBody, idem);
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const participantId = added.body.id as string;
    const first = await api.post(
      `${base}/loyalty-action?wait=true`,
      { participantEmail: person.email, rewardId: w.reward.id },
      { 'Idempotency-Key': `erase-act-${t}` },
    );
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.action.status).toBe('APPLIED');
    const [earned] = first.body.action.unlockedRewards as { id: string; approved: boolean }[];
    expect(earned?.approved).toBe(false);
    const kept = await api.post(`${base}/loyalty-action?wait=true`, {
      participantEmail: other.email,
      rewardId: w.reward.id,
      firstName: other.firstName,
    });
    expect(kept.body.action.status).toBe('APPLIED');
    const updated = await api.post(
      `${base}/participant/${person.email}`,
      { notes: person.notes },
      { 'Idempotency-Key': `erase-update-${t}` },
    );
    expect(updated.status).toBe(200);
    const form = await api.post(
      `${base}/participant/${person.email}/form-submission`,
      { rewardId: w.reward.id, formData: { address: person.address } },
      { 'Idempotency-Key': `erase-form-${t}` },
    );
    expect(form.status, JSON.stringify(form.body)).toBe(200);

    // Deleting the earned reward (not approved: the campaign approves by hand) is an event of its own.
    const removedReward = await api.delete(`${base}/reward/${earned!.id}`);
    expect(removedReward.status).toBe(200);
    expect(removedReward.body).toEqual({ success: true });
    await eventually(
      async () => delivered(rx.received, ep.secret, 'PARTICIPANT_REWARD_DELETED'),
      (list) => list.length === 1,
    );
    const [rewardDeleted] = delivered(rx.received, ep.secret, 'PARTICIPANT_REWARD_DELETED');
    expect(EVENT_SCHEMAS.PARTICIPANT_REWARD_DELETED.parse(rewardDeleted!.data)).toEqual({
      participantRewardId: earned!.id,
      rewardId: w.reward.id,
      participantId,
      campaign: expect.objectContaining({ id: w.campaign.id }),
    });

    // Every message so far delivered and answered (its echo recorded), so each store holds the person now.
    await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.length >= 7 && ms.every((m) => m.status === 'SUCCEEDED'),
    );
    const before = await dumpDatabase(stack.dbUrl);
    for (const table of ['participants', 'events', 'idempotency_keys', 'webhook_attempts'])
      expect(tablesHolding(before, person.email), table).toContain(table);
    expect(tablesHolding(before, person.address)).toEqual(
      expect.arrayContaining(['form_submissions', 'events', 'idempotency_keys']),
    );

    const deleted = await api.delete(`${base}/participant/${person.email}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true });
    // A short history is erased entirely by the deletion's transaction.
    expect(deleted.headers.get('stampcard-erasure')).toBe('DONE');
    await eventually(
      async () => delivered(rx.received, ep.secret, 'PARTICIPANT_DELETED'),
      (list) => list.length === 1,
    );
    const [participantDeleted] = delivered(rx.received, ep.secret, 'PARTICIPANT_DELETED');
    const data = EVENT_SCHEMAS.PARTICIPANT_DELETED.parse(participantDeleted!.data);
    expect(data).toEqual({
      participantId,
      campaign: expect.objectContaining({ id: w.campaign.id }),
      loyaltyActionCount: 1,
      approvedRewardCount: 0,
      rejectedLoyaltyActionCount: 0,
      erasedEventCount: expect.any(Number),
    });
    expect(data.erasedEventCount).toBeGreaterThanOrEqual(4);
    await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.every((m) => m.status === 'SUCCEEDED'),
    );

    // The person is nowhere in the database; the other participant is untouched.
    const after = await dumpDatabase(stack.dbUrl);
    for (const [field, value] of Object.entries(person))
      expect(tablesHolding(after, value), `${field} ${value}`).toEqual([]);
    expect(tablesHolding(after, other.email)).toEqual(expect.arrayContaining(['participants', 'events']));
    expect(tablesHolding(after, other.firstName)).toContain('events');

    // Ids and counts stay: the person's events are all there, by id, and still fit their schemas.
    const rows = await stack.ctx.db
      .select()
      .from(events)
      .where(eq(events.campaignId, w.campaign.id))
      .orderBy(asc(events.seq));
    const theirs = rows.filter((r) => (r.data as any).participant?.id === participantId);
    expect(theirs.map((r) => r.type)).toEqual(
      expect.arrayContaining([
        'NEW_PARTICIPANT_ADDED',
        'LOYALTY_ACTION_APPLIED',
        'PARTICIPANT_UPDATED',
        'PARTICIPANT_SUBMITTED_REWARD_FORM',
      ]),
    );
    for (const r of rows) {
      expect(isEmittedEventType(r.type)).toBe(true);
      if (isEmittedEventType(r.type))
        expect(EVENT_SCHEMAS[r.type].safeParse(r.data).success, r.type).toBe(true);
    }
    expect((theirs[0]!.data as any).participant).toMatchObject({
      id: participantId,
      email: '',
      firstName: null,
      lastName: null,
      loyaltyActionCount: expect.any(Number),
    });

    // A replay of a stored answer that showed the person shows the erased copy, and adds no one again.
    const again = await api.post(`${base}/participant`, addBody, idem);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toMatchObject({ id: participantId, email: '', firstName: null, lastName: null });
    expect(again.body.metadata).toEqual({});
    expect((await api.get(`${base}/participant/${participantId}`)).status).toBe(404);
  });

  it('erases a long history in bounded batches: the first in the deletion, the rest by the worker', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const base = `/v1/campaign/${w.campaign.id}`;
    const t = tag();
    const person = { email: uniqueEmail(`long${t}`), firstName: `Longname${t}` };
    const added = await api.post(`${base}/participant`, person);
    expect(added.status).toBe(200);
    // 4,500 more events that show it (copies of its NEW_PARTICIPANT_ADDED): three batches of erasure.
    await stack.ctx.db.execute(sql`
      insert into ${events} (id, campaign_id, type, data, created_at)
      select 'evt_copy' || g || ${t}, campaign_id, type, data, created_at
      from ${events}, generate_series(1, 4500) g
      where campaign_id = ${w.campaign.id} and type = 'NEW_PARTICIPANT_ADDED'`);

    const deleted = await api.delete(`${base}/participant/${added.body.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.headers.get('stampcard-erasure')).toBe('PENDING');
    const [recorded] = await stack.ctx.db
      .select()
      .from(events)
      .where(and(eq(events.campaignId, w.campaign.id), eq(events.type, 'PARTICIPANT_DELETED')));
    expect(EVENT_SCHEMAS.PARTICIPANT_DELETED.parse(recorded!.data)).toMatchObject({
      participantId: added.body.id,
      erasedEventCount: 2000,
    });
    const done = await eventually(
      () => api.get(`${base}/participant/${added.body.id}/erasure`),
      (r) => r.body.status === 'DONE',
    );
    expect(done.body).toMatchObject({ erasedEventCount: 4501, batches: 3 });
    const dump = await dumpDatabase(stack.dbUrl);
    expect(tablesHolding(dump, person.email)).toEqual([]);
    expect(tablesHolding(dump, person.firstName)).toEqual([]);
  });
});
