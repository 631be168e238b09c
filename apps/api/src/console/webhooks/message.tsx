/** @jsxImportSource hono/jsx */
import { getMessage, messageBody, notFound, replayMessage } from '@stampcard/core';
import { DELIVERY_HEADERS } from '@stampcard/webhooks';
import type { Hono } from 'hono';
import type { AppEnv } from '../../env';
import { queueDeliveries } from '../../routes/webhooks/schemas';
import { idOf, utcMinute } from '../lib';
import {
  Act,
  type C,
  doneAt,
  Flash,
  type Flashes,
  noticeOf,
  refused,
  scopeOf,
  type WebhookPageHelpers,
  type WebhookPages,
} from './common';
import { renderEndpointList } from './endpoints';

export type MessageView = Awaited<ReturnType<typeof getMessage>>;

/** What a signature header is shown as: its scheme only, never a signature (nor anything of a secret). */
export const WITHHELD_SIGNATURE = 'v1,… (withheld)';

/**
 * The headers the dispatcher sent with an attempt, made again from what it was made of: the delivery headers
 * every attempt carries, the message id, the attempt's time in seconds (taken as it was sent), the signature
 * withheld, and the outbox event's id when the message has one.
 */
export function requestHeaders(
  message: { id: string; eventId: string | null },
  attemptedAt: number,
): [string, string][] {
  return [
    ...Object.entries(DELIVERY_HEADERS),
    ['webhook-id', message.id],
    ['webhook-timestamp', String(Math.floor(attemptedAt / 1000))],
    ['webhook-signature', WITHHELD_SIGNATURE],
    ...(message.eventId ? [['stampcard-event-id', message.eventId] as [string, string]] : []),
  ];
}

/** An attempt's outcome in words: its status, or why no answer came. */
const outcomeOf = (a: MessageView['attemptLog'][number]) =>
  a.statusCode === null ? `No answer (${a.errorClass ?? 'error'})` : `HTTP ${a.statusCode}`;

/** One message: its state, its attempts (each with the request's headers and the answer's first bytes), its body. */
export function MessagePage(props: { pages: WebhookPages; message: MessageView; body: unknown } & Flashes) {
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
                <strong class={a.succeeded ? undefined : 'bad'}>{outcomeOf(a)}</strong> in {a.latencyMs} ms,{' '}
                {new Date(a.attemptedAt).toISOString().replace('T', ' ').slice(0, 19)} UTC
                {a.throttled ? ' (throttled: the receiver asked to slow down)' : ''}
                {!a.succeeded && a.statusCode !== null && a.errorClass ? ` (${a.errorClass})` : ''}
              </p>
              <details>
                <summary>Request headers</summary>
                <dl class="headers">
                  {requestHeaders(m, a.attemptedAt).map(([name, value]) => (
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
      <section>
        <h2 id="body-h">Body</h2>
        <pre class="body" tabindex={0}>
          {props.body === null ? '(gone)' : JSON.stringify(props.body, null, 2)}
        </pre>
      </section>
    </pages.Frame>
  );
}

/** A message's page, in the pages' scope (another account's message is not found). */
export async function renderMessagePage(c: C, pages: WebhookPages, id: string, extra: Flashes = {}) {
  const scope = scopeOf(pages);
  const [message, body] = await Promise.all([
    getMessage(c.get('ctx'), id, scope),
    messageBody(c.get('ctx'), id, scope),
  ]);
  return c.html(<MessagePage pages={pages} message={message} body={body} {...extra} />);
}

/** A message's page (`GET …/messages/:id`) and its replay (`POST …/messages/:id/replay`). */
export function registerMessagePage(app: Hono<AppEnv>, helpers: WebhookPageHelpers) {
  /** A refusal on the message's page; the list when the message itself is not there (or not the scope's). */
  const messageOrList = (c: C, pages: WebhookPages, id: string | undefined, problem: string) =>
    (id ? renderMessagePage(c, pages, id, { problem }) : Promise.reject(notFound('Webhook message'))).catch(
      () => renderEndpointList(c, pages, {}, { problem }),
    );

  app.get('/webhooks/messages/:id', async (c) => {
    const pages = helpers.pagesOf(c);
    const id = idOf(c.req.param('id'));
    try {
      if (!id) throw notFound('Webhook message');
      return await renderMessagePage(c, pages, id, { notice: noticeOf(c) });
    } catch (err) {
      return refused(c, err, (problem) => renderEndpointList(c, pages, {}, { problem }));
    }
  });

  app.post('/webhooks/messages/:id/replay', async (c) => {
    const pages = helpers.pagesOf(c);
    const id = idOf(c.req.param('id'));
    try {
      if (!id) throw notFound('Webhook message');
      const { scheduled } = await replayMessage(c.get('ctx'), id, scopeOf(pages));
      await queueDeliveries(c, [scheduled]);
      return c.redirect(doneAt(`${pages.base}/messages/${id}`, 'replayed-one'), 303);
    } catch (err) {
      return refused(c, err, (problem) => messageOrList(c, pages, id, problem));
    }
  });
}
