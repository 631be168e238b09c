/** @jsxImportSource hono/jsx */
import type { OperationsOverview, RetentionOverview } from '@stampcard/core';
import type { QueueCounts } from '@stampcard/jobs';
import type { Child } from 'hono/jsx';
import { QUEUE_DASHBOARD_PATH } from '../dashboard';
import { ASSETS_PATH } from './assets';

export const CONSOLE_PATH = '/console';
export const SIGN_IN_PATH = `${CONSOLE_PATH}/sign-in`;
export const SIGN_OUT_PATH = `${CONSOLE_PATH}/sign-out`;
export const OVERVIEW_FRAGMENT_PATH = `${CONSOLE_PATH}/overview`;
/** The form field (or `X-CSRF-Token` header) every state-changing console request carries. */
export const CSRF_FIELD = '_csrf';

/** The pages the nav links to: only pages that exist. */
type Section = 'overview' | 'programs' | 'participants' | 'imports' | 'team' | 'reviews' | 'webhooks';

/** htmx's settings (read from this meta element: the page runs no inline script). */
const HTMX_CONFIG = JSON.stringify({ includeIndicatorCSS: false, mode: 'same-origin', history: false });

/** A page of ours: its head (the console's files, nothing from elsewhere) and body. */
export function Document(props: { title: string; children: Child; site?: string }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="htmx-config" content={HTMX_CONFIG} />
        <title>{`${props.title} · ${props.site ?? 'Stampcard console'}`}</title>
        <link rel="stylesheet" href={`${ASSETS_PATH}/uplot.min.css`} />
        <link rel="stylesheet" href={`${ASSETS_PATH}/console.css`} />
        <script src={`${ASSETS_PATH}/htmx.min.js`} defer />
        <script src={`${ASSETS_PATH}/uplot.min.js`} defer />
        <script src={`${ASSETS_PATH}/console.js`} defer />
      </head>
      <body>{props.children}</body>
    </html>
  );
}

/** Every signed-in page: a skip link, the nav (with sign-out, a CSRF-carrying form), the page's main. */
export function Layout(props: { title: string; current: Section; csrf: string; children: Child }) {
  const link = (section: Section, href: string, label: string) => (
    <li>
      <a href={href} aria-current={props.current === section ? 'page' : undefined}>
        {label}
      </a>
    </li>
  );
  return (
    <Document title={props.title}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Stampcard console</span>
        <nav aria-label="Console">
          <ul>
            {link('overview', CONSOLE_PATH, 'Overview')}
            {link('programs', `${CONSOLE_PATH}/programs`, 'Programs')}
            {link('participants', `${CONSOLE_PATH}/participants`, 'Participants')}
            {link('imports', `${CONSOLE_PATH}/imports`, 'Imports')}
            {link('reviews', `${CONSOLE_PATH}/reviews`, 'Reviews')}
            {link('webhooks', `${CONSOLE_PATH}/webhooks`, 'Webhooks')}
            {link('team', `${CONSOLE_PATH}/team`, 'Team and keys')}
            <li>
              <a href={QUEUE_DASHBOARD_PATH}>Queues (Bull Board)</a>
            </li>
          </ul>
        </nav>
        <form method="post" action={SIGN_OUT_PATH}>
          <input type="hidden" name={CSRF_FIELD} value={props.csrf} />
          <button type="submit" class="link">
            Sign out
          </button>
        </form>
      </header>
      <main id="main">{props.children}</main>
    </Document>
  );
}

export function SignInPage(props: { error?: string }) {
  return (
    <Document title="Sign in">
      <main id="main">
        <h1>Sign in to the Stampcard console</h1>
        <p class="muted">Operators sign in with the service's operator token (OPERATOR_TOKEN).</p>
        {props.error ? (
          <p class="error" role="alert">
            {props.error}
          </p>
        ) : null}
        <form class="sign-in" method="post" action={SIGN_IN_PATH}>
          <label for="token">Operator token</label>
          <input
            id="token"
            name="token"
            type="password"
            autocomplete="current-password"
            required
            aria-invalid={props.error ? 'true' : undefined}
          />
          <button type="submit">Sign in</button>
        </form>
      </main>
    </Document>
  );
}

/** `queues` null: Redis did not answer, and the page says so where the queue table stands. */
export type OverviewData = {
  queues: QueueCounts[] | null;
  ops: OperationsOverview;
  retention: RetentionOverview;
};

/** The queue table's columns, as `QueueCounts` names them in lower case. */
const QUEUE_STATES = ['Waiting', 'Active', 'Delayed', 'Failed'] as const;

const ms = (v: number | null) => (v === null ? '–' : `${v} ms`);
const day = (t: number | null) => (t === null ? '–' : new Date(t).toISOString().slice(0, 10));
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/**
 * What each partitioned table keeps and what the worker drops next (the operator API's `/admin/v1/retention`):
 * a table whose partitions are not made at least a week ahead, or with rows waiting in its default partition,
 * is marked: the worker's maintenance has not run.
 */
/** How soon before its partitions run out a table is shown in red: a day for daily ones, else a week. */
const WARN_AHEAD_MS = { day: 86_400_000, week: 7 * 86_400_000, month: 7 * 86_400_000 } as const;

function RetentionTable({ tables }: { tables: RetentionOverview }) {
  const now = Date.now();
  return (
    <>
      <h2>Retention</h2>
      <section class="table-wrap" tabindex={0} aria-label="Retention">
        <table id="retention">
          <caption class="muted">A partition is dropped whole once all of it is past retention</caption>
          <thead>
            <tr>
              <th scope="col">Table</th>
              <th scope="col" class="n">
                Kept
              </th>
              <th scope="col" class="n">
                Partitions
              </th>
              <th scope="col" class="n">
                Size
              </th>
              <th scope="col">Drops next</th>
              <th scope="col">Made until</th>
              <th scope="col" class="n">
                Waiting
              </th>
            </tr>
          </thead>
          <tbody>
            {tables.map((t) => (
              <tr data-table={t.table}>
                <th scope="row">{t.table}</th>
                <td class="n">
                  {t.retentionDays} {t.retentionDays === 1 ? 'day' : 'days'}
                </td>
                <td class="n">{t.partitions.length}</td>
                <td class="n">{mib(t.partitions.reduce((sum, p) => sum + p.bytes, 0))}</td>
                <td>{t.nextDrop ? `${t.nextDrop.name} on ${day(t.nextDrop.at)}` : '–'}</td>
                <td
                  class={
                    t.madeUntil === null || t.madeUntil < now + WARN_AHEAD_MS[t.unit] ? 'bad' : undefined
                  }
                >
                  {day(t.madeUntil)}
                </td>
                <td class={t.waitingInDefault > 0 ? 'n bad' : 'n'}>{t.waitingInDefault}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </>
  );
}

/** The overview's figures: what the page shows first and what it polls every 5 s. */
export function OverviewFragment({ queues, ops, retention }: OverviewData) {
  const last = ops.minutes.at(-1)!;
  const chart = {
    t: ops.minutes.map((m) => m.at / 1000),
    accepted: ops.minutes.map((m) => m.accepted),
    applied: ops.minutes.map((m) => m.applied),
    delivered: ops.minutes.map((m) => m.delivered),
    failed: ops.minutes.map((m) => m.failed),
    throttled: ops.minutes.map((m) => m.throttled),
  };
  const card = (id: string, label: string, value: string | number, extra?: string) => (
    <div>
      <dt>{label}</dt>
      <dd id={id} class={extra}>
        {value}
      </dd>
    </div>
  );
  return (
    <>
      <h2>Last hour</h2>
      <dl class="cards">
        {card('accepted-hour', 'Actions accepted', ops.totals.accepted)}
        {card('applied-hour', 'Actions applied', ops.totals.applied)}
        {card('delivered-hour', 'Deliveries OK', ops.totals.delivered)}
        {card('failed-hour', 'Deliveries failed', ops.totals.failed, ops.totals.failed ? 'bad' : undefined)}
        {card('throttled-hour', 'Deliveries throttled', ops.totals.throttled)}
        {card('latency-p50', 'Delivery latency p50', ms(ops.latency.p50Ms))}
        {card('latency-p99', 'Delivery latency p99', ms(ops.latency.p99Ms))}
      </dl>
      <h2>This minute</h2>
      <dl class="cards">
        {card('accepted-minute', 'Accepted', last.accepted)}
        {card('applied-minute', 'Applied', last.applied)}
        {card('delivered-minute', 'Delivered', last.delivered)}
        {card('failed-minute', 'Failed', last.failed)}
      </dl>
      {queues === null ? (
        <p id="queues-unavailable" class="bad" role="status">
          Queues: Redis does not answer. Actions are still accepted and kept in PostgreSQL; the worker applies
          them once Redis is back.
        </p>
      ) : (
        <section class="table-wrap" tabindex={0} aria-label="Queues">
          <table id="queues">
            <caption>Queues</caption>
            <thead>
              <tr>
                <th scope="col">Queue</th>
                {QUEUE_STATES.map((state) => (
                  <th scope="col" class="n">
                    {state}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {queues.map((q) => (
                <tr data-queue={q.name}>
                  <th scope="row">{q.name}</th>
                  {QUEUE_STATES.map((state) => {
                    const n = q[state.toLowerCase() as Lowercase<typeof state>];
                    return <td class={state === 'Failed' && n > 0 ? 'n bad' : 'n'}>{n}</td>;
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      <h2>Endpoints failing now</h2>
      {ops.failingEndpoints.length === 0 ? (
        <p id="failing-none">None.</p>
      ) : (
        <section class="table-wrap" tabindex={0} aria-label="Endpoints failing now">
          <table id="failing">
            <caption class="muted">Oldest failure first</caption>
            <thead>
              <tr>
                <th scope="col">Endpoint</th>
                <th scope="col">Campaign</th>
                <th scope="col">Failing since</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {ops.failingEndpoints.map((e) => (
                <tr>
                  <th scope="row">{e.url}</th>
                  <td>{e.campaignId}</td>
                  <td>
                    <time datetime={e.failingSince.toISOString()}>{e.failingSince.toISOString()}</time>
                  </td>
                  <td class="bad">{e.enabled ? 'retrying' : 'disabled'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      <RetentionTable tables={retention} />
      <div id="overview-data" hidden data-chart={JSON.stringify(chart)} />
    </>
  );
}

export function OverviewPage(props: OverviewData & { csrf: string }) {
  return (
    <Layout title="Overview" current="overview" csrf={props.csrf}>
      <h1>Overview</h1>
      <p class="muted">
        Refreshes every 5 seconds. Jobs one by one:{' '}
        <a href={QUEUE_DASHBOARD_PATH}>open the queue dashboard</a>.
      </p>
      <figure>
        <div
          id="overview-chart"
          role="img"
          aria-label="Actions accepted and applied, and webhook deliveries by outcome, per minute over the last hour"
        />
        <figcaption class="muted">Per minute, last hour (figures below).</figcaption>
      </figure>
      <section
        id="overview"
        aria-live="polite"
        aria-label="Figures"
        hx-get={OVERVIEW_FRAGMENT_PATH}
        hx-trigger="every 5s"
      >
        <OverviewFragment queues={props.queues} ops={props.ops} retention={props.retention} />
      </section>
    </Layout>
  );
}
