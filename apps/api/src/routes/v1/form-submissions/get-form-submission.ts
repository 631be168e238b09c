import { createRoute } from '@hono/zod-openapi';
import { getFormSubmission, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponses, okResponse } from '../../../lib/schemas';
import { FormSubmission } from '../../../lib/views';
import { submissionParams } from './schemas';

const route = createRoute({
  method: 'get',
  operationId: 'getFormSubmission',
  path: '/v1/campaign/{id}/form-submission/{submissionId}',
  summary: 'One form submission',
  tags: ['Form submissions'],
  request: { params: submissionParams },
  responses: { ...okResponse('The FormSubmission', FormSubmission), ...errorResponses },
});

export const registerGetFormSubmission = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, submissionId } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    return c.json(await getFormSubmission(ctx, campaign.id, submissionId), 200);
  });
