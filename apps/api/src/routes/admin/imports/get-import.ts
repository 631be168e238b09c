import { createRoute } from '@hono/zod-openapi';
import { requireCampaign, serializeImport, showImport } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { ParticipantImport } from '../../../lib/views';
import { importParams } from '../../v1/imports/schemas';

const route = createRoute({
  method: 'get',
  operationId: 'adminGetImport',
  path: '/admin/v1/campaigns/{id}/participants/imports/{importId}',
  summary: 'An import and its progress (operator)',
  description:
    "The same as `GET /v1/campaign/{id}/participants/imports/{importId}`, for any account's campaign.",
  tags: ['Operator: participants'],
  request: { params: importParams },
  responses: { ...okResponse('The ParticipantImport object', ParticipantImport), ...operatorErrorResponses },
});

export const registerAdminGetImport = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, importId } = c.req.valid('param');
    const campaign = await requireCampaign(ctx, id);
    const found = await showImport(ctx, campaign.id, importId);
    return c.json(serializeImport(found.import, found.refusals), 200);
  });
