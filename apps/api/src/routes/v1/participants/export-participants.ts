import { createRoute, z } from '@hono/zod-openapi';
import { loadCampaignFor, PARTICIPANT_EXPORT_COLUMNS } from '@stampcard/core';
import type { App } from '../../../env';
import { exportResponse, participantsExport } from '../../../lib/exports';
import { campaignIdParam, EXPORT_TERMS, errorResponses, exportFileResponse } from '../../../lib/schemas';

const route = createRoute({
  method: 'get',
  operationId: 'exportParticipants',
  path: '/v1/campaign/{id}/participants/export',
  summary: 'Every participant of a campaign, as a CSV or NDJSON file',
  description: `Every participant as of the moment the export starts (one consistent snapshot: participants added or changed while it streams are not in it, none is in it twice), by id. Columns, in order: ${PARTICIPANT_EXPORT_COLUMNS.map((c) => `\`${c}\``).join(', ')}: the Participant's fields, \`createdAt\` as an ISO 8601 time. ${EXPORT_TERMS}`,
  tags: ['Participants'],
  request: { params: z.object({ id: campaignIdParam }) },
  responses: { ...exportFileResponse('The participants, streamed'), ...errorResponses },
});

export const registerExportParticipants = (app: App) =>
  app.openapi(route, async (c) => {
    const campaign = await loadCampaignFor(c.get('ctx'), c.get('principal'), c.req.valid('param').id);
    return exportResponse(c, participantsExport(campaign.id)) as never;
  });
