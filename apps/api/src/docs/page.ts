import { createHash } from 'node:crypto';
import { SwaggerUI } from '@hono/swagger-ui';
import { DOCS_PATH, ERRORS_ANCHOR, OPENAPI_PATH } from '../lib/docs-paths';
import { ERROR_CODES, ERROR_DESCRIPTIONS } from '../lib/error-schema';
import { HTTP_ERRORS } from '../lib/error-status';
import { ASSET_BASE } from './assets';

/**
 * The docs page: Swagger UI over the served document, then the error catalogue as HTML. Its scripts are
 * Swagger UI's bundle (served here, see `assets.ts`) and one inline start-up script, allowed by its hash.
 */

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`).replace(/`([^`]+)`/g, '<code>$1</code>');

const EXAMPLE_BODY = `{
  "name": "ValidationError",
  "code": "VALIDATION_ERROR",
  "message": "participantEmail: must be an email address",
  "status": 400,
  "supportUrl": "https://api.example.com${DOCS_PATH}#${ERRORS_ANCHOR}",
  "level": "error",
  "timestamp": "2026-11-22T10:00:00.000Z",
  "requestId": "5b0e…",
  "errors": [
    { "location": "body", "param": "participantEmail", "value": "nope", "msg": "must be an email address" }
  ]
}`;

/** The error catalogue as HTML, in the page itself: the anchor exists whether or not scripts run. */
function errorsSection(): string {
  const rows = ERROR_CODES.map((code) => {
    const { name, status } = HTTP_ERRORS[code];
    return `<tr id="error-${code}"><td>${status}</td><td><code>${code}</code></td><td>${name}</td><td>${escapeHtml(ERROR_DESCRIPTIONS[code])}</td></tr>`;
  }).join('\n');
  return `<section id="${ERRORS_ANCHOR}" class="errors">
<h2>Errors</h2>
<p>Every answer other than 200 has one JSON body: <code>name</code>, <code>code</code>, <code>message</code>, <code>status</code> (the HTTP status), <code>supportUrl</code> (this section), <code>level</code> (<code>"error"</code>), <code>timestamp</code> (ISO 8601) and <code>requestId</code> (also the <code>X-Request-Id</code> header), plus the fields of its kind. Act on <code>code</code>; <code>message</code> is for people.</p>
<pre>${escapeHtml(EXAMPLE_BODY)}</pre>
<table>
<thead><tr><th>Status</th><th>Code</th><th>Name</th><th>When</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
</section>`;
}

const STYLE = `body { margin: 0; }
.errors { box-sizing: border-box; max-width: 1460px; margin: 0 auto 60px; padding: 0 20px; font-family: sans-serif; color: #3b4151; }
.errors h2 { font-size: 24px; margin: 40px 0 10px; }
.errors pre { background: #333; color: #fff; padding: 12px; border-radius: 4px; overflow-x: auto; font-size: 12px; }
.errors table { border-collapse: collapse; width: 100%; font-size: 14px; }
.errors th, .errors td { text-align: left; vertical-align: top; padding: 8px; border-bottom: 1px solid #d9d9d9; }
.errors code { font-size: 13px; }`;

/** Swagger UI renders the operations above the errors section: once it has, a `#errors` link is followed again. */
const ON_COMPLETE = `() => { if (location.hash === '#${ERRORS_ANCHOR}') document.getElementById('${ERRORS_ANCHOR}').scrollIntoView(); }`;

export function docsPage() {
  const ui = SwaggerUI({
    url: OPENAPI_PATH,
    baseUrl: ASSET_BASE,
    // The online validator's badge would be an image from another host.
    validatorUrl: 'none',
    docExpansion: 'list',
    displayRequestDuration: true,
    onComplete: ON_COMPLETE,
  });
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>Stampcard API</title>
<link rel="icon" href="data:," />
<style>${STYLE}</style>
</head>
<body>
${ui}
${errorsSection()}
</body>
</html>`;
  // The page's scripts are Swagger UI's bundle, from here, and its inline start-up script, allowed by its hash.
  const inline = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(
    (m) => `'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`,
  );
  const csp = [
    "default-src 'self'",
    `script-src 'self' ${inline.join(' ')}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return { html, csp };
}
