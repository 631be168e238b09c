import { type ErrorCode, loadCampaignFor, notAuthorized, type WebhookScope } from '@stampcard/core';
import type { Context } from 'hono';
import type { AppEnv } from '../../env';
import { errorResponsesFor, OPERATOR_ERRORS, PUBLIC_ERRORS } from '../../lib/error-schema';

type C = Context<AppEnv>;

/**
 * Where the webhook operations are served and for whom: the operator's (`/admin/v1`, every account) and a
 * business's own (`/v1`, an ADMIN API key, its account only). One route file per operation registers on both,
 * so a rule or a check lives once.
 */
export type WebhookSurface = {
  /** The operations' path prefix. */
  prefix: '/admin/v1' | '/v1';
  /** How a campaign's own paths begin: `/admin/v1/campaigns/{id}`, or the public API's `/v1/campaign/{id}`. */
  campaignPath: string;
  /** The operation's id here: the operator's name, or the public one. */
  operationId: (names: { admin: string; public: string }) => string;
  tags: string[];
  /** The error responses of a route, with the extra codes it may answer. */
  errors: (extra?: ErrorCode[]) => ReturnType<typeof errorResponsesFor>;
  /** The caller's scope; refused (403) when the caller may not manage webhooks. */
  scopeOf: (c: C) => WebhookScope;
  /** Checks the caller may reach a campaign its path names (404, 403) before anything else. */
  checkCampaign: (c: C, campaignId: string) => Promise<void>;
};

export const OPERATOR_WEBHOOKS: WebhookSurface = {
  prefix: '/admin/v1',
  campaignPath: '/admin/v1/campaigns/{id}',
  operationId: (n) => n.admin,
  tags: ['Operator: webhooks'],
  errors: (extra = []) => errorResponsesFor([...OPERATOR_ERRORS, ...extra]),
  scopeOf: () => ({}),
  checkCampaign: async () => {},
};

/** An ADMIN key's principal: a MEMBER's key manages no webhooks. */
function adminPrincipal(c: C) {
  const principal = c.get('principal');
  if (principal.role !== 'ADMIN') {
    throw notAuthorized("Only an ADMIN key manages the account's webhooks");
  }
  return principal;
}

export const PUBLIC_WEBHOOKS: WebhookSurface = {
  prefix: '/v1',
  campaignPath: '/v1/campaign/{id}',
  operationId: (n) => n.public,
  tags: ['Webhook endpoints'],
  errors: (extra = []) => errorResponsesFor([...PUBLIC_ERRORS, ...extra]),
  scopeOf: (c) => ({ accountId: adminPrincipal(c).accountId }),
  checkCampaign: async (c, campaignId) => {
    await loadCampaignFor(c.get('ctx'), adminPrincipal(c), campaignId);
  },
};
