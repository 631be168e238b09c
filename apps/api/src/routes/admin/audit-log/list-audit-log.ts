import { createRoute, z } from '@hono/zod-openapi';
import { listAuditLog } from '@stampcard/core';
import type { App } from '../../../env';
import { readLagging } from '../../../lib/replica';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { AUDIT_TERMS, AuditPage, auditLogQuery } from '../../v1/audit-log/schemas';

const route = createRoute({
  method: 'get',
  operationId: 'adminListAuditLog',
  path: '/admin/v1/audit-log',
  summary: 'The audit log of every account',
  description: `Every account's log, or one's with \`accountId\`. ${AUDIT_TERMS}`,
  tags: ['Operator: audit log'],
  request: {
    query: z.strictObject({
      accountId: z.string().min(1).max(64).optional().openapi({ description: "One account's entries" }),
      ...auditLogQuery,
    }),
  },
  responses: { ...okResponse('`{ entries, limit, nextId, more }`', AuditPage), ...operatorErrorResponses },
});

export const registerAdminListAuditLog = (app: App) =>
  app.openapi(route, async (c) => {
    const filter = c.req.valid('query');
    return c.json(await readLagging(c, (reads) => listAuditLog(reads, filter)), 200);
  });
