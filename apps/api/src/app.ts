import { OpenAPIHono } from '@hono/zod-openapi';
import {
  type AfterCommit,
  type Created,
  clip,
  createAcceptBatcher,
  microBatch,
  type TriggerOptions,
  validationError,
} from '@stampcard/core';
import { enqueueCommitted } from '@stampcard/jobs';
import { operatorConsole } from './console/routes';
import { CONSOLE_PATH } from './console/views';
import { dashboardGuard, QUEUE_DASHBOARD_PATH, queueDashboard } from './dashboard';
import { registerDocs } from './docs/index';
import type { AppEnv, Deps } from './env';
import { errorResponse, handleError, validationHook } from './errors';
import { allowedMethods } from './lib/allowed-methods';
import { createExportSlots } from './lib/export-slots';
import { BODY_LIMITS } from './lib/parse-body';
import { createReadiness } from './lib/readiness';
import { apiKeyAuth } from './middleware/auth';
import { limitBody } from './middleware/body-limit';
import { requestDeadline } from './middleware/deadline';
import { edgeLimits } from './middleware/edge-limits';
import { idempotency } from './middleware/idempotency';
import { operatorAuth } from './middleware/operator-auth';
import { requestLog } from './middleware/request-log';
import { urlGuard } from './middleware/url-guard';
import { PORTAL_PATH } from './portal/link';
import { businessPortal } from './portal/routes';
import { registerAdmin } from './routes/admin/index';
import { registerGetHealth } from './routes/health/get-health';
import { registerGetReadiness } from './routes/health/get-readiness';
import { registerV1 } from './routes/v1/index';

/** The HTTP app, built from injected services: no globals, so tests build as many as they like. */
export function createApp(deps: Deps) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  // Group commit: concurrent triggers share one ledger insert, and what concurrent requests commit shares one
  // addBulk per queue (the after-commit hand-off of every write, see `Ctx.afterCommit`).
  const accepts = createAcceptBatcher(deps.db);
  const enqueue = enqueueCommitted(deps.queues, deps.logger);
  const handOffs = microBatch<Created, void>({
    run: async (list) => {
      await enqueue({
        eventIds: list.flatMap((c) => c.eventIds),
        actionIds: list.flatMap((c) => c.actionIds),
        erasureSteps: list.flatMap((c) => c.erasureSteps),
      });
      return list.map(() => undefined);
    },
  });
  const afterCommit: AfterCommit = (created) => handOffs.submit(created);
  const trigger: TriggerOptions = {
    accept: accepts.accept,
    maxWaitMs: deps.maxWaitMs,
    applied: deps.applied,
  };

  const exportSlots = createExportSlots(deps.exportConcurrency ?? 2);
  app.use('*', async (c, next) => {
    c.set('deps', deps);
    c.set('exportSlots', exportSlots);
    c.set('ctx', { db: deps.db, clock: deps.clock, cache: deps.cache, afterCommit });
    c.set('trigger', trigger);
    await next();
  });
  app.use('*', requestLog);
  app.use('*', urlGuard);
  app.use(
    '*',
    limitBody(BODY_LIMITS.maxBytes, (c) => {
      const { message, details } = validationError(
        [{ location: 'body', param: '', value: null, msg: 'body is larger than 1 MiB' }],
        'Request body is larger than 1 MiB',
      );
      // The rest of the body is not read, so this connection cannot carry another request: say so, or a
      // keep-alive client would send its next request on a socket about to close.
      return errorResponse(c, 'VALIDATION_ERROR', message, details, { Connection: 'close' });
    }),
  );

  // Before the /v1 middleware: the document and its page need no API key, and answer from memory.
  registerDocs(app);
  // Every page and call that reads a store answers within its budget, the console's and the portal's too.
  for (const path of ['/v1/*', '/admin/*', CONSOLE_PATH, `${CONSOLE_PATH}/*`, `${PORTAL_PATH}/*`]) {
    app.use(path, requestDeadline);
  }

  registerGetHealth(app);
  // Unauthenticated: one shared check a second at most, whatever the callers (see createReadiness).
  registerGetReadiness(app, createReadiness(deps));

  app.use('/v1/*', deps.limits ? edgeLimits(deps.limits, deps.trustedProxyHops) : apiKeyAuth);
  for (const middleware of deps.extraMiddleware ?? []) app.use('/v1/*', middleware);
  // After authentication and the limits: a refused request claims no key. Keys are the API key's own.
  app.use('/v1/*', idempotency({ scope: (c) => `key:${c.get('principal').apiKeyId}` }));
  registerV1(app);

  // The guard first: a cross-site request is refused before its cached Basic credentials are even read.
  app.use(`${QUEUE_DASHBOARD_PATH}/*`, dashboardGuard);
  app.use(QUEUE_DASHBOARD_PATH, dashboardGuard);
  app.use(`${QUEUE_DASHBOARD_PATH}/*`, operatorAuth({ basic: true }));
  app.use(QUEUE_DASHBOARD_PATH, operatorAuth({ basic: true }));
  app.route(QUEUE_DASHBOARD_PATH, queueDashboard(deps.queues));
  // The console signs operators in itself (a session cookie, see console/routes).
  app.route(CONSOLE_PATH, operatorConsole());
  // A business's portal: opened by a signed link (see portal/link), never by a cookie.
  app.route(PORTAL_PATH, businessPortal());
  app.use('/admin/v1/*', operatorAuth());
  app.use('/admin/v1/*', idempotency({ scope: () => 'operator' }));
  registerAdmin(app);

  // A known path with another method is a 405 naming the methods it takes; OPTIONS answers them; 404 is for a
  // path no route has. Either comes after the path's middleware (authentication, limits), as any answer does.
  const allowed = allowedMethods(app);
  app.notFound((c) => {
    const methods = allowed(c.req.path);
    const path = clip(c.req.path, 200);
    if (methods.length === 0) return errorResponse(c, 'NOT_FOUND', `No route for ${c.req.method} ${path}`);
    const allow = methods.join(', ');
    if (c.req.method === 'OPTIONS') return c.body(null, 204, { Allow: allow });
    return errorResponse(
      c,
      'METHOD_NOT_ALLOWED',
      `${clip(c.req.method, 20)} is not allowed on ${path}: it takes ${allow}`,
      { allowedMethods: methods },
      { Allow: allow },
    );
  });
  app.onError(handleError);
  return app;
}
