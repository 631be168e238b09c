import { createApp } from '@stampcard/api';
import { createLogger } from '@stampcard/config';
import { EVENT_SCHEMAS, updateCampaign } from '@stampcard/core';
import { events, formSubmissions, loyaltyActions } from '@stampcard/db';
import { and, asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, inProcess } from '../../../test/support/client';
import { makeReward, makeUserWithKey, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { queueDown } from '../../../test/support/queue-down';
import { refusals } from '../../../test/support/refused';
import { useTestStack } from '../../../test/support/use';

// The worker runs: an approval's loyalty action is applied as a trigger's would be.
const stack = useTestStack();
const expectRefused = refusals(stack);

const FORM = {
  submissionType: 'FORM' as const,
  submissionFormFields: [
    { key: 'handle', label: 'Your handle', type: 'text', isRequired: true, isVisible: true },
    { key: 'postUrl', label: 'Link to the post', isRequired: true },
    { key: 'note', label: 'Anything else', isRequired: false },
    { key: 'internal', label: 'Hidden', isRequired: true, isVisible: false },
  ],
  submissionFormMessages: { required: 'Please fill this in', alreadySubmitted: 'You already sent this form' },
};

/** A running campaign whose reward takes the form and unlocks at its first action; a participant in it. */
async function formWorld(reward: Record<string, unknown> = {}) {
  const w = await makeWorld(stack.ctx, { reward: { ...FORM, conversionsRequired: 1, limit: 1, ...reward } });
  const api = client(inProcess(stack.app), w.key);
  const email = uniqueEmail('form');
  const created = await api.post(`/v1/campaign/${w.campaign.id}/participant`, { email });
  expect(created.status).toBe(200);
  return { ...w, api, email, participantId: created.body.id as string };
}

type World = Awaited<ReturnType<typeof formWorld>>;
const submit = (w: World, body: Record<string, unknown>, who = w.email) =>
  w.api.post(`/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(who)}/form-submission`, body);
const good = (w: World) => ({
  rewardId: w.reward.id,
  formData: { handle: '@ada', postUrl: 'https://example.com/p/1' },
});

const eventsOf = (campaignId: string, type: string) =>
  stack.ctx.db
    .select()
    .from(events)
    .where(and(eq(events.campaignId, campaignId), eq(events.type, type)))
    .orderBy(asc(events.seq));

describe('submitting a form', () => {
  it('answers the submission UNREVIEWED and records PARTICIPANT_SUBMITTED_REWARD_FORM; nothing unlocks', async () => {
    const w = await formWorld();
    const r = await submit(w, { ...good(w), formData: { ...good(w).formData, note: '' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^fsub_/),
      participantId: w.participantId,
      participantEmail: w.email,
      rewardId: w.reward.id,
      status: 'UNREVIEWED',
      formData: { handle: '@ada', postUrl: 'https://example.com/p/1', note: '' },
      createdAt: expect.any(Number),
      reviewedAt: null,
    });
    const [event] = await eventsOf(w.campaign.id, 'PARTICIPANT_SUBMITTED_REWARD_FORM');
    const data = EVENT_SCHEMAS.PARTICIPANT_SUBMITTED_REWARD_FORM.parse(event!.data);
    expect(data.formSubmission).toEqual(r.body);
    expect(data.participant.id).toBe(w.participantId);
    // By id too.
    const other = await formWorld();
    expect((await submit(other, good(other), other.participantId)).status).toBe(200);
    const p = await w.api.get(`/v1/campaign/${w.campaign.id}/participant/${w.participantId}`);
    expect(p.body.rewards).toEqual([]);
  });

  it("refuses what does not fit the reward's form, in its own messages, and writes nothing", async () => {
    const w = await formWorld();
    const url = `/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(w.email)}/form-submission`;
    const missing = await expectRefused(
      () => w.api.post(url, { rewardId: w.reward.id, formData: { handle: '  ' } }),
      400,
      'VALIDATION_ERROR',
    );
    expect(missing.errors).toEqual([
      expect.objectContaining({ param: 'formData.handle', msg: 'Your handle: Please fill this in' }),
      expect.objectContaining({ param: 'formData.postUrl', msg: 'Link to the post: Please fill this in' }),
    ]);
    const unknown = await expectRefused(
      () => w.api.post(url, { ...good(w), formData: { ...good(w).formData, internal: 'x', other: 'y' } }),
      400,
      'VALIDATION_ERROR',
    );
    expect(unknown.errors.map((e: { param: string }) => e.param)).toEqual([
      'formData.internal',
      'formData.other',
    ]);
    for (const body of [
      { rewardId: w.reward.id },
      { rewardId: w.reward.id, formData: { handle: 1 } },
      { rewardId: w.reward.id, formData: { handle: 'x'.repeat(5001), postUrl: 'u' } },
      { ...good(w), extra: true },
      {
        rewardId: w.reward.id,
        formData: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])),
      },
    ]) {
      await expectRefused(() => w.api.post(url, body), 400, 'VALIDATION_ERROR');
    }
    // A reward that takes no form.
    const plain = await makeReward(stack.ctx, w.campaign.id, { conversionsRequired: 1 });
    const noForm = await expectRefused(
      () => w.api.post(url, { rewardId: plain.id, formData: {} }),
      400,
      'VALIDATION_ERROR',
    );
    expect(noForm.errors[0].param).toBe('rewardId');
    // Unknown reward, another campaign's reward, unknown participant.
    const elsewhere = await formWorld();
    await expectRefused(() => w.api.post(url, { ...good(w), rewardId: 'rew_nope' }), 404, 'NOT_FOUND');
    await expectRefused(
      () => w.api.post(url, { ...good(w), rewardId: elsewhere.reward.id }),
      404,
      'NOT_FOUND',
    );
    await expectRefused(() => submit(w, good(w), uniqueEmail('nobody')), 404, 'NOT_FOUND');
    await expectRefused(() => submit(w, good(w), elsewhere.participantId), 404, 'NOT_FOUND');
  });

  it('takes form-encoded answers (formData[key]=value) and keeps prototype names out', async () => {
    const w = await formWorld();
    const url = `/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(w.email)}/form-submission`;
    for (const body of [
      '{"rewardId":"x","formData":{"__proto__":{"handle":"a"}}}',
      '{"rewardId":"x","formData":{"constructor":"a"}}',
    ]) {
      const refused = await expectRefused(
        () => w.api.post(url, body, { 'content-type': 'application/json' }),
        400,
        'VALIDATION_ERROR',
      );
      expect(refused.errors[0].msg).toBe('this key is not allowed');
    }
    const encoded = new URLSearchParams({
      rewardId: w.reward.id,
      'formData[handle]': '@ada',
      'formData[postUrl]': 'https://example.com/p/1',
    }).toString();
    const r = await w.api.post(url, encoded, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.formData).toEqual({ handle: '@ada', postUrl: 'https://example.com/p/1' });
    const stored = await w.api.get(`/v1/campaign/${w.campaign.id}/form-submission/${r.body.id}`);
    expect(stored.body).toEqual(r.body);
  });

  it('one UNREVIEWED submission per participant and reward, even when two arrive at once', async () => {
    const w = await formWorld();
    const both = await Promise.all([submit(w, good(w)), submit(w, good(w))]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
    const refused = both.find((r) => r.status === 400)!;
    expect(refused.body).toMatchObject({ code: 'INVALID_STATE', message: 'You already sent this form' });
    const again = await expectRefused(() => submit(w, good(w)), 400, 'INVALID_STATE');
    expect(again.message).toBe('You already sent this form');
    expect(await stack.ctx.db.$count(formSubmissions, eq(formSubmissions.campaignId, w.campaign.id))).toBe(1);
    // Without a message of its own, the reward's refusal says so plainly.
    const plain = await formWorld({ submissionFormMessages: null });
    expect((await submit(plain, good(plain))).status).toBe(200);
    const second = await expectRefused(() => submit(plain, good(plain)), 400, 'INVALID_STATE');
    expect(second.message).toMatch(/already waiting for review/);
    // Once reviewed, the participant may send the form again.
    const [first] = await stack.ctx.db
      .select()
      .from(formSubmissions)
      .where(eq(formSubmissions.campaignId, w.campaign.id));
    expect(
      (await w.api.post(`/v1/campaign/${w.campaign.id}/form-submission/${first!.id}/reject`)).status,
    ).toBe(200);
    expect((await submit(w, good(w))).status).toBe(200);
  });

  it('needs a running campaign the key can reach', async () => {
    const w = await formWorld();
    await updateCampaign(stack.ctx, w.campaign.id, { status: 'COMPLETE' });
    await expectRefused(() => submit(w, good(w)), 400, 'INVALID_STATE');
    const stranger = await makeWorld(stack.ctx);
    const outsider = client(inProcess(stack.app), stranger.key);
    await expectRefused(
      () =>
        outsider.post(
          `/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(w.email)}/form-submission`,
          good(w),
        ),
      403,
      'NOT_AUTHORIZED',
    );
  });
});

describe('listing and reading submissions', () => {
  it('pages through every submission once, oldest first, filtered by status and reward', async () => {
    const w = await formWorld({ isUnlimited: true });
    const second = await makeReward(stack.ctx, w.campaign.id, { ...FORM, conversionsRequired: 1 });
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const email = uniqueEmail(`l${i}`);
      await w.api.post(`/v1/campaign/${w.campaign.id}/participant`, { email });
      const rewardId = i % 2 === 0 ? w.reward.id : second.id;
      const r = await submit(w, { rewardId, formData: good(w).formData }, email);
      expect(r.status).toBe(200);
      ids.push(r.body.id);
    }
    await w.api.post(`/v1/campaign/${w.campaign.id}/form-submission/${ids[0]}/reject`);
    const base = `/v1/campaign/${w.campaign.id}/form-submissions`;
    const seen: string[] = [];
    let next: string | null = null;
    do {
      const page: { status: number; body: any } = await w.api.get(
        `${base}?limit=3${next ? `&nextId=${next}` : ''}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.limit).toBe(3);
      seen.push(...page.body.formSubmissions.map((s: { id: string }) => s.id));
      expect(page.body.more).toBe(page.body.nextId !== null);
      next = page.body.nextId;
    } while (next);
    expect(seen).toEqual(ids);
    const unreviewed = (await w.api.get(`${base}?status=UNREVIEWED`)).body.formSubmissions;
    expect(unreviewed.map((s: { id: string }) => s.id)).toEqual(ids.slice(1));
    const ofSecond = (await w.api.get(`${base}?rewardId=${second.id}&status=UNREVIEWED`)).body;
    expect(ofSecond.formSubmissions.map((s: { id: string }) => s.id)).toEqual([ids[1], ids[3], ids[5]]);
    expect(ofSecond).toMatchObject({ limit: 20, nextId: null, more: false });

    const one = await w.api.get(`/v1/campaign/${w.campaign.id}/form-submission/${ids[0]}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: ids[0], status: 'REVIEWED', reviewedAt: expect.any(Number) });
  });

  it('refuses bad paging, unknown submissions and other campaigns', async () => {
    const w = await formWorld();
    const other = await formWorld();
    const theirs = (await submit(other, good(other))).body.id as string;
    const base = `/v1/campaign/${w.campaign.id}/form-submissions`;
    for (const q of ['limit=0', 'limit=101', 'limit=x', 'status=DONE', 'sort=id']) {
      await expectRefused(() => w.api.get(`${base}?${q}`), 400, 'VALIDATION_ERROR');
    }
    await expectRefused(() => w.api.get(`${base}?nextId=${theirs}`), 404, 'NOT_FOUND');
    await expectRefused(
      () => w.api.get(`/v1/campaign/${w.campaign.id}/form-submission/${theirs}`),
      404,
      'NOT_FOUND',
    );
    await expectRefused(
      () => w.api.get(`/v1/campaign/${w.campaign.id}/form-submission/fsub_none`),
      404,
      'NOT_FOUND',
    );
    await expectRefused(() => other.api.get(base), 403, 'NOT_AUTHORIZED');
    await expectRefused(
      () => other.api.get(`/v1/campaign/${w.campaign.id}/form-submission/${theirs}`),
      403,
      'NOT_AUTHORIZED',
    );
    await expectRefused(
      () => w.api.get(`/v1/campaign/${w.campaign.id}/form-submission/${'f'.repeat(65)}`),
      400,
      'VALIDATION_ERROR',
    );
  });
});

describe('removing the participant', () => {
  it('takes its submissions with it: no longer listed, read or reviewable', async () => {
    const w = await formWorld();
    const sent = (await submit(w, good(w))).body;
    const gone = await w.api.delete(`/v1/campaign/${w.campaign.id}/participant/${w.participantId}`);
    expect(gone.status).toBe(200);
    expect(await stack.ctx.db.$count(formSubmissions, eq(formSubmissions.id, sent.id))).toBe(0);
    const list = await w.api.get(`/v1/campaign/${w.campaign.id}/form-submissions`);
    expect(list.body).toMatchObject({ formSubmissions: [], nextId: null, more: false });
    await expectRefused(
      () => w.api.get(`/v1/campaign/${w.campaign.id}/form-submission/${sent.id}`),
      404,
      'NOT_FOUND',
    );
    await expectRefused(
      () => w.api.post(`/v1/campaign/${w.campaign.id}/form-submission/${sent.id}/approve`),
      404,
      'NOT_FOUND',
    );
  });
});

describe('reviewing a submission', () => {
  it('approval counts a loyalty action through the pipeline: the worker applies it and the reward unlocks', async () => {
    const w = await formWorld();
    const sent = (await submit(w, good(w))).body;
    const r = await w.api.post(`/v1/campaign/${w.campaign.id}/form-submission/${sent.id}/approve`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ id: sent.id, status: 'REVIEWED', reviewedAt: expect.any(Number) });
    const actionId = r.headers.get('stampcard-loyalty-action-id')!;
    expect(actionId).toMatch(/^act_/);
    const action = await eventually(
      () => w.api.get(`/v1/campaign/${w.campaign.id}/loyalty-action/${actionId}`),
      (a) => a.body.status === 'APPLIED',
    );
    expect(action.body).toMatchObject({ participantId: w.participantId, rewardId: w.reward.id });
    expect(action.body.unlockedRewards).toHaveLength(1);
    const [row] = await stack.ctx.db.select().from(loyaltyActions).where(eq(loyaltyActions.id, actionId));
    expect(row!.metadata).toEqual({ source: 'FORM_SUBMISSION', formSubmissionId: sent.id });
    const [reviewed] = await eventsOf(w.campaign.id, 'REWARD_FORM_REVIEWED');
    const data = EVENT_SCHEMAS.REWARD_FORM_REVIEWED.parse(reviewed!.data);
    expect(data).toMatchObject({ approved: true, loyaltyActionId: actionId, formSubmission: r.body });
    expect(await eventsOf(w.campaign.id, 'PARTICIPANT_REACHED_A_GOAL')).toHaveLength(1);

    // The unlock rule decides: at its limit (1), a second approved form counts but earns nothing more.
    const again = (await submit(w, good(w))).body;
    const second = await w.api.post(`/v1/campaign/${w.campaign.id}/form-submission/${again.id}/approve`);
    const secondId = second.headers.get('stampcard-loyalty-action-id')!;
    const applied = await eventually(
      () => w.api.get(`/v1/campaign/${w.campaign.id}/loyalty-action/${secondId}`),
      (a) => a.body.status === 'APPLIED',
    );
    expect(applied.body.unlockedRewards).toEqual([]);
    const p = await w.api.get(`/v1/campaign/${w.campaign.id}/participant/${w.participantId}`);
    expect(p.body).toMatchObject({ loyaltyActionCount: 2 });
    expect(p.body.rewards).toHaveLength(1);
  });

  it('approval with the queue down: REVIEWED and the action in the ledger together; the relay queues it', async () => {
    const logger = createLogger({ level: 'silent', name: 'form-submissions-test' });
    const down = queueDown();
    try {
      const w = await formWorld();
      const sent = (await submit(w, good(w))).body;
      const app = createApp({ ...stack.deps, redis: down.redis, queues: down.queues, logger });
      const r = await client(inProcess(app), w.key).post(
        `/v1/campaign/${w.campaign.id}/form-submission/${sent.id}/approve`,
      );
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.status).toBe('REVIEWED');
      const actionId = r.headers.get('stampcard-loyalty-action-id')!;
      const [queued] = await stack.ctx.db
        .select()
        .from(loyaltyActions)
        .where(eq(loyaltyActions.id, actionId));
      expect(queued!.status).toBe('QUEUED');
      await stack.worker!.relay.runOnce();
      const applied = await eventually(
        () => w.api.get(`/v1/campaign/${w.campaign.id}/loyalty-action/${actionId}`),
        (a) => a.body.status === 'APPLIED',
      );
      expect(applied.body.unlockedRewards).toHaveLength(1);
    } finally {
      await down.close();
    }
  });

  it('rejection unlocks nothing; a reviewed submission cannot be reviewed again', async () => {
    const w = await formWorld();
    const sent = (await submit(w, good(w))).body;
    const r = await w.api.post(`/v1/campaign/${w.campaign.id}/form-submission/${sent.id}/reject`);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('REVIEWED');
    expect(r.headers.get('stampcard-loyalty-action-id')).toBeNull();
    const [reviewed] = await eventsOf(w.campaign.id, 'REWARD_FORM_REVIEWED');
    expect(reviewed!.data).toMatchObject({ approved: false, loyaltyActionId: null });
    expect(await stack.ctx.db.$count(loyaltyActions, eq(loyaltyActions.campaignId, w.campaign.id))).toBe(0);
    for (const verb of ['approve', 'reject']) {
      const again = await expectRefused(
        () => w.api.post(`/v1/campaign/${w.campaign.id}/form-submission/${sent.id}/${verb}`),
        400,
        'INVALID_STATE',
      );
      expect(again.message).toMatch(/already reviewed/);
    }
  });

  it('approval needs a running campaign; unknown submissions and other keys are refused', async () => {
    const w = await formWorld();
    const sent = (await submit(w, good(w))).body;
    await updateCampaign(stack.ctx, w.campaign.id, { status: 'COMPLETE' });
    await expectRefused(
      () => w.api.post(`/v1/campaign/${w.campaign.id}/form-submission/${sent.id}/approve`),
      400,
      'INVALID_STATE',
    );
    // Rejecting still works on a finished campaign.
    expect((await w.api.post(`/v1/campaign/${w.campaign.id}/form-submission/${sent.id}/reject`)).status).toBe(
      200,
    );
    const other = await formWorld();
    const theirs = (await submit(other, good(other))).body.id as string;
    for (const verb of ['approve', 'reject']) {
      await expectRefused(
        () => w.api.post(`/v1/campaign/${w.campaign.id}/form-submission/${theirs}/${verb}`),
        404,
        'NOT_FOUND',
      );
    }
    const { key } = await makeUserWithKey(stack.ctx, w.account.id, { role: 'MEMBER' } as never);
    for (const verb of ['approve', 'reject']) {
      await expectRefused(
        () =>
          client(inProcess(stack.app), key).post(
            `/v1/campaign/${other.campaign.id}/form-submission/${theirs}/${verb}`,
          ),
        403,
        'NOT_AUTHORIZED',
      );
    }
  });
});
