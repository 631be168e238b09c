/** @jsxImportSource hono/jsx */
import { DomainError, EVENT_TYPES, type HealthHour, type WebhookScope } from '@stampcard/core';
import { ENDPOINT_KINDS } from '@stampcard/db';
import type { Context } from 'hono';
import type { Child, FC } from 'hono/jsx';
import type { z } from 'zod';
import type { AppEnv } from '../../env';
import { ERROR_STATUS } from '../../lib/error-status';
import { type ConsoleHelpers, utcMinute } from '../lib';
import { CSRF_FIELD } from '../views';

export type C = Context<AppEnv>;

/**
 * Where the webhook pages are and whose they are: mounted in the operator console (every account, one chosen
 * on the first page) or in a business's portal (its account only), with the frame each draws its pages in.
 * Every link of the pages is built from `base`, and every core service is called in `scopeOf(pages)`.
 */
export type WebhookPages = {
  /** The section's path: `/console/webhooks`, or a portal link's `…/webhooks`. */
  base: string;
  /** The account the pages show; undefined in the console until the operator picks one. */
  accountId?: string;
  /** The one campaign a portal link was made for; undefined: every campaign of the account. */
  campaignId?: string;
  /** Whether the pages are the operator's (any account) rather than a business's own. */
  operator: boolean;
  /** The request's CSRF token, carried by every form. */
  csrf: string;
  Frame: FC<{ title: string; children?: Child }>;
};

/** What the webhook pages need of whoever mounts them: the console's helpers, and the pages of a request. */
export type WebhookPageHelpers = ConsoleHelpers & {
  /** Where the pages are and whose they are, for this request. */
  pagesOf: (c: C) => WebhookPages;
};

/** The core services' scope of the pages: a business's account (and campaign), or everyone's. */
export const scopeOf = (pages: WebhookPages): WebhookScope =>
  pages.operator
    ? {}
    : { accountId: pages.accountId ?? '', ...(pages.campaignId ? { campaignId: pages.campaignId } : {}) };

/** Messages one page of an endpoint's log shows; endpoints one page of the list shows. */
export const LOG_PAGE = 25;
export const ENDPOINTS_PAGE = 25;

/** The endpoint options the API's routes pass to core, from the service's settings. */
export const endpointOptions = (c: C) => ({
  allowPrivateNetworks: c.get('deps').allowPrivateNetworks,
  backlogBatch: c.get('deps').webhookBacklogBatch,
});

export type Notice = { text: string; secret?: string };
/** What a page shows above its content: a notice of what was just done, or why nothing was. */
export type Flashes = { notice?: Notice; problem?: string };

/** What a redirect after an action tells the next page, by a fixed code (nothing the request sent is echoed). */
const NOTICES: Record<string, (n: number) => string> = {
  saved: () => 'Saved.',
  enabled: (n) => `Enabled.${n ? ` ${n} held messages are being delivered.` : ''}`,
  disabled: () => 'Disabled: new messages are kept until it is enabled again.',
  test: () => 'A test event is on its way: it appears in the messages below.',
  revoked: () => 'Only the current secret signs from now on.',
  deleted: () => 'Deleted, with its messages.',
  replayed: (n) => `${n} messages will be delivered again.`,
  recovered: (n) => `${n} failed messages will be delivered again.`,
  'replayed-one': () => 'The message will be delivered again.',
};

export function noticeOf(c: C): Notice | undefined {
  const done = c.req.query('done');
  const say = done !== undefined && Object.hasOwn(NOTICES, done) ? NOTICES[done] : undefined;
  if (!say) return undefined;
  const n = Number.parseInt(c.req.query('n') ?? '0', 10);
  return { text: say(Number.isSafeInteger(n) && n >= 0 ? n : 0) };
}

/** The path after an action, with the notice the next page shows. */
export const doneAt = (path: string, done: keyof typeof NOTICES, n?: number) =>
  `${path}${path.includes('?') ? '&' : '?'}done=${done}${n === undefined ? '' : `&n=${n}`}`;

/** A schema's refusal in a sentence, field by field. */
export const problemOf = (error: z.ZodError) =>
  `Not changed: ${error.issues.map((i) => `${i.path.join('.') || 'form'} ${i.message}`).join('; ')}`;

/** A page rendered for a refusal, answered with the refusal's status. */
export const withStatus = (res: Response, status: number) =>
  new Response(res.body, { status, headers: res.headers });

/**
 * A refusal of core's (or a schema's) shown on a page (`render`), with its status; nothing changed. Anything
 * else (and a 503, whose page could not be drawn either) goes to the API's error handler.
 */
export async function refused(c: C, err: unknown, render: (problem: string) => Promise<Response>) {
  if (!(err instanceof DomainError) || err.code === 'UNAVAILABLE') throw err;
  const status = ERROR_STATUS[err.code];
  const res = await render(err.message).catch(() => undefined);
  return res ? withStatus(res, status) : c.text(err.message, status);
}

/** A `datetime-local` value read as UTC, in ms; undefined when empty; NaN (refused by the schemas) when bad. */
export const utcOf = (value: string | undefined) =>
  value === undefined || value === ''
    ? undefined
    : Date.parse(`${value.length === 16 ? `${value}:00` : value}Z`);

/** `datetime-local`'s value for a time: UTC to the minute. */
export const localValue = (ms: number | undefined) =>
  ms === undefined ? '' : new Date(ms).toISOString().slice(0, 16);

export const blankless = (value: string | undefined) => (value === '' ? undefined : value);

const ONE_SHOT = 'Copy it now: it is shown this once. Receivers verify deliveries with it.';

export function Flash(props: Flashes) {
  return (
    <>
      {props.problem ? (
        <p class="error" role="alert">
          {props.problem}
        </p>
      ) : null}
      {props.notice ? (
        <div class="notice" role="status">
          <p>{props.notice.text}</p>
          {props.notice.secret ? (
            <p>
              Secret: <code id="secret">{props.notice.secret}</code>. {ONE_SHOT}
            </p>
          ) : null}
        </div>
      ) : null}
    </>
  );
}

/** One hidden field: the form's CSRF token. */
export const Csrf = (props: { pages: WebhookPages }) => (
  <input type="hidden" name={CSRF_FIELD} value={props.pages.csrf} />
);

/** A one-click action: a form of its own with a button. */
export function Act(props: {
  pages: WebhookPages;
  action: string;
  label: string;
  hidden?: Record<string, string>;
}) {
  return (
    <form method="post" action={props.action} class="inline">
      <Csrf pages={props.pages} />
      {Object.entries(props.hidden ?? {}).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <button type="submit">{props.label}</button>
    </form>
  );
}

/** The sparkline's text: what a screen reader says and what a pointer's tooltip shows. */
export function healthText(hours: HealthHour[]) {
  const sum = (pick: (h: HealthHour) => number) => hours.reduce((n, h) => n + pick(h), 0);
  return `Last 24 hours: ${sum((h) => h.delivered)} delivered, ${sum((h) => h.failed)} failed, ${sum((h) => h.pending)} pending`;
}

/** The last 24 hours as stacked bars, an hour each (delivered below, failed above), with the figures as text. */
export function Sparkline(props: { hours: HealthHour[] }) {
  const top = Math.max(1, ...props.hours.map((h) => h.delivered + h.failed));
  const label = healthText(props.hours);
  return (
    <svg class="spark" viewBox="0 0 96 24" width="96" height="24" role="img" aria-label={label}>
      <title>{label}</title>
      {props.hours.map((h, i) => {
        const okH = (h.delivered / top) * 24;
        const badH = (h.failed / top) * 24;
        return (
          <>
            <rect class="ok" x={i * 4} y={24 - okH} width="3" height={okH} />
            <rect class="fail" x={i * 4} y={24 - okH - badH} width="3" height={badH} />
          </>
        );
      })}
    </svg>
  );
}

/** Enabled, or disabled with why and since when. */
export function stateOf(e: { enabled: boolean; disabledReason: string | null; disabledAt: number | null }) {
  if (e.enabled) return 'Enabled';
  const why =
    e.disabledReason === 'OPERATOR'
      ? 'by hand'
      : e.disabledReason === 'GONE'
        ? 'it answered 410 Gone'
        : 'failing for days';
  return `Disabled (${why}${e.disabledAt ? `, ${utcMinute(e.disabledAt)} UTC` : ''})`;
}

/** An endpoint's form as typed: what a refused form is drawn again with, so nothing typed is lost. */
export type EndpointDraft = {
  url: string;
  kind: string;
  rateLimit: string;
  description: string;
  eventTypes: string[];
};

/** An endpoint's settings as its form shows them. */
export const draftOf = (e: {
  url: string;
  kind: string;
  rateLimit: number | null;
  description: string;
  eventTypes: string[];
}): EndpointDraft => ({
  url: e.url,
  kind: e.kind,
  rateLimit: e.rateLimit === null ? '' : String(e.rateLimit),
  description: e.description,
  eventTypes: e.eventTypes,
});

/** An endpoint's form read: the draft (to draw again) and the operator API's body (for its schema). */
export async function readEndpointForm(helpers: WebhookPageHelpers, c: C) {
  const form = await helpers.formOf(c);
  const eventTypes = await helpers.formListOf(c, 'eventTypes');
  const rate = form.rateLimit?.trim() ?? '';
  const draft: EndpointDraft = {
    url: form.url ?? '',
    kind: form.kind ?? '',
    rateLimit: rate,
    description: form.description ?? '',
    eventTypes,
  };
  const body = {
    url: form.url,
    kind: form.kind,
    description: form.description ?? '',
    rateLimit: rate === '' ? null : Number(rate),
    eventTypes,
  };
  return { form, draft, body };
}

/** A type's name that may wrap after each underscore (a long name on a narrow screen). */
const breakable = (name: string) =>
  name.split('_').map((part, i, all) => (i < all.length - 1 ? [`${part}_`, <wbr />] : part));

function EventTypeBoxes(props: { chosen: string[]; idPrefix: string }) {
  return (
    <fieldset>
      <legend>Event types (none ticked: every type)</legend>
      <div class="boxes">
        {EVENT_TYPES.map((t) => (
          <label for={`${props.idPrefix}-${t}`}>
            <input
              type="checkbox"
              id={`${props.idPrefix}-${t}`}
              name="eventTypes"
              value={t}
              checked={props.chosen.includes(t)}
            />{' '}
            <span>{breakable(t)}</span>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

/** The fields an endpoint is made or changed with, filled with `values` (empty for a new one). */
export function EndpointFields(props: { values?: EndpointDraft; idPrefix: string }) {
  const v = props.values;
  const id = (name: string) => `${props.idPrefix}-${name}`;
  return (
    <>
      <label for={id('url')}>URL</label>
      <input id={id('url')} name="url" type="url" required maxlength={2048} value={v?.url ?? ''} />
      <label for={id('kind')}>Kind (FULFILMENT: its 2xx to a goal fulfils the reward)</label>
      <select id={id('kind')} name="kind">
        {ENDPOINT_KINDS.map((k) => (
          <option value={k} selected={v?.kind === k}>
            {k}
          </option>
        ))}
      </select>
      <label for={id('rateLimit')}>Deliveries per second (empty: no limit)</label>
      <input
        id={id('rateLimit')}
        name="rateLimit"
        type="number"
        min={1}
        max={10000}
        value={v?.rateLimit ?? ''}
      />
      <label for={id('description')}>Description</label>
      <input id={id('description')} name="description" maxlength={1000} value={v?.description ?? ''} />
      <EventTypeBoxes chosen={v?.eventTypes ?? []} idPrefix={id('type')} />
    </>
  );
}
