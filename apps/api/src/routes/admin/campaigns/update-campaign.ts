import { z } from '@hono/zod-openapi';
import { updateCampaign } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { errorResponsesFor, OPERATOR_ERRORS } from '../../../lib/error-schema';
import { jsonBody, okResponse } from '../../../lib/schemas';
import { OperatorCampaign } from '../responses';
import { CampaignPatch } from '../schemas';

const route = createBodyRoute({
  method: 'patch',
  operationId: 'adminUpdateCampaign',
  path: '/admin/v1/campaigns/{id}',
  summary: 'Change a campaign: settings or status (entering COMPLETE records CAMPAIGN_ENDED)',
  tags: ['Operator: campaigns'],
  request: { params: z.object({ id: z.string().min(1).max(64) }), body: jsonBody(CampaignPatch) },
  responses: {
    ...okResponse('The campaign with its settings', OperatorCampaign),
    ...errorResponsesFor([...OPERATOR_ERRORS, 'INVALID_STATE']),
  },
});

export const registerUpdateCampaign = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await updateCampaign(c.get('ctx'), c.req.valid('param').id, c.req.valid('json')), 200),
  );
