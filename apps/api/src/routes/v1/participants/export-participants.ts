import { createRoute, z } from '@hono/zod-openapi';
import { loadCampaignFor, PARTICIPANT_EXPORT_COLUMNS } from '@stampcard/core';
import type { App } from '../../../env';
import { participantsExport } from '../../../lib/exports';
import { campaignIdParam, errorResponses } from '../../../lib/schemas';

const route = createRoute({
  method: 'get',
  operationId: 'exportParticipants',
  path: '/v1/campaign/{id}/participants/export',
  summary: 'Every participant of a campaign, as a CSV or NDJSON file',
  description: `Every participant as of the moment the export starts (one consistent snapshot: participants added or changed while it streams are not in it, none is in it twice), by id, streamed: its memory does not grow with the campaign. CSV (RFC 4180, a header line, \`\\r\\n\` between records) by default; NDJSON (one JSON object a line) with \`Accept: application/x-ndjson\`. Columns, in order: ${PARTICIPANT_EXPORT_COLUMNS.map((c) => `\`${c}\``).join(', ')}: the Participant's fields, \`createdAt\` as an ISO 8601 time, \`metadata\` and \`loyaltyActionCountsPerReward\` as JSON objects (JSON text in a CSV cell), booleans \`true\`/\`false\`, null an empty cell. Values are as stored: a spreadsheet may read a cell that starts with \`=\`, \`+\`, \`-\` or \`@\` as a formula, so import the file as text. A download that fails midway is cut off (the connection breaks, the body does not end): never take a partial file for a whole one. At most \`EXPORT_CONCURRENCY\` (2 by default) run at once on an API process (429 \`RATE_LIMIT\`, \`policyName\` \`CONCURRENCY\`, with \`Retry-After\`); a reader that stops reading for 10 s loses its export.`,
  tags: ['Participants'],
  request: { params: z.object({ id: campaignIdParam }) },
  responses: {
    200: {
      description: 'The participants, streamed',
      content: {
        'text/csv': {
          schema: z.string().openapi({ description: 'A header line, then one record a participant' }),
        },
        'application/x-ndjson': { schema: z.string().openapi({ description: 'One JSON object a line' }) },
      },
    },
    ...errorResponses,
  },
});

export const registerExportParticipants = (app: App) =>
  app.openapi(route, async (c) => {
    const campaign = await loadCampaignFor(c.get('ctx'), c.get('principal'), c.req.valid('param').id);
    return participantsExport(c, campaign.id) as never;
  });
