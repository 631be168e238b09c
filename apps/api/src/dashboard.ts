import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import { clip, validationError } from '@stampcard/core';
import type { Queues } from '@stampcard/jobs';
import { Hono, type MiddlewareHandler } from 'hono';
import type { AppEnv } from './env';
import { errorResponse } from './errors';

export const QUEUE_DASHBOARD_PATH = '/admin/queues';

/**
 * Everything the page loads comes from this service: scripts, styles, fonts, images, API calls. Inline styles
 * stay allowed (Bull Board's loading screen and its components use them); no page may frame it.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** `host[:port]` as a browser writes it in an origin (default ports left out), or null if malformed. */
function hostOf(url: string): string | null {
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
}

/**
 * Why a request comes from another site, or null when it does not. The browser's `Origin` decides when it
 * sent one (on every cross-origin request, and on same-origin POST, PUT, PATCH and DELETE); else
 * `Sec-Fetch-Site`, else `Referer`. A request with none of them is no browser's cross-site request (curl, a
 * script with the token) and goes on to the token check like any other.
 */
export function crossSiteReason(c: Parameters<MiddlewareHandler<AppEnv>>[0]): string | null {
  const own = hostOf(`http://${c.req.header('host') ?? ''}`);
  const origin = c.req.header('origin');
  if (origin !== undefined) {
    return own !== null && hostOf(origin) === own ? null : `Origin ${clip(origin, 100)}`;
  }
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined)
    return site === 'same-origin' || site === 'none' ? null : `Sec-Fetch-Site ${clip(site, 20)}`;
  const referer = c.req.header('referer');
  if (referer !== undefined && (own === null || hostOf(referer) !== own)) return 'a Referer of another site';
  return null;
}

/** The headers of every operator page: its content policy, no framing by anyone, no sniffing, no referrer out. */
export function pageHeaders(c: Parameters<MiddlewareHandler<AppEnv>>[0], policy: string): void {
  c.header('Content-Security-Policy', policy);
  c.header('X-Frame-Options', 'DENY');
  c.header('X-Content-Type-Options', 'nosniff');
  c.header('Referrer-Policy', 'same-origin');
}

/**
 * In front of the dashboard, before the operator token is checked. Browsers keep Basic credentials and send
 * them with requests any page makes, and Bull Board reads a `text/plain` form body as JSON: so a request
 * that changes something must come from the dashboard's own pages (refused 403 otherwise), and a body must
 * be JSON (400). Every answer forbids framing and loading from other hosts; the page's stylesheet from a
 * font CDN is replaced by the fonts this service serves itself.
 */
export const dashboardGuard: MiddlewareHandler<AppEnv> = async (c, next) => {
  pageHeaders(c, CONTENT_SECURITY_POLICY);
  if (STATE_CHANGING.has(c.req.method)) {
    const reason = crossSiteReason(c);
    if (reason) {
      return errorResponse(
        c,
        'NOT_AUTHORIZED',
        `The queue dashboard changes nothing for another site (${reason}): use the dashboard's own page, or send the operator token without Origin`,
      );
    }
    const type = c.req.header('content-type');
    // A body is JSON or absent: a form's text/plain (or a typeless blob) is exactly what another site can send.
    const hasBody =
      type !== undefined ||
      Number(c.req.header('content-length') ?? 0) > 0 ||
      c.req.header('transfer-encoding') !== undefined;
    if (hasBody && !/^application\/json\s*(;|$)/i.test(type ?? '')) {
      const { message, details } = validationError(
        [
          {
            location: 'headers',
            param: 'content-type',
            value: clip(type ?? '', 64),
            msg: 'must be application/json',
          },
        ],
        'The queue dashboard takes JSON bodies only',
      );
      return errorResponse(c, 'VALIDATION_ERROR', message, details);
    }
  }
  await next();
  if (c.res.status === 200 && c.res.headers.get('content-type')?.startsWith('text/html')) {
    c.res = new Response(localPage(await c.res.text()), c.res);
  }
  return undefined;
};

const BOARD_TITLE = 'Stampcard queues';

/**
 * The board's page without links to other hosts (its font stylesheet), with the local fonts instead, and a
 * top-level heading for screen readers (Bull Board's UI has none; axe-core's `page-has-heading-one`).
 */
export function localPage(html: string): string {
  const heading = `<h1 style="position:absolute;width:1px;height:1px;margin:-1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap">${BOARD_TITLE}</h1>`;
  return html
    .replace(/<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>\s*/gi, '')
    .replace('</head>', `<link href="${QUEUE_DASHBOARD_PATH}/fonts/fonts.css" rel="stylesheet">\n</head>`)
    .replace(/<body\b[^>]*>/, (body) => `${body}\n${heading}`);
}

/** The faces Bull Board's stylesheet names (`--font-sans`, `--font-mono`), at the weights it uses. */
const FONT_FACES = [
  '@fontsource/ibm-plex-sans/400.css',
  '@fontsource/ibm-plex-sans/500.css',
  '@fontsource/ibm-plex-sans/600.css',
  '@fontsource/ibm-plex-mono/400.css',
  '@fontsource/ibm-plex-mono/500.css',
];

type Fonts = { css: string; files: Map<string, string> };
let fonts: Promise<Fonts> | undefined;

/** One stylesheet for every face, its `url()`s pointing here, and the font files it may name. */
async function loadFonts(): Promise<Fonts> {
  const require = createRequire(import.meta.url);
  const files = new Map<string, string>();
  const sheets = await Promise.all(
    FONT_FACES.map(async (face) => {
      const path = require.resolve(face);
      const css = await readFile(path, 'utf8');
      return css.replace(/url\(\.\/files\/([a-z0-9-]+\.woff2?)\)/g, (_, name: string) => {
        files.set(name, join(dirname(path), 'files', name));
        return `url(${QUEUE_DASHBOARD_PATH}/fonts/${name})`;
      });
    }),
  );
  return { css: sheets.join('\n'), files };
}

/** Bull Board over the service's queues, with its fonts served from here; mounted behind the guard and the token. */
export function queueDashboard(queues: Queues) {
  const adapter = new HonoAdapter(serveStatic);
  adapter.setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: queues.all.map((q) => new BullMQAdapter(q)),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: BOARD_TITLE } },
  });
  const app = new Hono<AppEnv>();
  app.get('/fonts/:file', async (c) => {
    fonts ??= loadFonts();
    const { css, files } = await fonts;
    const file = c.req.param('file');
    const cache = { 'Cache-Control': 'private, max-age=86400' };
    if (file === 'fonts.css')
      return c.body(css, 200, { ...cache, 'Content-Type': 'text/css; charset=utf-8' });
    const path = files.get(file);
    if (!path) return errorResponse(c, 'NOT_FOUND', `No font ${clip(file, 100)}`);
    const type = file.endsWith('.woff2') ? 'font/woff2' : 'font/woff';
    return c.body(await readFile(path), 200, { ...cache, 'Content-Type': type });
  });
  app.route('/', adapter.registerPlugin());
  return app;
}
