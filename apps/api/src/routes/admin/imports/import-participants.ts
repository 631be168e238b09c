import { createRoute } from '@hono/zod-openapi';
import { requireCampaign } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponsesFor, OPERATOR_ERRORS } from '../../../lib/error-schema';
import { answerImportUpload, guardImportBody } from '../../../lib/imports';
import { IMPORT_TERMS, importUploadRequest, importUploadResponses } from '../../v1/imports/schemas';

const route = createRoute({
  method: 'post',
  operationId: 'adminImportParticipants',
  path: '/admin/v1/campaigns/{id}/participants/import',
  summary: 'Import participants in bulk (operator)',
  description: `The operator's import into any account's DRAFT or IN_PROGRESS campaign, the same as \`POST /v1/campaign/{id}/participants/imports\` (its progress is read there, or at \`/admin/v1/campaigns/{id}/participants/imports/{importId}\`). ${IMPORT_TERMS}`,
  tags: ['Operator: participants'],
  middleware: [guardImportBody],
  request: importUploadRequest,
  responses: {
    ...importUploadResponses,
    ...errorResponsesFor([...OPERATOR_ERRORS, 'INVALID_STATE']),
  },
});

export const registerAdminImportParticipants = (app: App) =>
  app.openapi(route, async (c) => {
    const campaign = await requireCampaign(c.get('ctx'), c.req.valid('param').id);
    return answerImportUpload(c, campaign, c.req.valid('query')) as never;
  });
