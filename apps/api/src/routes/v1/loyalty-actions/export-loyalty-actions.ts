import { createRoute, z } from '@hono/zod-openapi';
import { LOYALTY_ACTION_EXPORT_COLUMNS, loadCampaignFor } from '@stampcard/core';
import { ACTION_STATUSES } from '@stampcard/db';
import type { App } from '../../../env';
import { exportResponse, loyaltyActionsExport } from '../../../lib/exports';
import { campaignIdParam, EXPORT_TERMS, errorResponses, exportFileResponse } from '../../../lib/schemas';

const msTime = z.coerce.number().int().min(0).max(8_640_000_000_000_000);

const route = createRoute({
  method: 'get',
  operationId: 'exportLoyaltyActions',
  path: '/v1/campaign/{id}/loyalty-actions/export',
  summary: "A campaign's loyalty actions, as a CSV or NDJSON file",
  description: `The campaign's ledger as of the moment the export starts (one consistent snapshot), oldest first: the actions accepted at or after \`from\` and before \`to\` (UTC ms; both optional), with \`status\` if given. Columns, in order: ${LOYALTY_ACTION_EXPORT_COLUMNS.map((c) => `\`${c}\``).join(', ')}: the LoyaltyAction's fields, its participant's email (empty once the participant is deleted), the ids of the rewards it unlocked, and its times as ISO 8601. ${EXPORT_TERMS}`,
  tags: ['Loyalty actions'],
  request: {
    params: z.object({ id: campaignIdParam }),
    query: z.strictObject({
      from: msTime.optional().openapi({ description: 'Accepted at or after (UTC ms)' }),
      to: msTime.optional().openapi({ description: 'Accepted before (UTC ms)' }),
      status: z.enum(ACTION_STATUSES).optional(),
    }),
  },
  responses: { ...exportFileResponse('The loyalty actions, streamed'), ...errorResponses },
});

export const registerExportLoyaltyActions = (app: App) =>
  app.openapi(route, async (c) => {
    const campaign = await loadCampaignFor(c.get('ctx'), c.get('principal'), c.req.valid('param').id);
    return exportResponse(c, loyaltyActionsExport(campaign.id, c.req.valid('query'))) as never;
  });
