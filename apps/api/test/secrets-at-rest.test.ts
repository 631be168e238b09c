import { describe, expect, it } from 'vitest';
import { client, overHttp, type Reply } from '../../../test/support/client';
import { dumpDatabase, tablesHolding } from '../../../test/support/dump';
import { makeAccount, makeCampaign } from '../../../test/support/factories';
import { startReceiver } from '../../../test/support/receiver';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * Secrets at rest (docs/security.md): an answer that shows a secret once (an API key, a webhook signing
 * secret) is kept for an `Idempotency-Key` without it, so a copy of the database holds no API key at all, and
 * webhook secrets only in `webhook_endpoints`, where signing needs them. Over HTTP, through the whole stack.
 */
const stack = useTestStack({ http: true, worker: false });
const operator = () => client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
let seq = 0;
const withKey = () => ({ 'Idempotency-Key': `secret-${Date.now().toString(36)}-${seq++}` });

/** Sends once with a key, then again with the same key: the replay withholds `field`, and only it. */
async function sendTwice(
  path: string,
  body: unknown,
  field: string,
): Promise<{ first: Reply; again: Reply }> {
  const headers = withKey();
  const first = await operator().post(path, body, headers);
  expect(first.status, JSON.stringify(first.body)).toBe(200);
  expect(typeof first.body[field]).toBe('string');
  expect(first.headers.get('idempotent-withheld')).toBeNull();
  const again = await operator().post(path, body, headers);
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(again.headers.get('idempotent-withheld')).toBe(field);
  expect(again.body).toEqual({ ...first.body, [field]: null });
  return { first, again };
}

describe('secrets at rest', () => {
  it('an API key, an endpoint secret and a rotated secret made with an Idempotency-Key are stored nowhere but where signing needs them', async () => {
    const account = await makeAccount(stack.ctx);
    const campaign = await makeCampaign(stack.ctx, account.id);
    const user = await operator().post(`/admin/v1/accounts/${account.id}/users`, {
      email: `owner-${Date.now()}@example.com`,
      role: 'ADMIN',
    });
    expect(user.status).toBe(200);

    const apiKey = await sendTwice(`/admin/v1/users/${user.body.id}/api-keys`, undefined, 'key');
    const key = apiKey.first.body.key as string;
    expect(key).toMatch(/^sk_/);
    // The replay withheld the key, and the key still works: it was issued once.
    const campaigns = await client(overHttp(stack.baseUrl!), key).get('/v1/campaigns');
    expect(campaigns.status).toBe(200);

    const rx = await startReceiver();
    try {
      const created = await sendTwice(
        `/admin/v1/campaigns/${campaign.id}/webhook-endpoints`,
        { url: rx.url },
        'secret',
      );
      const endpointId = created.first.body.id as string;
      const rotated = await sendTwice(
        `/admin/v1/webhook-endpoints/${endpointId}/rotate-secret`,
        {},
        'secret',
      );
      const secrets = [created.first.body.secret as string, rotated.first.body.secret as string];
      for (const s of secrets) expect(s).toMatch(/^whsec_/);

      const dump = await dumpDatabase(stack.dbUrl);
      expect(tablesHolding(dump, key)).toEqual([]);
      // The key's first 9 characters are its shown prefix; its secret part is nowhere either.
      expect(tablesHolding(dump, key.slice(9))).toEqual([]);
      // Both secrets sign during the rotation's overlap: `webhook_endpoints` holds them, nothing else does.
      for (const s of secrets) expect(tablesHolding(dump, s)).toEqual(['webhook_endpoints']);
      expect(tablesHolding(dump, 'whsec_')).toEqual(['webhook_endpoints']);
    } finally {
      await rx.close();
    }
  });
});
