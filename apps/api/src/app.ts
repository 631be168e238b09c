import { OpenAPIHono } from '@hono/zod-openapi';
import { safeError } from '@stampcard/config';
import {
  type AfterCommit,
  type Created,
  clip,
  createAcceptBatcher,
  IMPORT_MAX_BYTES,
  microBatch,
  type TriggerOptions,
  validationError,
} from '@stampcard/core';
import { enqueueCommitted } from '@stampcard/jobs';
import { currentTraceparent } from '@stampcard/telemetry';
import { setMetric, timing } from 'hono/timing';
import type { H, RouterRoute } from 'hono/types';
import { operatorConsole } from './console/routes';
import { CONSOLE_PATH } from './console/views';
import { dashboardGuard, QUEUE_DASHBOARD_PATH, queueDashboard } from './dashboard';
import { registerDocs } from './docs/index';
import type { AppEnv, Deps } from './env';
import { errorResponse, handleError, validationHook } from './errors';
import { allowedMethods } from './lib/allowed-methods';
import { isImportUpload } from './lib/imports';
import { BODY_LIMITS } from './lib/parse-body';
import { createReadiness } from './lib/readiness';
import { SplitRouter } from './lib/router';
import { createSlots } from './lib/slots';
import { apiKeyActor, operatorActor } from './middleware/actor';
import { apiKeyAuth } from './middleware/auth';
import { limitBody, limitStatedBody } from './middleware/body-limit';
import { requestDeadline } from './middleware/deadline';
import { edgeLimits } from './middleware/edge-limits';
import { idempotency } from './middleware/idempotency';
import { boundRequestsInFlight } from './middleware/in-flight';
import { operatorAuth } from './middleware/operator-auth';
import { requestLog } from './middleware/request-log';
import { requestMetrics } from './middleware/request-metrics';
import { requestTrace } from './middleware/request-trace';
import { urlGuard } from './middleware/url-guard';
import { PORTAL_PATH } from './portal/link';
import { businessPortal } from './portal/routes';
import { registerAdmin } from './routes/admin/index';
import { registerGetHealth } from './routes/health/get-health';
import { registerGetLiveness } from './routes/health/get-livez';
import { registerGetReadiness } from './routes/health/get-readiness';
import { registerGetServing } from './routes/health/get-readyz';
import { registerGetMetrics } from './routes/metrics/get-metrics';
import { registerV1 } from './routes/v1/index';

/** The HTTP app, built from injected services: no globals, so tests build as many as they like. */
export function createApp(deps: Deps) {
  // The queue dashboard's and the console's routes are beyond Hono's fastest router: matched apart, so that
  // the API's own requests are matched by it (see SplitRouter).
  const router = new SplitRouter<[H, RouterRoute]>([QUEUE_DASHBOARD_PATH, CONSOLE_PATH]);
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook, router });
  // Group commit: concurrent triggers share one ledger insert, and what concurrent requests commit shares one
  // addBulk per queue (the after-commit hand-off of every write, see `Ctx.afterCommit`).
  const accepts = createAcceptBatcher(deps.db);
  const enqueue = enqueueCommitted(deps.queues, deps.logger);
  // Each write's hand-off keeps its request's trace: its actions' and events' jobs carry it, each its own.
  const handOffs = microBatch<{ created: Created; trace: string | null }, void>({
    // The turn after a commit, not on a timer that would let a caller's next request in first; under load, what
    // commits while two addBulks run gathers for the next one.
    maxWaitMs: 0,
    run: async (list) => {
      const traces = new Map<string, string>();
      for (const { created, trace } of list) {
        if (trace) for (const id of [...created.actionIds, ...created.eventIds]) traces.set(id, trace);
      }
      await enqueue(
        {
          eventIds: list.flatMap((c) => c.created.eventIds),
          actionIds: list.flatMap((c) => c.created.actionIds),
          erasureSteps: list.flatMap((c) => c.created.erasureSteps),
          importSteps: list.flatMap((c) => c.created.importSteps),
        },
        traces,
      );
      return list.map(() => undefined);
    },
  });
  // A request's answer waits for its COMMIT, not for its jobs: the rows are the record, the jobs only wake the
  // worker and the dispatcher sooner. Queued right after (the next turn, with every other request's), and
  // what fails to queue (Redis down, the process killed first) the relay and the sweep find; `drain` on
  // shutdown waits for what is under way.
  const afterCommit: AfterCommit = (created) => {
    handOffs
      .submit({ created, trace: deps.tracing ? currentTraceparent() : null })
      .catch((err) => deps.logger.warn({ errorClass: safeError(err).type }, 'hand-off failed'));
    return Promise.resolve();
  };
  const trigger: TriggerOptions = {
    accept: accepts.accept,
    maxWaitMs: deps.maxWaitMs,
    applied: deps.applied,
  };

  const exportSlots = createSlots(deps.exportConcurrency ?? 2);
  const importSlots = createSlots(deps.importConcurrency ?? 2);
  // First, so that its total is the whole request's.
  if (deps.serverTiming) app.use('*', timing({ crossOrigin: false }));
  app.use('*', (c, next) => {
    c.set('deps', deps);
    c.set('exportSlots', exportSlots);
    c.set('importSlots', importSlots);
    const spans = deps.serverTiming ? (stage: string, ms: number) => setMetric(c, stage, ms) : undefined;
    // The request's own context, every field named now: the deadline and the actor fill theirs in place, so each
    // request makes one object of one shape (core's reads of it stay monomorphic), not a copy at each step.
    c.set('ctx', {
      db: deps.db,
      clock: deps.clock,
      cache: deps.cache,
      afterCommit,
      spans,
      signal: undefined,
      commit: undefined,
      actor: undefined,
    });
    c.set('trigger', trigger);
    return next();
  });
  app.use('*', requestLog);
  app.use('*', requestMetrics);
  if (deps.tracing) app.use('*', requestTrace);
  app.use('*', urlGuard);
  const bodyLimit = limitBody(BODY_LIMITS.maxBytes, (c) => {
    const { message, details } = validationError(
      [{ location: 'body', param: '', value: null, msg: 'body is larger than 1 MiB' }],
      'Request body is larger than 1 MiB',
    );
    // The rest of the body is not read, so this connection cannot carry another request: say so, or a
    // keep-alive client would send its next request on a socket about to close.
    return errorResponse(c, 'VALIDATION_ERROR', message, details, { Connection: 'close' });
  });
  // A CSV import's file is the one body allowed past 1 MiB: streamed into PostgreSQL, never held whole, and
  // counted as it streams by the import itself (`storeUpload`).
  const uploadLimit = limitStatedBody(IMPORT_MAX_BYTES, (c) => {
    const mib = IMPORT_MAX_BYTES / 1024 / 1024;
    const { message, details } = validationError(
      [{ location: 'body', param: '', value: null, msg: `the file is larger than ${mib} MiB` }],
      `The import file is larger than ${mib} MiB`,
    );
    return errorResponse(c, 'VALIDATION_ERROR', message, details, { Connection: 'close' });
  });
  app.use('*', (c, next) => (isImportUpload(c) ? uploadLimit(c, next) : bodyLimit(c, next)));

  // Before the /v1 middleware: the document and its page need no API key, and answer from memory.
  registerDocs(app);
  // Every page and call that reads a store answers within its budget, the console's and the portal's too; past
  // the requests in flight this process takes, at once.
  const inFlight = boundRequestsInFlight(deps.maxRequestsInFlight ?? 512);
  for (const path of ['/v1/*', '/admin/*', CONSOLE_PATH, `${CONSOLE_PATH}/*`, `${PORTAL_PATH}/*`]) {
    app.use(path, inFlight, requestDeadline);
  }

  registerGetHealth(app);
  registerGetLiveness(app);
  // Unauthenticated: one shared check a second at most, whatever the callers (see createReadiness).
  const readiness = createReadiness(deps);
  registerGetReadiness(app, readiness);
  registerGetServing(app, readiness);
  // Its own bearer token (METRICS_TOKEN), no API key: before the /v1 middleware, outside the request deadline.
  registerGetMetrics(app);

  app.use('/v1/*', deps.limits ? edgeLimits(deps.limits, deps.trustedProxyHops) : apiKeyAuth);
  // From here, what a request changes is recorded in the audit log as its API key's.
  app.use('/v1/*', apiKeyActor);
  for (const middleware of deps.extraMiddleware ?? []) app.use('/v1/*', middleware);
  // After authentication and the limits: a refused request claims no key. Keys are the API key's own.
  app.use('/v1/*', idempotency({ scope: (c) => `key:${c.get('principal').apiKeyId}`, skip: isImportUpload }));
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
  app.use('/admin/v1/*', operatorActor);
  app.use('/admin/v1/*', idempotency({ scope: () => 'operator', skip: isImportUpload }));
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
  // On shutdown, after the last request: the hand-offs still under way reach Redis before it is closed.
  return Object.assign(app, { drainHandOffs: () => handOffs.drain() });
}
