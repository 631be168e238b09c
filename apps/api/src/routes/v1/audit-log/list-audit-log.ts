import { createRoute, z } from '@hono/zod-openapi';
import { listAuditLog, notAuthorized } from '@stampcard/core';
import type { App } from '../../../env';
import { readLagging } from '../../../lib/replica';
import { errorResponses, okResponse } from '../../../lib/schemas';
import { AUDIT_TERMS, AuditPage, auditLogQuery } from './schemas';

const route = createRoute({
  method: 'get',
  operationId: 'listAuditLog',
  path: '/v1/audit-log',
  summary: "The account's audit log",
  description: `The API key's account's own log; an ADMIN key only (403 otherwise). ${AUDIT_TERMS}`,
  tags: ['Audit log'],
  request: { query: z.strictObject(auditLogQuery) },
  responses: { ...okResponse('`{ entries, limit, nextId, more }`', AuditPage), ...errorResponses },
});

export const registerListAuditLog = (app: App) =>
  app.openapi(route, async (c) => {
    const principal = c.get('principal');
    if (principal.role !== 'ADMIN') throw notAuthorized("Only an ADMIN key reads the account's audit log");
    const filter = { ...c.req.valid('query'), accountId: principal.accountId };
    return c.json(await readLagging(c, (reads) => listAuditLog(reads, filter)), 200);
  });
