/** @jsxImportSource hono/jsx */
import {
  createTestMessage,
  DomainError,
  deleteEndpoint,
  EVENT_TYPES,
  endpointHealth,
  getCampaignForOperator,
  getEndpoint,
  type HealthHour,
  listMessages,
  type MessageFilter,
  notFound,
  pendingMessages,
  replayMessages,
  revokePreviousSecret,
  rotateSecret,
  TEST_EVENT_TYPE,
  updateEndpoint,
  type WebhookScope,
} from '@stampcard/core';
import { MESSAGE_STATUSES } from '@stampcard/db';
import type { Hono } from 'hono';
import type { AppEnv } from '../../env';
import { EndpointPatch, handOffBacklog, MessageQuery, queueDeliveries } from '../../routes/webhooks/schemas';
import { idOf, utcMinute } from '../lib';
import {
  Act,
  blankless,
  type C,
  Csrf,
  doneAt,
  draftOf,
  type EndpointDraft,
  EndpointFields,
  endpointOptions,
  Flash,
  type Flashes,
  LOG_PAGE,
  localValue,
  noticeOf,
  problemOf,
  readEndpointForm,
  refused,
  Sparkline,
  scopeOf,
  stateOf,
  utcOf,
  type WebhookPageHelpers,
  type WebhookPages,
  withStatus,
} from './common';
import { renderEndpointList } from './endpoints';

export type EndpointView = Awaited<ReturnType<typeof getEndpoint>>;
export type MessageList = Awaited<ReturnType<typeof listMessages>>;

/** The filter of an endpoint's message log, and where its page starts. */
export type LogFilter = MessageFilter & { after?: string };

/**
 * The message log's filter from the query (or a replay form), through the operator API's own schema: times
 * are `datetime-local` values read as UTC.
 */
export function logFilterOf(fields: Record<string, string | undefined>) {
  return MessageQuery.safeParse({
    status: blankless(fields.status),
    eventType: blankless(fields.eventType),
    participantId: blankless(fields.participantId),
    since: utcOf(fields.since),
    until: utcOf(fields.until),
    after: blankless(fields.after),
    limit: LOG_PAGE,
  });
}

/** The filter as form fields: the replay of what it shows, and the next page's link. */
export function filterFields(f: LogFilter): Record<string, string> {
  const out: Record<string, string> = {};
  if (f.status) out.status = f.status;
  if (f.eventType) out.eventType = f.eventType;
  if (f.participantId) out.participantId = f.participantId;
  if (f.since !== undefined) out.since = localValue(f.since);
  if (f.until !== undefined) out.until = localValue(f.until);
  return out;
}

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
        {[...EVENT_TYPES, TEST_EVENT_TYPE].map((t) => (
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

function MessageTable(props: { pages: WebhookPages; messages: MessageList }) {
  const { pages, messages } = props;
  return (
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
  );
}

/** One endpoint: its state and health, its actions, its message log (filtered, paged, replayed), its form. */
export function EndpointPage(
  props: {
    pages: WebhookPages;
    /** Where "All endpoints" leads: the list of the endpoint's account. */
    back: string;
    endpoint: EndpointView;
    health: HealthHour[];
    pending: { pending: number; pendingCapped: boolean };
    messages: MessageList;
    filter: LogFilter;
    /** The change form as it was sent, when it was refused. */
    draft?: EndpointDraft;
  } & Flashes,
) {
  const { pages, endpoint: e, messages, filter } = props;
  const here = `${pages.base}/endpoints/${e.id}`;
  const replayable = filter.status !== 'PENDING';
  const nextPage =
    messages.more && messages.nextAfter
      ? `${here}?${new URLSearchParams({ ...filterFields(filter), after: messages.nextAfter })}`
      : undefined;
  return (
    <pages.Frame title="Webhook endpoint">
      <p>
        <a href={props.back}>All endpoints</a>
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
          <dt>Pending</dt>
          <dd>{props.pending.pendingCapped ? `> ${props.pending.pending}` : props.pending.pending}</dd>
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
        {e.description ? `${e.description}. ` : ''}
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
        </div>
        <form method="post" action={`${here}/delete`} class="inline">
          <Csrf pages={pages} />
          <label class="check" for="delete-confirm">
            <input type="checkbox" id="delete-confirm" name="confirm" value="yes" required /> Delete it and
            its messages
          </label>
          <button type="submit">Delete the endpoint</button>
        </form>
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
        <MessageTable pages={pages} messages={messages} />
        {nextPage ? <a href={nextPage}>Older messages</a> : null}
        {filter.after ? (
          <p>
            <a href={`${here}?${new URLSearchParams(filterFields(filter))}`}>Newest messages</a>
          </p>
        ) : null}
      </section>
      <section aria-labelledby="edit-h" class="card">
        <h2 id="edit-h">Change the endpoint</h2>
        <form method="post" action={here} class="stack">
          <Csrf pages={pages} />
          <EndpointFields values={props.draft ?? draftOf(e)} idPrefix="edit" />
          <button type="submit">Save</button>
        </form>
      </section>
    </pages.Frame>
  );
}

/** The link back to the endpoint's list: the operator's names the endpoint's account. */
async function backOf(c: C, pages: WebhookPages, campaignId: string) {
  if (!pages.operator) return pages.base;
  const accountId = pages.accountId ?? (await getCampaignForOperator(c.get('ctx'), campaignId)).accountId;
  return `${pages.base}?accountId=${encodeURIComponent(accountId)}`;
}

/** An endpoint's page, in the pages' scope (another account's endpoint is not found). */
export async function renderEndpointPage(
  c: C,
  pages: WebhookPages,
  id: string,
  filter: LogFilter & { limit: number },
  extra: Flashes & { draft?: EndpointDraft } = {},
) {
  const ctx = c.get('ctx');
  const scope = scopeOf(pages);
  const endpoint = await getEndpoint(ctx, id, scope);
  const [health, pending, messages, back] = await Promise.all([
    endpointHealth(ctx, [id]),
    pendingMessages(ctx, id),
    listMessages(ctx, id, filter, scope),
    backOf(c, pages, endpoint.campaignId),
  ]);
  return c.html(
    <EndpointPage
      pages={pages}
      back={back}
      endpoint={endpoint}
      health={health.get(id)!}
      pending={pending}
      messages={messages}
      filter={filter}
      {...extra}
    />,
  );
}

/** An endpoint's page showing a refusal; the list when the endpoint itself is not there (or not the scope's). */
const endpointOrList = (
  c: C,
  pages: WebhookPages,
  id: string | undefined,
  extra: Flashes & { draft?: EndpointDraft },
) =>
  (id
    ? renderEndpointPage(c, pages, id, { limit: LOG_PAGE }, extra)
    : Promise.reject(notFound('Webhook endpoint'))
  ).catch(() => renderEndpointList(c, pages, {}, { problem: extra.problem }));

/** What an action on an endpoint did: the notice its page shows next. */
type Outcome = { done: Parameters<typeof doneAt>[1]; n?: number };

/**
 * An endpoint's page (`GET …/endpoints/:id`, its log filtered by the query) and everything done to it: its
 * form, enable, disable, test, rotate, stop the previous secret, delete, replay by filter, recover.
 */
export function registerEndpointPage(app: Hono<AppEnv>, helpers: WebhookPageHelpers) {
  app.get('/webhooks/endpoints/:id', async (c) => {
    const pages = helpers.pagesOf(c);
    const id = idOf(c.req.param('id'));
    const filter = logFilterOf(c.req.query());
    try {
      if (!id) throw notFound('Webhook endpoint');
      if (!filter.success) {
        const page = await renderEndpointPage(
          c,
          pages,
          id,
          { limit: LOG_PAGE },
          { problem: problemOf(filter.error) },
        );
        return withStatus(page, 400);
      }
      return await renderEndpointPage(c, pages, id, filter.data, { notice: noticeOf(c) });
    } catch (err) {
      return refused(c, err, (problem) => renderEndpointList(c, pages, {}, { problem }));
    }
  });

  /** An action on an endpoint: done, then back to its page with a notice; a refusal shown on that page. */
  const onEndpoint =
    (act: (c: C, id: string, scope: WebhookScope) => Promise<Outcome | Response>) => async (c: C) => {
      const pages = helpers.pagesOf(c);
      const id = idOf(c.req.param('id'));
      try {
        if (!id) throw notFound('Webhook endpoint');
        const outcome = await act(c, id, scopeOf(pages));
        if (outcome instanceof Response) return outcome;
        return c.redirect(doneAt(`${pages.base}/endpoints/${id}`, outcome.done, outcome.n), 303);
      } catch (err) {
        return refused(c, err, (problem) => endpointOrList(c, pages, id, { problem }));
      }
    };

  // The form: a refusal draws the page again with what was typed.
  app.post('/webhooks/endpoints/:id', async (c) => {
    const pages = helpers.pagesOf(c);
    const id = idOf(c.req.param('id'));
    const { draft, body } = await readEndpointForm(helpers, c);
    const render = (problem: string) => endpointOrList(c, pages, id, { problem, draft });
    try {
      if (!id) throw notFound('Webhook endpoint');
      const patch = EndpointPatch.safeParse(body);
      if (!patch.success) return withStatus(await render(problemOf(patch.error)), 400);
      const { released, ...handOff } = await updateEndpoint(
        c.get('ctx'),
        id,
        patch.data,
        endpointOptions(c),
        scopeOf(pages),
      );
      await handOffBacklog(c, id, handOff);
      return c.redirect(doneAt(`${pages.base}/endpoints/${id}`, 'saved'), 303);
    } catch (err) {
      return refused(c, err, render);
    }
  });

  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    app.post(
      `/webhooks/endpoints/:id/${verb}`,
      onEndpoint(async (c, id, scope) => {
        const { released, ...handOff } = await updateEndpoint(
          c.get('ctx'),
          id,
          { enabled },
          endpointOptions(c),
          scope,
        );
        await handOffBacklog(c, id, handOff);
        return { done: `${verb}d`, ...(released ? { n: released } : {}) };
      }),
    );
  }

  app.post(
    '/webhooks/endpoints/:id/test',
    onEndpoint(async (c, id, scope) => {
      const { messageId, generation, endpointEnabled } = await createTestMessage(c.get('ctx'), id, scope);
      if (endpointEnabled) await queueDeliveries(c, [{ messageId, generation }]);
      return { done: 'test' };
    }),
  );

  // The new secret is shown on this answer only: the page is drawn here, never redirected to.
  app.post(
    '/webhooks/endpoints/:id/rotate',
    onEndpoint(async (c, id, scope) => {
      const rotated = await rotateSecret(c.get('ctx'), id, undefined, scope);
      const notice = {
        text: 'A new secret signs from now on; the previous one signs beside it for 24 hours.',
        secret: rotated.secret,
      };
      return renderEndpointPage(c, helpers.pagesOf(c), id, { limit: LOG_PAGE }, { notice });
    }),
  );

  app.post(
    '/webhooks/endpoints/:id/revoke-previous',
    onEndpoint(async (c, id, scope) => {
      await revokePreviousSecret(c.get('ctx'), id, scope);
      return { done: 'revoked' };
    }),
  );

  app.post(
    '/webhooks/endpoints/:id/delete',
    onEndpoint(async (c, id, scope) => {
      if ((await helpers.formOf(c)).confirm !== 'yes') {
        throw new DomainError('VALIDATION_ERROR', 'Not deleted: tick "Delete it and its messages" first.');
      }
      const pages = helpers.pagesOf(c);
      const back = await backOf(c, pages, (await getEndpoint(c.get('ctx'), id, scope)).campaignId);
      const { next } = await deleteEndpoint(c.get('ctx'), id, endpointOptions(c), scope);
      await handOffBacklog(c, id, { scheduled: [], next });
      return c.redirect(doneAt(back, 'deleted'), 303);
    }),
  );

  /** Replays what a filter matches (FAILED by default): the log's current filter, or "failed since" a time. */
  const replay = async (
    c: C,
    id: string,
    scope: WebhookScope,
    fields: Record<string, string | undefined>,
  ) => {
    const filter = logFilterOf(fields);
    if (!filter.success) throw new DomainError('VALIDATION_ERROR', problemOf(filter.error));
    const { limit: _limit, after: _after, status, ...rest } = filter.data;
    if (status === 'PENDING') {
      throw new DomainError('VALIDATION_ERROR', 'Pending messages are on their way already.');
    }
    const { scheduled, replayed, endpointEnabled } = await replayMessages(
      c.get('ctx'),
      id,
      { ...rest, ...(status ? { status } : {}) },
      scope,
    );
    if (endpointEnabled) await queueDeliveries(c, scheduled);
    return replayed;
  };

  app.post(
    '/webhooks/endpoints/:id/replay',
    onEndpoint(async (c, id, scope) => ({
      done: 'replayed',
      n: await replay(c, id, scope, await helpers.formOf(c)),
    })),
  );

  app.post(
    '/webhooks/endpoints/:id/recover',
    onEndpoint(async (c, id, scope) => {
      const since = (await helpers.formOf(c)).since;
      if (!since) {
        throw new DomainError(
          'VALIDATION_ERROR',
          'Say since when: the failed messages made from then on are delivered again.',
        );
      }
      return { done: 'recovered', n: await replay(c, id, scope, { status: 'FAILED', since }) };
    }),
  );
}
