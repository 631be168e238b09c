import { createRoute, z } from '@hono/zod-openapi';
import { listImports, loadCampaignFor, serializeImport } from '@stampcard/core';
import type { App } from '../../../env';
import { campaignIdParam, errorResponses, okResponse } from '../../../lib/schemas';
import { ParticipantImport } from '../../../lib/views';

const route = createRoute({
  method: 'get',
  operationId: 'listImports',
  path: '/v1/campaign/{id}/participants/imports',
  summary: "A campaign's latest imports",
  description:
    'The 50 latest imports of the campaign, newest first, without their refused rows (see each one).',
  tags: ['Imports'],
  request: { params: z.object({ id: campaignIdParam }) },
  responses: {
    ...okResponse('The imports', z.strictObject({ items: z.array(ParticipantImport) })),
    ...errorResponses,
  },
});

export const registerListImports = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), c.req.valid('param').id);
    const items = await listImports(ctx, campaign.id, 50);
    return c.json({ items: items.map((i) => serializeImport(i, [])) }, 200);
  });
