import { z } from '@hono/zod-openapi';
import { loadCampaignFor, notAuthorized } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { campaignIdParam, errorResponses, int, jsonBody, okSecretResponse } from '../../../lib/schemas';
import { withholdSecrets } from '../../../middleware/idempotency';
import {
  PORTAL_LINK_DEFAULT_SECONDS,
  PORTAL_LINK_MAX_SECONDS,
  PORTAL_LINK_MIN_SECONDS,
  PORTAL_PATH,
  signPortalLink,
} from '../../../portal/link';

const Body = z
  .strictObject({
    campaignId: campaignIdParam
      .optional()
      .openapi({ description: "Only this campaign's webhooks; absent: every campaign of the account" }),
    expiresInSeconds: int(PORTAL_LINK_MIN_SECONDS, PORTAL_LINK_MAX_SECONDS)
      .optional()
      .openapi({ description: 'How long the link opens the portal, 60 to 86400 s (default 3600)' }),
  })
  .openapi('PortalSessionRequest');

const PortalSession = z
  .strictObject({
    url: z.string().nullable().openapi({
      description:
        "The portal's link: open it, or embed it in an iframe of an origin the account allows. It is a credential until it expires: hand it to the signed-in user only. `null` in a replay of the answer for a repeated Idempotency-Key.",
    }),
    expiresAt: z.number().int().openapi({ description: 'When the link stops opening the portal (UTC ms)' }),
  })
  .openapi('PortalSession');

const route = createBodyRoute({
  method: 'post',
  operationId: 'createPortalSession',
  path: '/v1/portal-sessions',
  summary: "A signed link to the business portal: the account's webhooks, deliveries and attempts",
  description:
    "An ADMIN key only (a MEMBER's is refused 403). The portal shows the account's endpoints (one campaign's, with `campaignId`), their message log and attempts, replay, secret rotation, a test event and the event catalog, and nothing else. It may be framed by the origins the account allows (`frameAncestors`, set by the operator); every other page refuses framing. An expired or altered link shows nothing.",
  tags: ['Webhook endpoints'],
  request: { body: jsonBody(Body) },
  responses: { ...okSecretResponse('The link and when it expires', PortalSession), ...errorResponses },
});

export const registerCreatePortalSession = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const principal = c.get('principal');
    if (principal.role !== 'ADMIN') {
      throw notAuthorized("Only an ADMIN key opens the portal: it manages the account's webhooks");
    }
    const { campaignId, expiresInSeconds } = c.req.valid('json');
    if (campaignId !== undefined) await loadCampaignFor(ctx, principal, campaignId);
    const { operatorToken, publicUrl, clock } = c.get('deps');
    const expiresAt = clock.now().getTime() + (expiresInSeconds ?? PORTAL_LINK_DEFAULT_SECONDS) * 1000;
    const token = signPortalLink(
      { accountId: principal.accountId, ...(campaignId ? { campaignId } : {}), expiresAt },
      operatorToken,
    );
    withholdSecrets(c, ['url']);
    const origin = publicUrl ?? new URL(c.req.url).origin;
    return c.json({ url: `${origin}${PORTAL_PATH}/${token}`, expiresAt }, 200);
  });
