import { createRoute, z } from '@hono/zod-openapi';
import { listFormSubmissions, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { campaignIdParam, errorResponses, okResponse } from '../../../lib/schemas';
import { FormSubmissionPage, formSubmissionListQuery } from './schemas';

const route = createRoute({
  method: 'get',
  operationId: 'listFormSubmissions',
  path: '/v1/campaign/{id}/form-submissions',
  summary: "A campaign's form submissions, oldest first",
  description:
    "Filters: `status` (`UNREVIEWED`, `REVIEWED`), `rewardId`. Page with `nextId` (the id of the first submission of the next page) while `more` is true; `limit` 1..100 (20) is the most a page holds: it holds fewer when it reaches its byte budget of 1 MiB. A `nextId` that is not one of the campaign's submissions is a 404.",
  tags: ['Form submissions'],
  request: { params: z.object({ id: campaignIdParam }), query: formSubmissionListQuery },
  responses: {
    ...okResponse('`{ formSubmissions, limit, nextId, more }`', FormSubmissionPage),
    ...errorResponses,
  },
});

export const registerListFormSubmissions = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), c.req.valid('param').id);
    return c.json(await listFormSubmissions(ctx, campaign.id, c.req.valid('query')), 200);
  });
