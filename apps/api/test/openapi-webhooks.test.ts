import Ajv2020 from 'ajv/dist/2020';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { client, eventually, inProcess, type Reply } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { type Received, useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { operator, registerEndpoint } from '../../../test/support/webhooks';
import { OPENAPI_PATH } from '../src/docs/index';

/**
 * The document's `webhooks` against what the dispatcher really sends: every event type (and the test message)
 * is provoked through the API, received by a real endpoint, and its body and headers are held to the entry of
 * its type.
 */
const stack = useTestStack({ dispatcher: true, sweep: true, retrySchedule: '50,100,200' });
const receiver = useReceivers();

type Parameter = { name: string; in: string; required?: boolean; schema: object };
type Webhooks = Record<
  string,
  {
    post: {
      parameters: Parameter[];
      requestBody: { content: { 'application/json': { schema: object } } };
    };
  }
>;

describe('webhooks as the document describes them', () => {
  it('every event type arrives with the body and the headers its webhook entry declares', async () => {
    const doc = (await (await stack.app.request(OPENAPI_PATH)).json()) as { webhooks: Webhooks };
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema(doc, 'openapi');
    const compile = (schema: object) =>
      ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/')));

    const ok = (r: Reply) => {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    const rx = await receiver();
    const gone = await receiver(() => ({ status: 410, body: 'gone' }));
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1, isUnlimited: true } });
    const api = client(inProcess(stack.app), w.key);
    const op = operator(stack);
    const campaign = `/v1/campaign/${w.campaign.id}`;
    const endpoint = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    // Its first delivery answers 410: the endpoint is disabled, which the other endpoint hears of.
    await registerEndpoint(stack, w.campaign.id, { url: gone.url, eventTypes: ['NEW_PARTICIPANT_ADDED'] });
    ok(await op.post(`/admin/v1/webhook-endpoints/${endpoint.id}/test`));

    const email = uniqueEmail();
    const first = ok(
      await api.post(`${campaign}/loyalty-action?wait=true`, {
        participantEmail: email,
        rewardId: w.reward.id,
      }),
    );
    const participantId = first.action.participantId as string;
    ok(await api.patch(`${campaign}/participant/${email}`, { firstName: 'Ada' }));
    ok(
      await op.patch(`/admin/v1/campaigns/${w.campaign.id}/participants/${participantId}`, {
        fraudRiskLevel: 'MEDIUM',
      }),
    );
    ok(await api.post(`${campaign}/reward/${first.action.unlockedRewards[0].id}/fulfill`));

    const form = ok(
      await op.post(`/admin/v1/campaigns/${w.campaign.id}/rewards`, {
        title: 'Review us',
        conversionsRequired: 1,
        submissionType: 'FORM',
        submissionFormFields: [{ key: 'url', isRequired: true }],
      }),
    );
    const sent = ok(
      await api.post(`${campaign}/participant/${email}/form-submission`, {
        rewardId: form.id,
        formData: { url: 'https://example.com/review' },
      }),
    );
    ok(await api.post(`${campaign}/form-submission/${sent.id}/approve`));

    ok(await op.patch(`/admin/v1/campaigns/${w.campaign.id}`, { requireRewardApproval: true }));
    const waiting = ok(
      await api.post(`${campaign}/loyalty-action?wait=true`, {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
      }),
    );
    ok(await api.delete(`${campaign}/reward/${waiting.action.unlockedRewards[0].id}`));
    ok(await api.delete(`${campaign}/participant/${participantId}`));
    ok(await op.patch(`/admin/v1/campaigns/${w.campaign.id}`, { status: 'COMPLETE' }));

    const types = Object.keys(doc.webhooks).sort();
    const got = await eventually(
      async () => rx.received,
      (received) => types.every((type) => received.some((r) => r.json?.type === type)),
      20_000,
    );

    const verifier = new Webhook(endpoint.secret);
    const checked = new Set<string>();
    for (const r of got as Received[]) {
      const type = r.json.type as string;
      const entry = doc.webhooks[type]?.post;
      expect(entry, `${type} is not in the document's webhooks`).toBeDefined();
      const body = compile(entry!.requestBody.content['application/json'].schema);
      expect(
        body(r.json) ? null : ajv.errorsText(body.errors),
        `${type}\n${r.body.slice(0, 2000)}`,
      ).toBeNull();
      for (const p of entry!.parameters.filter((p) => p.in === 'header')) {
        const value = r.headers[p.name.toLowerCase()];
        if (p.required) expect(value, `${type}: ${p.name}`).toBeDefined();
        if (value !== undefined) expect(compile(p.schema)(value), `${type}: ${p.name}=${value}`).toBe(true);
      }
      expect(verifier.verify(r.body, r.headers as Record<string, string>)).toEqual(r.json);
      checked.add(type);
    }
    expect([...checked].sort()).toEqual(types);
    expect(types).toContain('WEBHOOK_ENDPOINT_DISABLED');
  });
});
