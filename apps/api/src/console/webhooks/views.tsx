/** @jsxImportSource hono/jsx */
import {
  type accountEndpoints,
  type CatalogEntry,
  EVENT_TYPES,
  type getEndpoint,
  type HealthHour,
  type listMessages,
  type MessageFilter,
} from '@stampcard/core';
import { ENDPOINT_KINDS, MESSAGE_STATUSES } from '@stampcard/db';
import { DELIVERY_HEADERS } from '@stampcard/webhooks';
import type { Child, FC } from 'hono/jsx';
import { utcMinute } from '../lib';
import { CSRF_FIELD } from '../views';

/**
 * Where the webhook pages are and whose they are: mounted in the operator console (every account, chosen on
 * the first page) or in a business's portal (its account only), with the frame each draws its pages in.
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

export type AccountEndpoints = Awaited<ReturnType<typeof accountEndpoints>>;
export type EndpointView = Awaited<ReturnType<typeof getEndpoint>>;
export type MessagePage = Awaited<ReturnType<typeof listMessages>>;
export type MessageView = MessagePage['messages'][number];
export type Notice = { text: string; secret?: string };

/** The filter of an endpoint's message log, as its form holds it (times as typed, UTC). */
export type LogFilter = MessageFilter & { after?: string };

const ONE_SHOT = 'Copy it now: it is shown this once. Receivers verify deliveries with it.';

export function Flash(props: { notice?: Notice; problem?: string }) {
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
const Csrf = (props: { pages: WebhookPages }) => (
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

/** The last 24 hours as stacked bars (delivered below, failed above), with the figures as its text. */
export function Sparkline(props: { hours: HealthHour[] }) {
  const ok = props.hours.reduce((n, h) => n + h.delivered, 0);
  const bad = props.hours.reduce((n, h) => n + h.failed, 0);
  const pending = props.hours.reduce((n, h) => n + h.pending, 0);
  const top = Math.max(1, ...props.hours.map((h) => h.delivered + h.failed));
  const label = `Last 24 hours: ${ok} delivered, ${bad} failed, ${pending} pending`;
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
            {t}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

/** The fields an endpoint is made or changed with. */
function EndpointFields(props: { endpoint?: EndpointView; idPrefix: string }) {
  const e = props.endpoint;
  const id = (name: string) => `${props.idPrefix}-${name}`;
  return (
    <>
      <label for={id('url')}>URL</label>
      <input id={id('url')} name="url" type="url" required maxlength={2048} value={e?.url ?? ''} />
      <label for={id('kind')}>Kind</label>
      <select id={id('kind')} name="kind">
        {ENDPOINT_KINDS.map((k) => (
          <option value={k} selected={e?.kind === k}>
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
        value={e?.rateLimit === null || e?.rateLimit === undefined ? '' : String(e.rateLimit)}
      />
      <label for={id('description')}>Description</label>
      <input id={id('description')} name="description" maxlength={1000} value={e?.description ?? ''} />
      <EventTypeBoxes chosen={e?.eventTypes ?? []} idPrefix={id('type')} />
    </>
  );
}

export function AccountPicker(props: {
  pages: WebhookPages;
  accounts: { id: string; name: string; plan: string }[];
  next?: string;
  problem?: string;
}) {
  return (
    <props.pages.Frame title="Webhooks">
      <h1>Webhooks</h1>
      <Flash problem={props.problem} />
      <p class="muted">Pick an account to see its endpoints, their deliveries and their health.</p>
      <ul class="plain">
        {props.accounts.map((a) => (
          <li>
            <a href={`${props.pages.base}?accountId=${encodeURIComponent(a.id)}`}>{a.name}</a>{' '}
            <span class="muted">({a.plan})</span>
          </li>
        ))}
      </ul>
      {props.accounts.length === 0 ? <p class="muted">No account yet.</p> : null}
      {props.next ? <a href={props.next}>Next accounts</a> : null}
      <p>
        <a href={`${props.pages.base}/event-types`}>Event types and example bodies</a>
      </p>
    </props.pages.Frame>
  );
}

export function EndpointsPage(props: {
  pages: WebhookPages;
  accountName: string;
  campaigns: { id: string; name: string }[];
  list: AccountEndpoints;
  notice?: Notice;
  problem?: string;
}) {
  const { pages, list } = props;
  return (
    <pages.Frame title="Webhooks">
      <h1>Webhooks: {props.accountName}</h1>
      <Flash notice={props.notice} problem={props.problem} />
      <p>
        <a href={`${pages.base}/event-types`}>Event types and example bodies</a>
        {pages.operator ? (
          <>
            {' · '}
            <a href={pages.base}>All accounts</a>
          </>
        ) : null}
      </p>
      <section class="table-wrap" tabindex={0} aria-labelledby="endpoints-h">
        <h2 id="endpoints-h">Endpoints</h2>
        {list.endpoints.length === 0 ? (
          <p class="muted">No endpoint yet: add one below.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Campaign</th>
                <th scope="col">Kind</th>
                <th scope="col">State</th>
                <th scope="col">Failing since (UTC)</th>
                <th scope="col">Last 24 h</th>
              </tr>
            </thead>
            <tbody>
              {list.endpoints.map((e) => (
                <tr>
                  <th scope="row">
                    <a href={`${pages.base}/endpoints/${e.id}`}>{e.url}</a>
                  </th>
                  <td>{e.campaignName}</td>
                  <td>{e.kind}</td>
                  <td class={e.enabled ? undefined : 'bad'}>{stateOf(e)}</td>
                  <td class={e.failingSince ? 'bad' : undefined}>
                    {e.failingSince ? utcMinute(e.failingSince) : '–'}
                  </td>
                  <td>
                    <Sparkline hours={e.health} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {list.nextAfter ? (
          <a
            href={`${pages.base}?${new URLSearchParams({
              ...(pages.operator && pages.accountId ? { accountId: pages.accountId } : {}),
              after: list.nextAfter,
            })}`}
          >
            Next endpoints
          </a>
        ) : null}
      </section>
      <section aria-labelledby="new-h" class="card">
        <h2 id="new-h">Add an endpoint</h2>
        {props.campaigns.length === 0 ? (
          <p class="muted">The account has no campaign yet: an endpoint belongs to a campaign.</p>
        ) : (
          <form method="post" action={`${pages.base}/endpoints`} class="stack">
            <Csrf pages={pages} />
            {pages.accountId ? <input type="hidden" name="accountId" value={pages.accountId} /> : null}
            <label for="new-campaign">Campaign</label>
            <select id="new-campaign" name="campaignId">
              {props.campaigns.map((c) => (
                <option value={c.id}>{c.name}</option>
              ))}
            </select>
            <EndpointFields idPrefix="new" />
            <button type="submit">Add the endpoint</button>
          </form>
        )}
      </section>
    </pages.Frame>
  );
}

/** `datetime-local`'s value for a time: UTC to the minute. */
const localValue = (ms: number | undefined) =>
  ms === undefined ? '' : new Date(ms).toISOString().slice(0, 16);

function LogFilterForm(props: { pages: WebhookPages; endpointId: string; filter: LogFilter }) {
  const f = props.filter;
  return (
    <form
      method="get"
      action={`${props.pages.base}/endpoints/${props.endpointId}`}
      class="inline"
      aria-label="Filter the messages"
    >
      <label for="f-status">Status</label>
      <select id="f-status" name="status">
        <option value="">Any</option>
        {MESSAGE_STATUSES.map((s) => (
          <option value={s} selected={f.status === s}>
            {s}
          </option>
        ))}
      </select>
      <label for="f-type">Event type</label>
      <select id="f-type" name="eventType">
        <option value="">Any</option>
        {[...EVENT_TYPES, 'WEBHOOK_TEST'].map((t) => (
          <option value={t} selected={f.eventType === t}>
            {t}
          </option>
        ))}
      </select>
      <label for="f-participant">Participant id</label>
      <input id="f-participant" name="participantId" maxlength={64} value={f.participantId ?? ''} />
      <label for="f-since">From (UTC)</label>
      <input id="f-since" name="since" type="datetime-local" value={localValue(f.since)} />
      <label for="f-until">Until (UTC)</label>
      <input id="f-until" name="until" type="datetime-local" value={localValue(f.until)} />
      <button type="submit">Filter</button>
    </form>
  );
}

/** The filter as form fields, for the replay of what it shows and the next page's link. */
export function filterFields(f: LogFilter): Record<string, string> {
  const out: Record<string, string> = {};
  if (f.status) out.status = f.status;
  if (f.eventType) out.eventType = f.eventType;
  if (f.participantId) out.participantId = f.participantId;
  if (f.since !== undefined) out.since = localValue(f.since);
  if (f.until !== undefined) out.until = localValue(f.until);
  return out;
}

export function EndpointPage(props: {
  pages: WebhookPages;
  endpoint: EndpointView;
  health: HealthHour[];
  messages: MessagePage;
  filter: LogFilter;
  notice?: Notice;
  problem?: string;
}) {
  const { pages, endpoint: e, messages, filter } = props;
  const here = `${pages.base}/endpoints/${e.id}`;
  const replayable = filter.status === undefined || filter.status !== 'PENDING';
  const nextPage =
    messages.more && messages.nextAfter
      ? `${here}?${new URLSearchParams({ ...filterFields(filter), after: messages.nextAfter })}`
      : undefined;
  return (
    <pages.Frame title="Webhook endpoint">
      <p>
        <a href={pages.operator ? `${pages.base}?accountId=${pages.accountId ?? ''}` : pages.base}>
          All endpoints
        </a>
      </p>
      <h1 class="word">{e.url}</h1>
      <Flash notice={props.notice} problem={props.problem} />
      <dl class="cards">
        <div>
          <dt>State</dt>
          <dd class={e.enabled ? 'word' : 'word bad'}>{stateOf(e)}</dd>
        </div>
        <div>
          <dt>Failing since (UTC)</dt>
          <dd class={e.failingSince ? 'word bad' : 'word'}>
            {e.failingSince ? utcMinute(e.failingSince) : 'No'}
          </dd>
        </div>
        <div>
          <dt>Kind</dt>
          <dd class="word">{e.kind}</dd>
        </div>
        <div>
          <dt>Last 24 h</dt>
          <dd class="word">
            <Sparkline hours={props.health} />
          </dd>
        </div>
      </dl>
      <p class="muted">
        Event types: {e.eventTypes.length ? e.eventTypes.join(', ') : 'every type'}. Rate limit:{' '}
        {e.rateLimit === null ? 'none' : `${e.rateLimit}/s`}.
        {e.previousSecretExpiresAt
          ? ` The previous secret signs too until ${utcMinute(e.previousSecretExpiresAt)} UTC.`
          : ''}
        {e.backlog
          ? ` ${e.backlog.kind === 'RELEASE' ? 'Release' : 'Discard'} of held messages: ${e.backlog.done} of ${e.backlog.total}, ${e.backlog.state}.`
          : ''}
      </p>
      <section aria-labelledby="act-h">
        <h2 id="act-h">Actions</h2>
        <div class="actions">
          <Act
            pages={pages}
            action={`${here}/${e.enabled ? 'disable' : 'enable'}`}
            label={e.enabled ? 'Disable' : 'Enable'}
          />
          <Act pages={pages} action={`${here}/test`} label="Send a test event" />
          <Act pages={pages} action={`${here}/rotate`} label="Rotate the secret" />
          {e.previousSecretExpiresAt ? (
            <Act pages={pages} action={`${here}/revoke-previous`} label="Stop the previous secret now" />
          ) : null}
          <Act pages={pages} action={`${here}/delete`} label="Delete the endpoint" />
        </div>
      </section>
      <section aria-labelledby="log-h">
        <h2 id="log-h">Messages</h2>
        <LogFilterForm pages={pages} endpointId={e.id} filter={filter} />
        <div class="actions">
          {replayable ? (
            <Act
              pages={pages}
              action={`${here}/replay`}
              label={`Replay the ${(filter.status ?? 'FAILED').toLowerCase()} messages this filter matches`}
              hidden={filterFields(filter)}
            />
          ) : null}
          <form method="post" action={`${here}/recover`} class="inline">
            <Csrf pages={pages} />
            <label for="recover-since">Failed since (UTC)</label>
            <input id="recover-since" name="since" type="datetime-local" required />
            <button type="submit">Recover</button>
          </form>
        </div>
        <section class="table-wrap" tabindex={0} aria-label="Messages">
          {messages.messages.length === 0 ? (
            <p class="muted">No message matches.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Made (UTC)</th>
                  <th scope="col">Event type</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="n">
                    Attempts
                  </th>
                  <th scope="col">Last answer</th>
                </tr>
              </thead>
              <tbody>
                {messages.messages.map((m) => (
                  <tr>
                    <th scope="row">
                      <a href={`${pages.base}/messages/${m.id}`}>{utcMinute(m.createdAt)}</a>
                    </th>
                    <td>{m.eventType}</td>
                    <td class={m.status === 'FAILED' ? 'bad' : undefined}>{m.status}</td>
                    <td class="n">{m.attemptCount}</td>
                    <td>{m.lastStatusCode ?? m.lastError ?? '–'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
        {nextPage ? <a href={nextPage}>Older messages</a> : null}
      </section>
      <section aria-labelledby="edit-h" class="card">
        <h2 id="edit-h">Change the endpoint</h2>
        <form method="post" action={here} class="stack">
          <Csrf pages={pages} />
          <EndpointFields endpoint={e} idPrefix="edit" />
          <button type="submit">Save</button>
        </form>
      </section>
    </pages.Frame>
  );
}

/** What the dispatcher sent with an attempt: its headers, the signature withheld. */
function requestHeaders(messageId: string, attemptedAt: number): [string, string][] {
  return [
    ...Object.entries(DELIVERY_HEADERS),
    ['webhook-id', messageId],
    ['webhook-timestamp', String(Math.floor(attemptedAt / 1000))],
    ['webhook-signature', 'v1,… (withheld)'],
  ];
}

export function MessagePageView(props: {
  pages: WebhookPages;
  message: MessageView;
  body: unknown;
  notice?: Notice;
  problem?: string;
}) {
  const { pages, message: m } = props;
  return (
    <pages.Frame title="Webhook message">
      <p>
        <a href={`${pages.base}/endpoints/${m.endpointId}`}>The endpoint</a>
      </p>
      <h1>
        {m.eventType} <span class="muted">({m.id})</span>
      </h1>
      <Flash notice={props.notice} problem={props.problem} />
      <dl class="cards">
        <div>
          <dt>Status</dt>
          <dd class={m.status === 'FAILED' ? 'word bad' : 'word'}>{m.status}</dd>
        </div>
        <div>
          <dt>Made (UTC)</dt>
          <dd class="word">{utcMinute(m.createdAt)}</dd>
        </div>
        <div>
          <dt>Attempts</dt>
          <dd>{m.attemptCount}</dd>
        </div>
        <div>
          <dt>Next attempt (UTC)</dt>
          <dd class="word">{m.nextAttemptAt ? utcMinute(m.nextAttemptAt) : '–'}</dd>
        </div>
      </dl>
      <Act pages={pages} action={`${pages.base}/messages/${m.id}/replay`} label="Replay this message" />
      <section aria-labelledby="attempts-h">
        <h2 id="attempts-h">Attempts</h2>
        {m.attemptsOmitted > 0 ? (
          <p class="muted">{m.attemptsOmitted} attempts between the first and the last ones are not kept.</p>
        ) : null}
        {m.attemptLog.length === 0 ? <p class="muted">No attempt yet.</p> : null}
        <ol class="attempts">
          {m.attemptLog.map((a) => (
            <li class="card">
              <p>
                <strong class={a.succeeded ? undefined : 'bad'}>
                  {a.statusCode === null ? `No answer (${a.errorClass ?? 'error'})` : `HTTP ${a.statusCode}`}
                </strong>{' '}
                in {a.latencyMs} ms, {utcMinute(a.attemptedAt)} UTC
                {a.throttled ? ' (throttled: the receiver asked to slow down)' : ''}
                {!a.succeeded && a.statusCode !== null && a.errorClass ? ` (${a.errorClass})` : ''}
              </p>
              <details>
                <summary>Request headers</summary>
                <dl class="headers">
                  {requestHeaders(m.id, a.attemptedAt).map(([name, value]) => (
                    <>
                      <dt>{name}</dt>
                      <dd>{value}</dd>
                    </>
                  ))}
                </dl>
              </details>
              <details open={!a.succeeded}>
                <summary>The answer's first bytes</summary>
                <pre>{a.responseExcerpt ?? '(none)'}</pre>
              </details>
            </li>
          ))}
        </ol>
      </section>
      <section aria-labelledby="body-h">
        <h2 id="body-h">Body</h2>
        <pre class="body" tabindex={0}>
          {props.body === null ? '(gone)' : JSON.stringify(props.body, null, 2)}
        </pre>
      </section>
    </pages.Frame>
  );
}

export function CatalogPage(props: { pages: WebhookPages; catalog: CatalogEntry[] }) {
  return (
    <props.pages.Frame title="Event types">
      <p>
        <a href={props.pages.base}>Endpoints</a>
      </p>
      <h1>Event types</h1>
      <p class="muted">
        Every body is <code>{'{ type, timestamp, data }'}</code>, signed with the endpoint's secret (Standard
        Webhooks). The examples are built from the schemas the service sends with.
      </p>
      {props.catalog.map((entry) => (
        <section class="card" aria-labelledby={`type-${entry.type}`}>
          <h2 id={`type-${entry.type}`}>{entry.type}</h2>
          <p>{entry.description}</p>
          <details>
            <summary>Example body</summary>
            <pre class="body" tabindex={0}>
              {JSON.stringify(entry.example, null, 2)}
            </pre>
          </details>
        </section>
      ))}
    </props.pages.Frame>
  );
}
