/** @jsxImportSource hono/jsx */
import { frameAncestorsDirective, frameAncestorsOf } from '@stampcard/core';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import type { Child } from 'hono/jsx';
import { formListOf, formOf, pagePolicy } from '../console/lib';
import { CSRF_FIELD, Document } from '../console/views';
import { registerWebhookPages } from '../console/webhooks/routes';
import { crossSiteReason, STATE_CHANGING } from '../dashboard';
import type { AppEnv } from '../env';
import { errorResponse } from '../errors';
import { portalActor } from '../middleware/actor';
import { PORTAL_PATH, portalCsrf, portalCsrfMatches, readPortalLink } from './link';

type C = Context<AppEnv>;

const SITE = 'Stampcard webhooks portal';

/**
 * The headers of every portal answer: the console's policy, framed only by the account's origins (none when
 * the link is not genuine); a referrer for its own pages only, since the link is in the URL (and a browser's form
 * posts carry their Origin only then); never cached.
 */
function portalHeaders(c: C, ancestors: readonly string[]) {
  c.header('Content-Security-Policy', pagePolicy(frameAncestorsDirective(ancestors)));
  if (ancestors.length === 0) c.header('X-Frame-Options', 'DENY');
  c.header('X-Content-Type-Options', 'nosniff');
  c.header('Referrer-Policy', 'same-origin');
  c.header('Cache-Control', 'no-store');
}

function Closed(props: { expired: boolean }) {
  return (
    <Document title="Link not valid" site={SITE}>
      <main id="main">
        <h1>{props.expired ? 'This portal link has expired' : 'This portal link is not valid'}</h1>
        <p>Ask the application that showed it for a new one: portal links open for a limited time.</p>
      </main>
    </Document>
  );
}

function PortalFrame(props: { base: string; title: string; expiresAt: number; children?: Child }) {
  return (
    <Document title={props.title} site={SITE}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Webhooks</span>
        <nav aria-label="Portal">
          <ul>
            <li>
              <a href={props.base}>Endpoints and deliveries</a>
            </li>
            <li>
              <a href={`${props.base}/event-types`}>Event types</a>
            </li>
          </ul>
        </nav>
        <span class="muted">
          Link valid until {new Date(props.expiresAt).toISOString().slice(0, 16).replace('T', ' ')} UTC
        </span>
      </header>
      <main id="main">{props.children}</main>
    </Document>
  );
}

/**
 * Every portal request: the link's grant, genuine and unexpired, or a page that shows nothing of anyone (401);
 * a state-changing request must come from the portal's own pages (the console's cross-site check) and carry
 * the link's CSRF token.
 */
const requireLink: MiddlewareHandler<AppEnv> = async (c, next) => {
  const token = c.req.param('token') ?? '';
  const { operatorToken, clock } = c.get('deps');
  const grant = readPortalLink(token, operatorToken, clock.now());
  const ancestors = grant ? await frameAncestorsOf(c.get('ctx'), grant.accountId) : [];
  portalHeaders(c, ancestors);
  if (!grant || grant.expired) return c.html(<Closed expired={grant?.expired ?? false} />, 401);
  if (STATE_CHANGING.has(c.req.method)) {
    const reason = crossSiteReason(c);
    if (reason) {
      return errorResponse(c, 'NOT_AUTHORIZED', `The portal changes nothing for another site (${reason})`);
    }
    const form = await formOf(c);
    if (!portalCsrfMatches(form[CSRF_FIELD], token, operatorToken)) {
      return errorResponse(
        c,
        'NOT_AUTHORIZED',
        'The form is missing its CSRF token: reload the page and try again',
      );
    }
  }
  c.set('portal', { ...grant, token });
  await next();
  return undefined;
};

/**
 * The business portal under `/portal/<link token>`: one account's webhook pages (the console's, in the link's
 * scope), framed by the account's own origins only.
 */
export function businessPortal() {
  const app = new Hono<AppEnv>();
  app.use('/:token', requireLink);
  app.use('/:token/*', requireLink);
  app.use('/:token', portalActor);
  app.use('/:token/*', portalActor);
  app.get('/:token', (c) => c.redirect(`${PORTAL_PATH}/${c.req.param('token')}/webhooks`, 303));
  const portal = new Hono<AppEnv>();
  registerWebhookPages(portal, {
    formOf,
    formListOf,
    csrfOf: (c) => portalCsrf(c.get('portal')!.token, c.get('deps').operatorToken),
    pagesOf: (c) => {
      const grant = c.get('portal')!;
      const base = `${PORTAL_PATH}/${grant.token}/webhooks`;
      return {
        base,
        operator: false,
        accountId: grant.accountId,
        ...(grant.campaignId ? { campaignId: grant.campaignId } : {}),
        csrf: portalCsrf(grant.token, c.get('deps').operatorToken),
        Frame: ({ title, children }) => (
          <PortalFrame base={base} title={title} expiresAt={grant.expiresAt}>
            {children}
          </PortalFrame>
        ),
      };
    },
  });
  app.route('/:token', portal);
  return app;
}
