import { type CampaignInput, EVENT_SCHEMAS, type EventData } from '@stampcard/core';
import {
  events,
  type FraudReasonCode,
  type FraudRiskLevel,
  participants,
  webhookMessages,
} from '@stampcard/db';
import { and, asc, eq, inArray, isNull } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { client, eventually, inProcess, type Reply } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { fingerprint, refusals } from '../../../test/support/refused';
import { useTestStack } from '../../../test/support/use';
import { messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

/**
 * Manual review on the operator API (contract section 6): a level set by hand (`MANUAL_UPDATE`) with its
 * `PARTICIPANT_FRAUD_STATUS_UPDATED`, and the review list, riskiest first. The dispatcher runs without its
 * sweep timer: the webhook test sweeps by hand, so nothing writes behind a refusal's back.
 */
const stack = useTestStack({ worker: false, dispatcher: true });
const refused = refusals(stack);

/**
 * The outbox once it is still: the dispatcher fans out, in the background, the events that the writes before
 * committed (each handed to it at its commit), so a check that nothing was written waits for that first.
 */
const settled = () =>
  eventually(
    async () =>
      (await stack.ctx.db.$count(events, isNull(events.dispatchedAt))) +
      (await stack.ctx.db.$count(webhookMessages, eq(webhookMessages.status, 'PENDING'))),
    (n) => n === 0,
  );

async function expectRefused(...args: Parameters<typeof refused>) {
  await settled();
  return refused(...args);
}
const receiver = useReceivers();

const TYPE = 'PARTICIPANT_FRAUD_STATUS_UPDATED';
const RANK: Record<FraudRiskLevel, number> = { HIGH: 0, MEDIUM: 1, LOW: 2 };

function ok(reply: Reply) {
  if (reply.status !== 200)
    throw new Error(`expected 200, got ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

/** A world and a way to add participants to its campaign through the public API. */
async function world(campaign: Partial<CampaignInput> = {}) {
  const w = await makeWorld(stack.ctx, { campaign });
  const api = client(inProcess(stack.app), w.key);
  const add = async (email = uniqueEmail('review')) =>
    ok(await api.post(`/v1/campaign/${w.campaign.id}/participant`, { email })) as {
      id: string;
      email: string;
    };
  const review = (idOrEmail: string, body: unknown) =>
    operator(stack).patch(`/admin/v1/campaigns/${w.campaign.id}/participants/${idOrEmail}`, body);
  const list = (query = '') =>
    operator(stack).get(`/admin/v1/campaigns/${w.campaign.id}/participants${query}`);
  return { ...w, api, add, review, list };
}

/** Sets levels straight in the table, as scoring would have: the list reads what is stored. */
async function storeLevel(ids: string[], fraudRiskLevel: FraudRiskLevel, fraudReasonCode: FraudReasonCode) {
  await stack.ctx.db
    .update(participants)
    .set({ fraudRiskLevel, fraudReasonCode })
    .where(inArray(participants.id, ids));
}

const fraudEvents = async (campaignId: string) =>
  (
    await stack.ctx.db
      .select()
      .from(events)
      .where(and(eq(events.campaignId, campaignId), eq(events.type, TYPE)))
      .orderBy(asc(events.seq))
  ).map((e) => EVENT_SCHEMAS[TYPE].parse(e.data) as EventData<typeof TYPE>);

const rowOf = async (id: string) =>
  (await stack.ctx.db.select().from(participants).where(eq(participants.id, id)))[0]!;

/** The review order: rank, then id byte by byte (ids are ASCII, so `<` compares bytes). */
const reviewOrder = (list: { id: string; level: FraudRiskLevel }[]) =>
  [...list].sort((a, b) => RANK[a.level] - RANK[b.level] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** Pages through the review list with `limit`, calling `between` after each page; answers every page. */
async function pageAll(
  list: (query: string) => Promise<Reply>,
  query: string,
  limit: number,
  between: (page: number) => Promise<void> = async () => {},
) {
  const pages: any[] = [];
  let nextId: string | null = null;
  do {
    const cursor: string = nextId ? `&nextId=${encodeURIComponent(nextId)}` : '';
    const body = ok(await list(`?limit=${limit}${query}${cursor}`));
    pages.push(body);
    await between(pages.length);
    nextId = body.nextId;
    expect(body.more).toBe(nextId !== null);
    if (pages.length > 50) throw new Error('paging does not end');
  } while (nextId);
  return pages;
}

describe('PATCH /admin/v1/campaigns/{id}/participants/{idOrEmail}', () => {
  it('sets the level by id and by email, with the reason MANUAL_UPDATE, and answers the participant', async () => {
    const w = await world();
    const p = await w.add();
    expect(p).toMatchObject({ fraudRiskLevel: 'LOW', fraudReasonCode: 'UNIQUE_IDENTITY' });
    const other = await w.add();

    const byId = ok(await w.review(p.id, { fraudRiskLevel: 'HIGH' }));
    expect(byId).toMatchObject({
      id: p.id,
      email: p.email,
      fraudRiskLevel: 'HIGH',
      fraudReasonCode: 'MANUAL_UPDATE',
      rewards: [],
      rank: expect.any(Number),
    });
    expect(await rowOf(p.id)).toMatchObject({ fraudRiskLevel: 'HIGH', fraudReasonCode: 'MANUAL_UPDATE' });

    // By email, in any case: the same participant.
    const byEmail = ok(await w.review(p.email.toUpperCase(), { fraudRiskLevel: 'MEDIUM' }));
    expect(byEmail).toMatchObject({ id: p.id, fraudRiskLevel: 'MEDIUM', fraudReasonCode: 'MANUAL_UPDATE' });
    expect(await rowOf(p.id)).toMatchObject({ fraudRiskLevel: 'MEDIUM', fraudReasonCode: 'MANUAL_UPDATE' });

    // The public read shows it; the other participant is untouched.
    const read = ok(await w.api.get(`/v1/campaign/${w.campaign.id}/participant/${p.id}`));
    expect(read).toMatchObject({ fraudRiskLevel: 'MEDIUM', fraudReasonCode: 'MANUAL_UPDATE' });
    expect(await rowOf(other.id)).toMatchObject({
      fraudRiskLevel: 'LOW',
      fraudReasonCode: 'UNIQUE_IDENTITY',
    });

    // A form-encoded body is read as the JSON one.
    const form = await operator(stack).patch(
      `/admin/v1/campaigns/${w.campaign.id}/participants/${other.id}`,
      'fraudRiskLevel=HIGH',
      { 'content-type': 'application/x-www-form-urlencoded' },
    );
    expect(ok(form)).toMatchObject({
      id: other.id,
      fraudRiskLevel: 'HIGH',
      fraudReasonCode: 'MANUAL_UPDATE',
    });
  });

  it('records PARTICIPANT_FRAUD_STATUS_UPDATED once per real change, and nothing for a no-op', async () => {
    const w = await world();
    const p = await w.add();
    expect(await fraudEvents(w.campaign.id)).toEqual([]);

    // LOW again, but the reason changes (UNIQUE_IDENTITY → MANUAL_UPDATE): a change.
    const first = ok(await w.review(p.id, { fraudRiskLevel: 'LOW' }));
    expect(first).toMatchObject({ fraudRiskLevel: 'LOW', fraudReasonCode: 'MANUAL_UPDATE' });
    let recorded = await fraudEvents(w.campaign.id);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toEqual({
      participant: expect.objectContaining({
        id: p.id,
        email: p.email,
        fraudRiskLevel: 'LOW',
        fraudReasonCode: 'MANUAL_UPDATE',
      }),
      previous: { fraudRiskLevel: 'LOW', fraudReasonCode: 'UNIQUE_IDENTITY' },
      campaign: {
        id: w.campaign.id,
        name: w.campaign.name,
        status: 'IN_PROGRESS',
        currencyISO: w.campaign.currencyISO,
      },
    });

    // The same level and reason again, by id or by email: the answer is the same and nothing is written.
    for (const idOrEmail of [p.id, p.email]) {
      await settled();
      const before = await fingerprint(stack.ctx.db);
      const again = ok(await w.review(idOrEmail, { fraudRiskLevel: 'LOW' }));
      expect(again).toEqual(first);
      expect(await fingerprint(stack.ctx.db)).toEqual(before);
    }
    expect(await fraudEvents(w.campaign.id)).toHaveLength(1);

    ok(await w.review(p.id, { fraudRiskLevel: 'HIGH' }));
    ok(await w.review(p.email, { fraudRiskLevel: 'HIGH' }));
    ok(await w.review(p.id, { fraudRiskLevel: 'MEDIUM' }));
    recorded = await fraudEvents(w.campaign.id);
    expect(recorded.map((e) => [e.previous.fraudRiskLevel, e.participant.fraudRiskLevel])).toEqual([
      ['LOW', 'LOW'],
      ['LOW', 'HIGH'],
      ['HIGH', 'MEDIUM'],
    ]);
    expect(recorded.slice(1).map((e) => e.previous.fraudReasonCode)).toEqual([
      'MANUAL_UPDATE',
      'MANUAL_UPDATE',
    ]);
    expect(new Set(recorded.map((e) => e.participant.id))).toEqual(new Set([p.id]));
  });

  it('works in every campaign status but DELETED, which is a 404 writing nothing', async () => {
    const draft = await world({ status: 'DRAFT' });
    const inDraft = await draft.add();
    expect(ok(await draft.review(inDraft.id, { fraudRiskLevel: 'HIGH' })).fraudRiskLevel).toBe('HIGH');

    const complete = await world();
    const inComplete = await complete.add();
    ok(await operator(stack).patch(`/admin/v1/campaigns/${complete.campaign.id}`, { status: 'COMPLETE' }));
    expect(ok(await complete.review(inComplete.id, { fraudRiskLevel: 'MEDIUM' })).fraudRiskLevel).toBe(
      'MEDIUM',
    );
    expect(ok(await complete.list()).participants.map((x: { id: string }) => x.id)).toEqual([inComplete.id]);

    const deleted = await world();
    const inDeleted = await deleted.add();
    ok(await operator(stack).patch(`/admin/v1/campaigns/${deleted.campaign.id}`, { status: 'DELETED' }));
    await expectRefused(() => deleted.review(inDeleted.id, { fraudRiskLevel: 'HIGH' }), 404, 'NOT_FOUND');
    await expectRefused(() => deleted.review(inDeleted.email, { fraudRiskLevel: 'HIGH' }), 404, 'NOT_FOUND');
    await expectRefused(() => deleted.list(), 404, 'NOT_FOUND');
    expect(await rowOf(inDeleted.id)).toMatchObject({
      fraudRiskLevel: 'LOW',
      fraudReasonCode: 'UNIQUE_IDENTITY',
    });
  });

  it('404 for an unknown campaign or participant, or one of another campaign, writing nothing', async () => {
    const w = await world();
    const p = await w.add();
    const elsewhere = await world();
    const theirs = await elsewhere.add();
    const op = operator(stack);
    const body = { fraudRiskLevel: 'HIGH' };
    await expectRefused(
      () => op.patch(`/admin/v1/campaigns/nosuchcp/participants/${p.id}`, body),
      404,
      'NOT_FOUND',
    );
    await expectRefused(() => w.review('nosuchparticipant', body), 404, 'NOT_FOUND');
    await expectRefused(() => w.review(uniqueEmail('nobody'), body), 404, 'NOT_FOUND');
    await expectRefused(() => w.review(theirs.id, body), 404, 'NOT_FOUND');
    await expectRefused(() => w.review(theirs.email, body), 404, 'NOT_FOUND');
    expect(await fraudEvents(w.campaign.id)).toEqual([]);
    expect(await rowOf(theirs.id)).toMatchObject({ fraudRiskLevel: 'LOW' });
  });

  it('400 for a bad body, naming the field, writing nothing', async () => {
    const w = await world();
    const p = await w.add();
    const cases: [unknown, string | null][] = [
      [{}, 'fraudRiskLevel'],
      [{ fraudRiskLevel: 'EXTREME' }, 'fraudRiskLevel'],
      [{ fraudRiskLevel: 'high' }, 'fraudRiskLevel'],
      [{ fraudRiskLevel: 2 }, 'fraudRiskLevel'],
      [{ fraudRiskLevel: null }, 'fraudRiskLevel'],
      [{ fraudRiskLevel: 'HIGH', fraudReasonCode: 'BLACKLIST_MATCH' }, 'fraudReasonCode'],
      ['{"fraudRiskLevel": ', null],
      ['["HIGH"]', null],
    ];
    for (const [body, param] of cases) {
      const refused = await expectRefused(() => w.review(p.id, body), 400, 'VALIDATION_ERROR');
      if (param)
        expect(
          refused.errors.map((e: { param: string }) => e.param),
          JSON.stringify(body),
        ).toContain(param);
    }
    expect(await fraudEvents(w.campaign.id)).toEqual([]);
  });

  it('is the operator’s: no token, or an API key, is a 403 writing nothing', async () => {
    const w = await world();
    const p = await w.add();
    const path = `/admin/v1/campaigns/${w.campaign.id}/participants`;
    for (const caller of [client(inProcess(stack.app)), w.api]) {
      await expectRefused(
        () => caller.patch(`${path}/${p.id}`, { fraudRiskLevel: 'HIGH' }),
        403,
        'NOT_AUTHORIZED',
      );
      await expectRefused(() => caller.get(path), 403, 'NOT_AUTHORIZED');
    }
  });
});

describe('GET /admin/v1/campaigns/{id}/participants', () => {
  /** A campaign with 2 HIGH, 3 MEDIUM and 4 LOW participants, each with a reason as scoring gives it. */
  async function reviewWorld() {
    const w = await world();
    const added = [];
    for (let i = 0; i < 9; i++) added.push(await w.add());
    const ids = added.map((p) => p.id);
    await storeLevel(ids.slice(0, 2), 'HIGH', 'DUPLICATE_EMAIL');
    await storeLevel(ids.slice(2, 5), 'MEDIUM', 'SIMILAR_FIRST_NAME');
    const levels: { id: string; level: FraudRiskLevel }[] = ids.map((id, i) => ({
      id,
      level: i < 2 ? 'HIGH' : i < 5 ? 'MEDIUM' : 'LOW',
    }));
    return { ...w, levels };
  }

  it('lists riskiest first, then by id, each with its level and reason; pages with nextId', async () => {
    const w = await reviewWorld();
    const expected = reviewOrder(w.levels);

    const whole = ok(await w.list('?limit=100'));
    expect(whole).toMatchObject({ limit: 100, nextId: null, more: false });
    expect(whole.participants.map((p: { id: string }) => p.id)).toEqual(expected.map((p) => p.id));
    const reasons = { HIGH: 'DUPLICATE_EMAIL', MEDIUM: 'SIMILAR_FIRST_NAME', LOW: 'UNIQUE_IDENTITY' };
    for (const p of whole.participants) {
      expect(p.fraudReasonCode).toBe(reasons[p.fraudRiskLevel as FraudRiskLevel]);
      expect(p.rewards).toEqual([]);
    }
    expect(whole.participants.map((p: { fraudRiskLevel: string }) => p.fraudRiskLevel)).toEqual([
      'HIGH',
      'HIGH',
      'MEDIUM',
      'MEDIUM',
      'MEDIUM',
      'LOW',
      'LOW',
      'LOW',
      'LOW',
    ]);

    const pages = await pageAll(w.list, '', 2);
    expect(pages.map((p) => p.participants.length)).toEqual([2, 2, 2, 2, 1]);
    expect(pages.flatMap((p) => p.participants.map((x: { id: string }) => x.id))).toEqual(
      expected.map((p) => p.id),
    );
    // Each nextId names the level and id of the next page's first participant.
    for (let i = 0; i < pages.length - 1; i++) {
      const head = pages[i + 1].participants[0];
      expect(pages[i].nextId).toBe(`${head.fraudRiskLevel}:${head.id}`);
      expect(pages[i].limit).toBe(2);
    }
    expect(ok(await w.list()).limit).toBe(20);
  });

  it('sees each participant that existed exactly once while others join mid-paging', async () => {
    const w = await reviewWorld();
    const joined: string[] = [];
    const pages = await pageAll(w.list, '', 3, async (page) => {
      if (page !== 1) return;
      // Past the first page (HIGH, HIGH, MEDIUM): one joins HIGH (behind the cursor), one LOW (ahead of it).
      const high = await w.add();
      ok(await w.review(high.id, { fraudRiskLevel: 'HIGH' }));
      const low = await w.add();
      joined.push(high.id, low.id);
    });
    const seen: { id: string; fraudRiskLevel: FraudRiskLevel }[] = pages.flatMap((p) => p.participants);
    const ids = seen.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { id } of w.levels)
      expect(
        ids.filter((x) => x === id),
        id,
      ).toHaveLength(1);
    expect(ids).not.toContain(joined[0]);
    expect(ids.filter((x) => x === joined[1])).toHaveLength(1);
    expect(ids).toEqual(
      reviewOrder(seen.map((p) => ({ id: p.id, level: p.fraudRiskLevel }))).map((p) => p.id),
    );
    expect(ids).toHaveLength(w.levels.length + 1);
  });

  it('filters by fraudRiskLevel, paging within the level', async () => {
    const w = await reviewWorld();
    for (const level of ['HIGH', 'MEDIUM', 'LOW'] as const) {
      const expected = reviewOrder(w.levels.filter((p) => p.level === level)).map((p) => p.id);
      const whole = ok(await w.list(`?fraudRiskLevel=${level}`));
      expect(whole.participants.map((p: { id: string }) => p.id)).toEqual(expected);
      expect(whole.more).toBe(false);
      const pages = await pageAll(w.list, `&fraudRiskLevel=${level}`, 1);
      expect(pages.flatMap((p) => p.participants.map((x: { id: string }) => x.id))).toEqual(expected);
      for (const page of pages.slice(0, -1)) expect(page.nextId.startsWith(`${level}:`)).toBe(true);
    }
  });

  it('takes any position as nextId (a participant gone since still places the page)', async () => {
    const w = await reviewWorld();
    const expected = reviewOrder(w.levels).map((p) => p.id);
    const fromMedium = ok(await w.list(`?limit=100&nextId=MEDIUM:0`));
    expect(fromMedium.participants.map((p: { id: string }) => p.id)).toEqual(expected.slice(2));
    const pastAll = ok(await w.list(`?nextId=LOW:zzzzzzzzzzzzz`));
    expect(pastAll).toMatchObject({ participants: [], nextId: null, more: false });
    // With a filter: a position before the level lists all of it, one after it nothing.
    const lows = expected.slice(5);
    const fromHigh = ok(await w.list(`?fraudRiskLevel=LOW&nextId=HIGH:zzzzzzzzzzzzz`));
    expect(fromHigh.participants.map((p: { id: string }) => p.id)).toEqual(lows);
    const withinLow = ok(await w.list(`?fraudRiskLevel=LOW&nextId=LOW:${lows[1]}`));
    expect(withinLow.participants.map((p: { id: string }) => p.id)).toEqual(lows.slice(1));
    const pastHigh = ok(await w.list(`?fraudRiskLevel=HIGH&nextId=MEDIUM:0`));
    expect(pastHigh).toMatchObject({ participants: [], nextId: null, more: false });
  });

  it('400 for a bad cursor, limit or filter, naming it', async () => {
    const w = await world();
    await w.add();
    const cases: [string, string][] = [
      ['?nextId=abcdefghijkl', 'nextId'],
      ['?nextId=EXTREME:abcdefghijkl', 'nextId'],
      ['?nextId=high:abcdefghijkl', 'nextId'],
      ['?nextId=HIGH:', 'nextId'],
      [`?nextId=HIGH:${'a'.repeat(65)}`, 'nextId'],
      ['?nextId=', 'nextId'],
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=ten', 'limit'],
      ['?fraudRiskLevel=NONE', 'fraudRiskLevel'],
      ['?sort=id', 'sort'],
    ];
    for (const [query, param] of cases) {
      const refused = await expectRefused(() => w.list(query), 400, 'VALIDATION_ERROR');
      expect(
        refused.errors.map((e: { param: string }) => e.param),
        query,
      ).toContain(param);
    }
  });

  it('404 for an unknown campaign', async () => {
    await expectRefused(
      () => operator(stack).get('/admin/v1/campaigns/nosuchcp/participants'),
      404,
      'NOT_FOUND',
    );
  });
});

describe('webhooks', () => {
  it('an endpoint subscribed to PARTICIPANT_FRAUD_STATUS_UPDATED gets it, signed; one subscribed to other types does not', async () => {
    const w = await world();
    const wants = await receiver();
    const other = await receiver();
    const ep = await registerEndpoint(stack, w.campaign.id, { url: wants.url, eventTypes: [TYPE] });
    expect(ep.eventTypes).toEqual([TYPE]);
    const otherEp = await registerEndpoint(stack, w.campaign.id, {
      url: other.url,
      eventTypes: ['PARTICIPANT_UPDATED'],
    });
    const p = await w.add();
    ok(await w.review(p.id, { fraudRiskLevel: 'HIGH' }));
    ok(await w.review(p.id, { fraudRiskLevel: 'HIGH' }));

    // The API hands each committed event to the dispatcher: no sweep runs (this stack runs it by hand only).
    const dispatcher = stack.dispatcher!;
    const [got] = await wants.waitFor(1);
    const verified = new Webhook(ep.secret).verify(got!.body, got!.headers as Record<string, string>);
    expect(verified).toEqual(got!.json);
    expect(got!.json).toEqual({
      type: TYPE,
      timestamp: expect.any(Number),
      data: {
        participant: expect.objectContaining({
          id: p.id,
          fraudRiskLevel: 'HIGH',
          fraudReasonCode: 'MANUAL_UPDATE',
        }),
        previous: { fraudRiskLevel: 'LOW', fraudReasonCode: 'UNIQUE_IDENTITY' },
        campaign: expect.objectContaining({ id: w.campaign.id }),
      },
    });
    expect(EVENT_SCHEMAS[TYPE].safeParse(got!.json.data).success).toBe(true);

    const messages = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.length === 1 && ms[0].status === 'SUCCEEDED',
    );
    expect(messages.map((m) => m.eventType)).toEqual([TYPE]);
    await dispatcher.sweeper.runOnce();
    expect(await messagesOf(stack, ep.id)).toHaveLength(1);
    expect(await messagesOf(stack, otherEp.id)).toEqual([]);
    expect(wants.received).toHaveLength(1);
    expect(other.received).toEqual([]);
  });
});
