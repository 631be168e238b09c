/** @jsxImportSource hono/jsx */
import {
  clip,
  DomainError,
  isSignedOut,
  operationsOverview,
  recordSignOut,
  retentionOverview,
} from '@stampcard/core';
import { DEFAULT_RETENTION } from '@stampcard/db';
import { queueCounts } from '@stampcard/jobs';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { crossSiteReason, pageHeaders, STATE_CHANGING } from '../dashboard';
import type { AppEnv } from '../env';
import { errorResponse } from '../errors';
import { sameSecret } from '../lib/same-secret';
import { consoleActor } from '../middleware/actor';
import { consoleAsset } from './assets';
import { registerImports } from './imports';
import { formListOf, formOf, idOf, pagePolicy } from './lib';
import { registerParticipants } from './participants';
import { registerProgramSettings } from './program-settings';
import { registerPrograms } from './programs';
import { registerReviews } from './reviews';
import {
  csrfMatches,
  csrfToken,
  newSession,
  readSession,
  SESSION_COOKIE,
  SESSION_TTL_SECONDS,
} from './session';
import { registerTeam } from './team';
import {
  CONSOLE_PATH,
  CSRF_FIELD,
  Layout,
  OverviewFragment,
  OverviewPage,
  SIGN_IN_PATH,
  SignInPage,
} from './views';
import { registerWebhookPages } from './webhooks/routes';

/** The console's policy: its pages may not be framed by any page. */
const CONTENT_SECURITY_POLICY = pagePolicy("frame-ancestors 'none'");

type C = Context<AppEnv>;

/** Whether htmx (or another script) asked, rather than the browser navigating: it gets a 401, not a redirect. */
const fromScript = (c: C) => c.req.header('hx-request') === 'true' || c.req.method !== 'GET';

/**
 * Every console answer: the page headers (policy, no framing), never cached; a state-changing request from
 * another site refused 403 before anything else (the queue dashboard's check, `crossSiteReason`).
 */
const guard: MiddlewareHandler<AppEnv> = async (c, next) => {
  pageHeaders(c, CONTENT_SECURITY_POLICY);
  c.header('Cache-Control', 'no-store');
  if (STATE_CHANGING.has(c.req.method)) {
    const reason = crossSiteReason(c);
    if (reason) {
      return errorResponse(
        c,
        'NOT_AUTHORIZED',
        `The console changes nothing for another site (${reason}): use the console's own pages`,
      );
    }
  }
  await next();
  return undefined;
};

/** The request's session: its cookie's, valid, unexpired, and not signed out; else null. */
async function currentSession(c: C) {
  const { operatorToken, clock } = c.get('deps');
  const session = readSession(getCookie(c, SESSION_COOKIE), operatorToken, clock.now());
  return session && !(await isSignedOut(c.get('ctx'), session.id)) ? session : null;
}

/**
 * The session cookie's signed session, or: a redirect to the sign-in page for a page the browser navigates
 * to, a 401 for htmx and form posts (with `HX-Redirect`, which htmx follows to the sign-in page). A
 * state-changing request must also carry the session's CSRF token (form field `_csrf` or `X-CSRF-Token`).
 */
const requireSession: MiddlewareHandler<AppEnv> = async (c, next) => {
  const token = c.get('deps').operatorToken;
  const session = await currentSession(c);
  if (!session) {
    if (!fromScript(c)) return c.redirect(SIGN_IN_PATH, 303);
    return errorResponse(
      c,
      'AUTHENTICATION_REQUIRED',
      'Sign in to the console first: your session is missing or has expired',
      {},
      { 'HX-Redirect': SIGN_IN_PATH },
    );
  }
  if (STATE_CHANGING.has(c.req.method)) {
    const form = await formOf(c);
    const given = c.req.header('x-csrf-token') ?? form[CSRF_FIELD];
    if (!csrfMatches(given, session, token)) {
      return errorResponse(
        c,
        'NOT_AUTHORIZED',
        "The form is missing its CSRF token, or it is not this session's: reload the page and try again",
      );
    }
  }
  c.set('consoleSession', session);
  await next();
  return undefined;
};

const cookieOptions = (c: C) =>
  ({
    path: CONSOLE_PATH,
    httpOnly: true,
    secure: c.get('deps').secureCookies ?? true,
    sameSite: 'Strict',
  }) as const;

/**
 * The overview's figures. PostgreSQL's are the page; the queues' come from Redis, and a Redis that does not
 * answer leaves their table saying so (null) rather than failing the page an operator opens to see what is wrong.
 */
async function overviewData(c: C) {
  const [queues, ops, retention] = await Promise.all([
    queueCounts(c.get('deps').queues).catch((err: unknown) => {
      if (err instanceof DomainError && err.code === 'UNAVAILABLE') return null;
      throw err;
    }),
    operationsOverview(c.get('ctx')),
    retentionOverview(c.get('ctx'), c.get('deps').retention ?? DEFAULT_RETENTION),
  ]);
  return { queues, ops, retention };
}

const csrfOf = (c: C) => csrfToken(c.get('consoleSession')!, c.get('deps').operatorToken);

/** The operator console under `/console`: sign-in, sign-out, the overview and its files. */
export function operatorConsole() {
  const app = new Hono<AppEnv>();
  app.use('*', guard);

  app.get('/assets/:file', async (c) => {
    const asset = await consoleAsset(c.req.param('file'));
    if (!asset) return errorResponse(c, 'NOT_FOUND', `No console file ${clip(c.req.param('file'), 100)}`);
    return c.body(asset.body, 200, { 'Content-Type': asset.type, 'Cache-Control': 'private, max-age=3600' });
  });

  app.get('/sign-in', async (c) => {
    if (await currentSession(c)) return c.redirect(CONSOLE_PATH, 303);
    return c.html(<SignInPage />);
  });

  // No session to tie a CSRF token to yet: a sign-in another site posts is refused by the guard's Origin and
  // Sec-Fetch-Site check, and its cookie could not be sent back to that site anyway (SameSite=Strict).
  app.post('/sign-in', async (c) => {
    const { operatorToken, clock } = c.get('deps');
    const given = (await formOf(c)).token ?? '';
    if (given === '') return c.html(<SignInPage error="Enter the operator token." />, 400);
    if (!sameSecret(given, operatorToken)) {
      return c.html(<SignInPage error="That is not the operator token." />, 401);
    }
    const { value } = newSession(operatorToken, clock.now());
    setCookie(c, SESSION_COOKIE, value, { ...cookieOptions(c), maxAge: SESSION_TTL_SECONDS });
    return c.redirect(CONSOLE_PATH, 303);
  });

  app.use('*', requireSession);
  app.use('*', consoleActor);

  app.post('/sign-out', async (c) => {
    const session = c.get('consoleSession')!;
    await recordSignOut(c.get('ctx'), session.id, new Date(session.expiresAt));
    deleteCookie(c, SESSION_COOKIE, cookieOptions(c));
    return c.redirect(SIGN_IN_PATH, 303);
  });

  app.get('/', async (c) => c.html(<OverviewPage {...(await overviewData(c))} csrf={csrfOf(c)} />));

  app.get('/overview', async (c) => c.html(<OverviewFragment {...(await overviewData(c))} />));

  const helpers = { formOf, formListOf, csrfOf };
  registerTeam(app, helpers);
  registerReviews(app, helpers);
  registerPrograms(app, helpers);
  registerProgramSettings(app, helpers);
  registerParticipants(app, helpers);
  registerImports(app, helpers);
  registerWebhookPages(app, {
    ...helpers,
    pagesOf: (c) => ({
      base: `${CONSOLE_PATH}/webhooks`,
      operator: true,
      accountId: idOf(c.req.query('accountId')),
      csrf: csrfOf(c),
      Frame: ({ title, children }) => (
        <Layout title={title} current="webhooks" csrf={csrfOf(c)}>
          {children}
        </Layout>
      ),
    }),
  });

  return app;
}
