import { createRoute } from '@hono/zod-openapi';
import { loadCampaignFor, serializeImport, showImport } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponses, okResponse } from '../../../lib/schemas';
import { ParticipantImport } from '../../../lib/views';
import { importParams } from './schemas';

const route = createRoute({
  method: 'get',
  operationId: 'getImport',
  path: '/v1/campaign/{id}/participants/imports/{importId}',
  summary: 'An import and its progress',
  description:
    'The import: `status` (`QUEUED`, `RUNNING`, `SUCCEEDED`, `FAILED`), `rowsDone` of `rowsTotal` (null until the file was read through), what it did so far, its first 100 refused rows with their row number (1 is the first row after the header) and reason, and `refusedRowsUrl`, where every refused row is downloaded as CSV. Poll it while it runs.',
  tags: ['Imports'],
  request: { params: importParams },
  responses: { ...okResponse('The ParticipantImport object', ParticipantImport), ...errorResponses },
});

export const registerGetImport = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, importId } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    const found = await showImport(ctx, campaign.id, importId);
    return c.json(serializeImport(found.import, found.refusals), 200);
  });
