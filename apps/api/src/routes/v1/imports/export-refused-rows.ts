import { createRoute } from '@hono/zod-openapi';
import { loadCampaignFor, showImport } from '@stampcard/core';
import type { App } from '../../../env';
import { exportResponse, refusedRowsExport } from '../../../lib/exports';
import { EXPORT_TERMS, errorResponses, exportFileResponse } from '../../../lib/schemas';
import { importParams } from './schemas';

const route = createRoute({
  method: 'get',
  operationId: 'exportRefusedRows',
  path: '/v1/campaign/{id}/participants/imports/{importId}/refused-rows',
  summary: 'Every refused row of an import, as a CSV or NDJSON file',
  description: `The rows the import refused, in file order: \`row\` (1 is the first row after the header), \`reason\`, \`message\`, then the row's cells under the file's own columns, so the file can be fixed and imported again. ${EXPORT_TERMS}`,
  tags: ['Imports'],
  request: { params: importParams },
  responses: { ...exportFileResponse('The refused rows, streamed'), ...errorResponses },
});

export const registerExportRefusedRows = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, importId } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    const found = await showImport(ctx, campaign.id, importId);
    return exportResponse(c, refusedRowsExport(found.import)) as never;
  });
