import { auditLog } from '@stampcard/db';
import { desc, gt, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp, type Reply } from '../../../test/support/client';
import { consoleSignIn } from '../../../test/support/console';
import { makeUserWithKey, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * The audit log: each kind of change made through the public API, the operator API, the console or the portal
 * leaves exactly one entry, with its actor and what it changed; a refused request leaves none; the account
 * reads its own, the operator every account's; a participant's erasure scrubs its entries.
 */
const stack = useTestStack({ http: true, worker: true });
const startReceiver = useReceivers();

type Entry = typeof auditLog.$inferSelect;

async function lastId(): Promise<number> {
  const [row] = await stack.ctx.db
    .select({ id: auditLog.id })
    .from(auditLog)
    .orderBy(desc(auditLog.id))
    .limit(1);
  return row?.id ?? 0;
}

/** The entries `change` left, oldest first, with its answer. */
async function entriesOf(change: () => Promise<Reply>): Promise<{ reply: Reply; entries: Entry[] }> {
  const from = await lastId();
  const reply = await change();
  const entries = await stack.ctx.db
    .select()
    .from(auditLog)
    .where(gt(auditLog.id, from))
    .orderBy(auditLog.id);
  return { reply, entries };
}

/** The change answered `status` and left exactly one entry, as `expected` says. */
async function oneEntry(change: () => Promise<Reply>, status: number, expected: Partial<Entry>) {
  const { reply, entries } = await entriesOf(change);
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(entries, JSON.stringify(entries.map((e) => [e.entity, e.action]))).toHaveLength(1);
  expect(entries[0]).toMatchObject(expected);
  return { reply, entry: entries[0]! };
}

async function noEntry(change: () => Promise<Reply>, status: number) {
  const { reply, entries } = await entriesOf(change);
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(entries).toEqual([]);
}

describe('the audit log', () => {
  it('records each change made with an API key once, with the key, its user and the request', async () => {
    const w = await makeWorld(stack.ctx, { campaign: { requireRewardApproval: true } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const actor = {
      actorKind: 'API_KEY' as const,
      actorId: w.keyId,
      actorUserId: w.user.id,
      accountId: w.account.id,
    };
    const base = `/v1/campaign/${w.campaign.id}`;
    const email = uniqueEmail('audit');

    const added = await oneEntry(() => api.post(`${base}/participant`, { email, firstName: 'Ada' }), 200, {
      ...actor,
      campaignId: w.campaign.id,
      entity: 'participant',
      action: 'CREATED',
      before: null,
    });
    expect(added.entry.entityId).toBe(added.reply.body.id);
    expect(added.entry.after).toMatchObject({ email, first_name: 'Ada', loyalty_action_source: 'DIRECT' });
    expect(added.entry.after).not.toHaveProperty('email_key');
    expect(added.entry.requestId).toBe(added.reply.headers.get('x-request-id'));

    const updated = await oneEntry(
      () => api.patch(`${base}/participant/${email}`, { firstName: 'Grace', metadata: { tier: 'gold' } }),
      200,
      { ...actor, entity: 'participant', entityId: added.reply.body.id, action: 'UPDATED' },
    );
    expect(updated.entry.before).toEqual({ first_name: 'Ada', metadata: null });
    expect(updated.entry.after).toEqual({ first_name: 'Grace', metadata: { tier: 'gold' } });

    // A loyalty action is in the ledger, not here; the reward it unlocks is the worker's doing.
    await noEntry(
      () => api.post(`${base}/loyalty-action?wait=true`, { participantEmail: email, rewardId: w.reward.id }),
      200,
    );
    const rewards = await eventually(
      () => api.get(`${base}/participant/${email}/rewards`),
      (r) => r.body.rewards?.length === 1,
    );
    const rewardId = rewards.body.rewards[0].id as string;
    await oneEntry(() => api.post(`${base}/reward/${rewardId}/approve`, {}), 200, {
      ...actor,
      entity: 'participant_reward',
      entityId: rewardId,
      action: 'UPDATED',
    });
    await oneEntry(() => api.post(`${base}/reward/${rewardId}/fulfill`, {}), 200, {
      ...actor,
      entity: 'participant_reward',
      action: 'UPDATED',
    });

    // Endpoints: the secret never shows.
    const receiver = await startReceiver();
    const made = await oneEntry(
      () =>
        api.post(`${base}/webhook-endpoints`, { url: receiver.url, eventTypes: ['NEW_PARTICIPANT_ADDED'] }),
      200,
      { ...actor, entity: 'webhook_endpoint', action: 'CREATED' },
    );
    expect(made.entry.after).not.toHaveProperty('secret');
    expect(JSON.stringify(made.entry)).not.toContain(made.reply.body.secret);
    const rotated = await oneEntry(
      () => api.post(`/v1/webhook-endpoints/${made.reply.body.id}/rotate-secret`, {}),
      200,
      {
        ...actor,
        entity: 'webhook_endpoint',
        action: 'UPDATED',
      },
    );
    expect(JSON.stringify(rotated.entry)).not.toContain(rotated.reply.body.secret);

    // Refused: nothing recorded.
    await noEntry(() => api.patch(`${base}/participant/${email}`, { email: 'not-an-email' }), 400);
    await noEntry(
      () =>
        api.post(`${base}/participant`, `{"email": "${uniqueEmail('x')}", "metadata": {"__proto__": 1}}`, {
          'content-type': 'application/json',
        }),
      400,
    );

    await oneEntry(
      () => api.patch(`/v1/webhook-endpoints/${made.reply.body.id}`, { description: 'Fulfilment' }),
      200,
      {
        ...actor,
        entity: 'webhook_endpoint',
        action: 'UPDATED',
        before: { description: '' },
        after: { description: 'Fulfilment' },
      },
    );

    // Deleting a participant deletes its reward with it: an entry for each, the same request's.
    const gone = await entriesOf(() => api.delete(`${base}/participant/${added.reply.body.id}`));
    expect(gone.reply.status).toBe(200);
    expect(gone.entries.map((e) => [e.entity, e.entityId, e.action, e.actorId])).toEqual([
      ['participant', added.reply.body.id, 'DELETED', w.keyId],
      ['participant_reward', rewardId, 'DELETED', w.keyId],
    ]);
    expect(new Set(gone.entries.map((e) => e.requestId)).size).toBe(1);
  });

  it('records the operator, the console and the portal as who they are', async () => {
    const op = client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
    const operator = { actorKind: 'OPERATOR' as const, actorId: null };
    const account = await oneEntry(
      () => op.post('/admin/v1/accounts', { name: 'Audited', plan: 'GROWTH' }),
      200,
      {
        ...operator,
        entity: 'account',
        action: 'CREATED',
      },
    );
    const accountId = account.reply.body.id as string;
    expect(account.entry.accountId).toBe(accountId);
    await oneEntry(() => op.patch(`/admin/v1/accounts/${accountId}`, { name: 'Audited, renamed' }), 200, {
      ...operator,
      entity: 'account',
      action: 'UPDATED',
      before: { name: 'Audited' },
      after: { name: 'Audited, renamed' },
    });
    const user = await oneEntry(
      () => op.post(`/admin/v1/accounts/${accountId}/users`, { email: uniqueEmail('user'), role: 'ADMIN' }),
      200,
      { ...operator, entity: 'user', action: 'CREATED', accountId },
    );
    const key = await oneEntry(() => op.post(`/admin/v1/users/${user.reply.body.id}/api-keys`), 200, {
      ...operator,
      entity: 'api_key',
      action: 'CREATED',
      accountId,
    });
    expect(key.entry.after).not.toHaveProperty('key_hash');
    expect(JSON.stringify(key.entry)).not.toContain(key.reply.body.key);
    const campaign = await oneEntry(
      () =>
        op.post(`/admin/v1/accounts/${accountId}/campaigns`, {
          name: 'Audited program',
          status: 'IN_PROGRESS',
        }),
      200,
      { ...operator, entity: 'campaign', action: 'CREATED', accountId },
    );
    const campaignId = campaign.reply.body.id as string;
    expect(campaign.entry.campaignId).toBe(campaignId);
    await oneEntry(() => op.post(`/admin/v1/campaigns/${campaignId}/rewards`, { title: 'Tea' }), 200, {
      ...operator,
      entity: 'reward',
      action: 'CREATED',
      accountId,
      campaignId,
    });
    await noEntry(() => op.patch(`/admin/v1/campaigns/${campaignId}`, { status: 'NOT_A_STATUS' }), 400);

    // The account's key adds a participant; the console changes it; the portal adds an endpoint.
    const api = client(overHttp(stack.baseUrl!), key.reply.body.key);
    const email = uniqueEmail('console');
    await api.post(`/v1/campaign/${campaignId}/participant`, { email });
    await oneEntry(
      () => op.patch(`/admin/v1/campaigns/${campaignId}/participants/${email}`, { fraudRiskLevel: 'HIGH' }),
      200,
      {
        ...operator,
        entity: 'participant',
        action: 'UPDATED',
        after: { fraud_risk_level: 'HIGH', fraud_reason_code: 'MANUAL_UPDATE' },
      },
    );

    const cookie = (await consoleSignIn(stack.baseUrl!)).headers.get('set-cookie')!.split(';')[0]!;
    const html = await (await fetch(`${stack.baseUrl}/console/imports`, { headers: { cookie } })).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
    const viaConsole = await oneEntry(
      async () => {
        const res = await fetch(`${stack.baseUrl}/console/imports/upload?campaignId=${campaignId}`, {
          method: 'POST',
          headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'text/csv' },
          body: `email\r\n${uniqueEmail('via-console')}\r\n`,
        });
        return { status: res.status, body: await res.json(), headers: res.headers };
      },
      202,
      { actorKind: 'CONSOLE', entity: 'participant_import', action: 'CREATED', accountId, campaignId },
    );
    expect(viaConsole.entry.actorId).toMatch(/^console_[0-9a-f]{20}$/);
    // The import's participants are recorded as the console's, through the import.
    const imported = await eventually(
      () =>
        stack.ctx.db.execute<{ actor_kind: string; actor_id: string; via: string }>(sql`
          select actor_kind, actor_id, via from audit_log where entity = 'participant' and action = 'CREATED'
            and via = ${viaConsole.reply.body.id}`),
      (rows) => rows.length === 1,
    );
    expect(imported[0]).toEqual({
      actor_kind: 'CONSOLE',
      actor_id: viaConsole.entry.actorId,
      via: viaConsole.reply.body.id,
    });

    const link = await api.post('/v1/portal-sessions', { campaignId });
    expect(link.status).toBe(200);
    const portal = new URL(link.body.url);
    const portalPage = await (await fetch(`${stack.baseUrl}${portal.pathname}/webhooks`)).text();
    const portalCsrf = /name="_csrf" value="([^"]+)"/.exec(portalPage)?.[1];
    expect(portalCsrf).toBeTruthy();
    const receiver = await startReceiver();
    await oneEntry(
      async () => {
        const res = await fetch(`${stack.baseUrl}${portal.pathname}/webhooks/endpoints`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ _csrf: portalCsrf!, url: receiver.url, kind: 'NOTIFY', campaignId }),
        });
        return { status: res.status, body: await res.text(), headers: res.headers };
      },
      200,
      { actorKind: 'PORTAL', entity: 'webhook_endpoint', action: 'CREATED', accountId },
    );
  });

  it("records the other kinds of change once each: forms, rewards removed, endpoints deleted, and the operator's updates", async () => {
    const w = await makeWorld(stack.ctx, {
      campaign: { requireRewardApproval: true },
      reward: {
        conversionsRequired: 1,
        submissionType: 'FORM',
        submissionFormFields: [{ key: 'url', label: 'Link', isRequired: true }],
      },
    });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const actor = { actorKind: 'API_KEY' as const, actorId: w.keyId };
    const base = `/v1/campaign/${w.campaign.id}`;
    const email = uniqueEmail('forms');
    await api.post(`${base}/participant`, { email });
    const sent = await oneEntry(
      () =>
        api.post(`${base}/participant/${email}/form-submission`, {
          rewardId: w.reward.id,
          formData: { url: 'https://example.com/secret-answer' },
        }),
      200,
      { ...actor, entity: 'form_submission', action: 'CREATED' },
    );
    // The answers are the participant's, not the log's.
    expect(JSON.stringify(sent.entry)).not.toContain('secret-answer');
    await oneEntry(() => api.post(`${base}/form-submission/${sent.reply.body.id}/approve`, {}), 200, {
      ...actor,
      entity: 'form_submission',
      action: 'UPDATED',
      after: expect.objectContaining({ status: 'REVIEWED' }),
    });
    // The approval's action unlocks a reward awaiting approval (the worker's doing); removing it is the key's.
    const waiting = await eventually(
      () => api.get(`${base}/participant/${email}/rewards`),
      (r) => r.body.rewards?.length === 1,
    );
    await oneEntry(() => api.delete(`${base}/reward/${waiting.body.rewards[0].id}`), 200, {
      ...actor,
      entity: 'participant_reward',
      action: 'DELETED',
    });
    const receiver = await startReceiver();
    const endpoint = await api.post(`${base}/webhook-endpoints`, { url: receiver.url });
    // Deleting an endpoint marks it deleted, then takes its row once its messages are gone (here at once, in
    // the same transaction; a long backlog's last batch goes later, the dispatcher's doing).
    const dropped = await entriesOf(() => api.delete(`/v1/webhook-endpoints/${endpoint.body.id}`));
    expect(dropped.reply.status).toBe(200);
    expect(dropped.entries.map((e) => [e.entity, e.entityId, e.action, e.actorId])).toEqual([
      ['webhook_endpoint', endpoint.body.id, 'UPDATED', w.keyId],
      ['webhook_endpoint', endpoint.body.id, 'DELETED', w.keyId],
    ]);
    expect(dropped.entries[0]!.after).toMatchObject({ enabled: false, deleted_at: expect.any(String) });

    const op = client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
    const operator = { actorKind: 'OPERATOR' as const, accountId: w.account.id };
    await oneEntry(() => op.patch(`/admin/v1/users/${w.user.id}`, { role: 'MEMBER' }), 200, {
      ...operator,
      entity: 'user',
      action: 'UPDATED',
      before: expect.objectContaining({ role: 'ADMIN' }),
      after: expect.objectContaining({ role: 'MEMBER' }),
    });
    await oneEntry(() => op.patch(`/admin/v1/campaigns/${w.campaign.id}`, { name: 'Renamed' }), 200, {
      ...operator,
      entity: 'campaign',
      action: 'UPDATED',
      after: { name: 'Renamed' },
    });
    await oneEntry(
      () => op.patch(`/admin/v1/campaigns/${w.campaign.id}/rewards/${w.reward.id}`, { title: 'Tea' }),
      200,
      {
        ...operator,
        entity: 'reward',
        action: 'UPDATED',
        after: { title: 'Tea' },
      },
    );
    await oneEntry(() => op.delete(`/admin/v1/api-keys/${w.keyId}`), 200, {
      ...operator,
      entity: 'api_key',
      entityId: w.keyId,
      action: 'UPDATED',
      after: { revoked_at: expect.any(String) },
    });
    // Revoking it again changes nothing, and records nothing.
    await noEntry(() => op.delete(`/admin/v1/api-keys/${w.keyId}`), 200);
  });

  it("is read by the account's ADMIN keys, its own only, filtered and paged; the operator reads every account's", async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const base = `/v1/campaign/${w.campaign.id}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await api.post(`${base}/participant`, { email: uniqueEmail(`read${i}`) });
      ids.push(r.body.id);
    }
    await api.patch(`${base}/participant/${ids[0]}`, { notes: 'first' });
    await client(overHttp(stack.baseUrl!), other.key).post(`/v1/campaign/${other.campaign.id}/participant`, {
      email: uniqueEmail('theirs'),
    });

    const all = await api.get('/v1/audit-log?limit=100');
    expect(all.status).toBe(200);
    expect(all.body.entries.every((e: { accountId: string }) => e.accountId === w.account.id)).toBe(true);
    expect(all.body.entries.map((e: { entityId: string }) => e.entityId)).toEqual([
      ids[0],
      ...[...ids].reverse(),
    ]);
    expect(all.body.entries[0]).toMatchObject({
      entity: 'participant',
      action: 'UPDATED',
      actor: { kind: 'API_KEY', id: w.keyId, userId: w.user.id },
      before: { notes: null },
      after: { notes: 'first' },
    });
    // Paged, newest first, each entry once.
    const seen: string[] = [];
    let next: string | null = null;
    do {
      const page: Reply = await api.get(`/v1/audit-log?limit=2${next ? `&nextId=${next}` : ''}`);
      seen.push(...page.body.entries.map((e: { id: string }) => e.id));
      next = page.body.nextId;
    } while (next);
    expect(seen).toEqual(all.body.entries.map((e: { id: string }) => e.id));
    // Filters: an entity's history, an actor, a time range.
    const history = await api.get(`/v1/audit-log?entity=participant&entityId=${ids[0]}`);
    expect(history.body.entries.map((e: { action: string }) => e.action)).toEqual(['UPDATED', 'CREATED']);
    expect((await api.get(`/v1/audit-log?actorId=${other.keyId}`)).body.entries).toEqual([]);
    const later = all.body.entries[0].at + 1;
    expect((await api.get(`/v1/audit-log?from=${later}`)).body.entries).toEqual([]);
    expect((await api.get(`/v1/audit-log?to=${later}`)).body.entries).toHaveLength(6);
    expect((await api.get('/v1/audit-log?entity=nothing')).status).toBe(400);
    expect((await api.get('/v1/audit-log?nextId=abc')).status).toBe(400);

    // A MEMBER key is refused; the operator sees every account's, or one's.
    const member = await makeUserWithKey(stack.ctx, w.account.id, {
      role: 'MEMBER',
      campaignIds: [w.campaign.id],
    });
    const refused = await client(overHttp(stack.baseUrl!), member.key).get('/v1/audit-log');
    expect(refused.status).toBe(403);
    const op = client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
    const theirs = await op.get(`/admin/v1/audit-log?accountId=${other.account.id}`);
    expect(theirs.body.entries).toHaveLength(1);
    expect(theirs.body.entries[0]).toMatchObject({ accountId: other.account.id, entity: 'participant' });
    expect((await op.get('/admin/v1/audit-log?limit=100')).body.entries.length).toBeGreaterThan(6);
  });

  it("keeps no trace of a deleted participant's person in its entries once it is erased", async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const base = `/v1/campaign/${w.campaign.id}`;
    const email = uniqueEmail('erased');
    const kept = uniqueEmail('kept');
    const added = await api.post(`${base}/participant`, {
      email,
      firstName: 'Ada',
      lastName: 'Lovelace',
      ipAddress: '198.51.100.7',
    });
    await api.post(`${base}/participant`, { email: kept, firstName: 'Grace' });
    await api.patch(`${base}/participant/${email}`, { notes: 'likes tea', metadata: { city: 'London' } });
    expect((await api.delete(`${base}/participant/${added.body.id}`)).status).toBe(200);
    await eventually(
      () => api.get(`${base}/participant/${added.body.id}/erasure`),
      (r) => r.body.status === 'DONE',
    );
    const entries = await stack.ctx.db.execute<{ before: unknown; after: unknown; entity_id: string }>(
      sql`select before, after, entity_id from audit_log where account_id = ${w.account.id} order by id`,
    );
    const text = JSON.stringify(entries.filter((e) => e.entity_id === added.body.id));
    for (const trace of [email, 'Ada', 'Lovelace', '198.51.100.7', 'likes tea', 'London'])
      expect(text).not.toContain(trace);
    expect(entries.filter((e) => e.entity_id === added.body.id)).toHaveLength(3);
    // Another participant's entries are as they were.
    expect(JSON.stringify(entries)).toContain(kept);
  });
});
