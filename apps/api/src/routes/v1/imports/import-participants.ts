import { createRoute } from '@hono/zod-openapi';
import { loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponsesFor, PUBLIC_ERRORS } from '../../../lib/error-schema';
import { answerImportUpload, guardImportBody } from '../../../lib/imports';
import { IMPORT_TERMS, importUploadRequest, importUploadResponses } from './schemas';

const route = createRoute({
  method: 'post',
  operationId: 'importParticipants',
  path: '/v1/campaign/{id}/participants/imports',
  summary: 'Import participants in bulk',
  description: `Starts an import of participants into a DRAFT or IN_PROGRESS campaign (400 INVALID_STATE otherwise). ${IMPORT_TERMS}`,
  tags: ['Imports'],
  middleware: [guardImportBody],
  request: importUploadRequest,
  responses: {
    ...importUploadResponses,
    ...errorResponsesFor([...PUBLIC_ERRORS, 'INVALID_STATE']),
  },
});

export const registerImportParticipants = (app: App) =>
  app.openapi(route, async (c) => {
    const principal = c.get('principal');
    const campaign = await loadCampaignFor(c.get('ctx'), principal, c.req.valid('param').id);
    return answerImportUpload(c, campaign, c.req.valid('query')) as never;
  });
