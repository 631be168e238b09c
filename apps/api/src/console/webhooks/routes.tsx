/** @jsxImportSource hono/jsx */
import {
  accountEndpoints,
  createEndpoint,
  createTestMessage,
  DomainError,
  deleteEndpoint,
  endpointHealth,
  eventCatalog,
  getCampaignForOperator,
  getEndpoint,
  getMessage,
  listAccounts,
  listCampaignsForOperator,
  listMessages,
  messageBody,
  replayMessage,
  replayMessages,
  revokePreviousSecret,
  rotateSecret,
  showAccount,
  updateEndpoint,
  validationError,
  type WebhookScope,
} from '@stampcard/core';
import type { Context, Hono } from 'hono';
import type { z } from 'zod';
import type { AppEnv } from '../../env';
import { ERROR_STATUS } from '../../lib/error-status';
import {
  EndpointBody,
  EndpointPatch,
  handOffBacklog,
  MessageQuery,
  queueDeliveries,
} from '../../routes/webhooks/schemas';
import { type ConsoleHelpers, idOf, pagedOn } from '../lib';
import {
  AccountPicker,
  CatalogPage,
  EndpointPage,
  EndpointsPage,
  type LogFilter,
  MessagePageView,
  type Notice,
  type WebhookPages,
} from './views';

type C = Context<AppEnv>;

/** Messages one page of an endpoint's log shows. */
const LOG_PAGE = 25;
/** Accounts the operator's first page lists at once; campaigns an account's form offers. */
const PAGE = 50;
const CAMPAIGNS_OFFERED = 100;

export type WebhookPageHelpers = ConsoleHelpers & {
  /** Where the pages are and whose they are, for this request. */
  pagesOf: (c: C) => WebhookPages;
};

/** The core services' scope of the pages: a business's account (and campaign), or everyone's. */
const scopeOf = (pages: WebhookPages): WebhookScope =>
  pages.operator
    ? {}
    : { accountId: pages.accountId, ...(pages.campaignId ? { campaignId: pages.campaignId } : {}) };

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

function noticeOf(c: C): Notice | undefined {
  const done = c.req.query('done');
  const say = done !== undefined && Object.hasOwn(NOTICES, done) ? NOTICES[done] : undefined;
  if (!say) return undefined;
  const n = Number.parseInt(c.req.query('n') ?? '0', 10);
  return { text: say(Number.isSafeInteger(n) && n >= 0 ? n : 0) };
}

const after = (path: string, done: string, n?: number) =>
  `${path}${path.includes('?') ? '&' : '?'}done=${done}${n === undefined ? '' : `&n=${n}`}`;

/** A schema's refusal in a sentence, field by field. */
const problemOf = (error: z.ZodError) =>
  `Not changed: ${error.issues.map((i) => `${i.path.join('.') || 'form'} ${i.message}`).join('; ')}`;

/** A `datetime-local` value read as UTC, in ms; undefined when empty; NaN (refused by the schema) when bad. */
const utcOf = (value: string | undefined) =>
  value === undefined || value === ''
    ? undefined
    : Date.parse(`${value.length === 16 ? `${value}:00` : value}Z`);

const blankless = (value: string | undefined) => (value === '' ? undefined : value);

/** The message log's filter from the query (or a replay form), through the operator API's own schema. */
function logFilterOf(fields: Record<string, string | undefined>) {
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

/** An endpoint's fields from its form, as the operator API's body would carry them. */
async function endpointFields(helpers: WebhookPageHelpers, c: C) {
  const form = await helpers.formOf(c);
  const rate = form.rateLimit?.trim();
  return {
    url: form.url,
    kind: form.kind,
    description: form.description ?? '',
    rateLimit: rate === undefined || rate === '' ? null : Number(rate),
    eventTypes: await helpers.formListOf(c, 'eventTypes'),
  };
}

/**
 * The webhook pages (endpoints with their health, the message log, a message's attempts, the event catalog),
 * mounted by the console for the operator and by the portal for one business. Every change goes through the
 * operator API's own schemas and the core services the API uses, in the pages' scope.
 */
export function registerWebhookPages(app: Hono<AppEnv>, helpers: WebhookPageHelpers) {
  const opts = (c: C) => ({
    allowPrivateNetworks: c.get('deps').allowPrivateNetworks,
    backlogBatch: c.get('deps').webhookBacklogBatch,
  });

  async function listView(c: C, pages: WebhookPages, accountId: string) {
    const ctx = c.get('ctx');
    const [account, campaigns, list] = await Promise.all([
      showAccount(ctx, accountId),
      pages.campaignId
        ? Promise.resolve(undefined)
        : listCampaignsForOperator(ctx, accountId, { limit: CAMPAIGNS_OFFERED }),
      accountEndpoints(
        ctx,
        { accountId, ...(pages.campaignId ? { campaignId: pages.campaignId } : {}) },
        { after: idOf(c.req.query('after')) },
      ),
    ]);
    const offered = campaigns
      ? campaigns.campaigns.map((x) => ({ id: x.id, name: x.name }))
      : [{ id: pages.campaignId!, name: pages.campaignId! }];
    return { accountName: account.name, campaigns: offered, list };
  }

  async function endpointView(c: C, pages: WebhookPages, id: string, filter: LogFilter & { limit: number }) {
    const ctx = c.get('ctx');
    const scope = scopeOf(pages);
    const endpoint = await getEndpoint(ctx, id, scope);
    const [health, messages] = await Promise.all([
      endpointHealth(ctx, [id]),
      listMessages(ctx, id, filter, scope),
    ]);
    return { endpoint, health: health.get(id)!, messages };
  }

  /** A refusal of core's (or a schema's) shown on the page it came from, with its status; nothing changed. */
  async function refused(c: C, err: unknown, render: (problem: string) => Promise<Response>) {
    if (!(err instanceof DomainError) || err.code === 'UNAVAILABLE') throw err;
    const status = ERROR_STATUS[err.code] as 400 | 403 | 404 | 409 | 422;
    const res = await render(err.message).catch(() => undefined);
    return res ? new Response(res.body, { status, headers: res.headers }) : c.text(err.message, status);
  }

  const listPage = async (c: C, pages: WebhookPages, extra: { notice?: Notice; problem?: string } = {}) => {
    if (!pages.accountId) {
      const from = idOf(c.req.query('after'));
      const accounts = await listAccounts(c.get('ctx'), { limit: PAGE, ...(from ? { nextId: from } : {}) });
      const next =
        accounts.more && accounts.nextId ? pagedOn(pages.base, {}, {}, 'after', accounts.nextId) : undefined;
      return c.html(<AccountPicker pages={pages} accounts={accounts.accounts} next={next} {...extra} />);
    }
    return c.html(
      <EndpointsPage pages={pages} {...(await listView(c, pages, pages.accountId))} {...extra} />,
    );
  };

  const endpointPage = async (
    c: C,
    pages: WebhookPages,
    id: string,
    filter: LogFilter & { limit: number },
    extra: { notice?: Notice; problem?: string } = {},
  ) => {
    const view = await endpointView(c, pages, id, filter);
    const withAccount = {
      ...pages,
      accountId: pages.accountId ?? (await accountOf(c, view.endpoint.campaignId)),
    };
    return c.html(<EndpointPage pages={withAccount} {...view} filter={filter} {...extra} />);
  };

  /** The account of a campaign, for the operator's link back to that account's endpoints. */
  const accountOf = async (c: C, campaignId: string) =>
    (await getCampaignForOperator(c.get('ctx'), campaignId)).accountId;

  app.get('/webhooks', async (c) => {
    const pages = helpers.pagesOf(c);
    try {
      return await listPage(c, pages, { notice: noticeOf(c) });
    } catch (err) {
      return refused(c, err, (problem) => listPage(c, { ...pages, accountId: undefined }, { problem }));
    }
  });

  app.get('/webhooks/event-types', (c) =>
    c.html(<CatalogPage pages={helpers.pagesOf(c)} catalog={eventCatalog()} />),
  );

  app.post('/webhooks/endpoints', async (c) => {
    const base = helpers.pagesOf(c);
    const form = await helpers.formOf(c);
    const pages = { ...base, accountId: base.accountId ?? idOf(form.accountId) };
    const render = (problem: string) => listPage(c, pages, { problem });
    try {
      const campaignId = idOf(form.campaignId);
      if (!pages.accountId || !campaignId)
        throw new DomainError('VALIDATION_ERROR', 'Pick a campaign of the account.');
      const body = EndpointBody.safeParse(await endpointFields(helpers, c));
      if (!body.success)
        return c.html(
          <EndpointsPage
            pages={pages}
            {...(await listView(c, pages, pages.accountId))}
            problem={problemOf(body.error)}
          />,
          400,
        );
      const created = await createEndpoint(c.get('ctx'), campaignId, body.data, opts(c), {
        accountId: pages.accountId,
        ...(pages.campaignId ? { campaignId: pages.campaignId } : {}),
      });
      return listPage(c, pages, {
        notice: { text: `Endpoint ${created.url} added.`, secret: created.secret },
      });
    } catch (err) {
      return refused(c, err, render);
    }
  });

  app.get('/webhooks/endpoints/:id', async (c) => {
    const pages = helpers.pagesOf(c);
    const id = idOf(c.req.param('id'));
    const filter = logFilterOf(c.req.query());
    try {
      if (!id) throw new DomainError('NOT_FOUND', 'No such endpoint.');
      if (!filter.success) {
        return await endpointPage(
          c,
          pages,
          id,
          { limit: LOG_PAGE },
          { problem: problemOf(filter.error) },
        ).then((res) => new Response(res.body, { status: 400, headers: res.headers }));
      }
      return await endpointPage(c, pages, id, filter.data, { notice: noticeOf(c) });
    } catch (err) {
      return refused(c, err, (problem) => listPage(c, pages, { problem }));
    }
  });

  /** An action on an endpoint: done, then back to its page with a notice; a refusal shown on that page. */
  const onEndpoint =
    (act: (c: C, id: string, scope: WebhookScope) => Promise<{ done: string; n?: number } | Response>) =>
    async (c: C) => {
      const pages = helpers.pagesOf(c);
      const id = idOf(c.req.param('id'));
      try {
        if (!id) throw new DomainError('NOT_FOUND', 'No such endpoint.');
        const outcome = await act(c, id, scopeOf(pages));
        if (outcome instanceof Response) return outcome;
        const path = outcome.done === 'deleted' ? pages.base : `${pages.base}/endpoints/${id}`;
        return c.redirect(after(path, outcome.done, outcome.n), 303);
      } catch (err) {
        return refused(c, err, (problem) =>
          id ? endpointPage(c, pages, id, { limit: LOG_PAGE }, { problem }) : listPage(c, pages, { problem }),
        );
      }
    };

  app.post(
    '/webhooks/endpoints/:id',
    onEndpoint(async (c, id, scope) => {
      const patch = EndpointPatch.safeParse(await endpointFields(helpers, c));
      if (!patch.success) throw validationError([], problemOf(patch.error));
      const { released, ...handOff } = await updateEndpoint(c.get('ctx'), id, patch.data, opts(c), scope);
      await handOffBacklog(c, id, handOff);
      return { done: 'saved' };
    }),
  );

  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    app.post(
      `/webhooks/endpoints/:id/${verb}`,
      onEndpoint(async (c, id, scope) => {
        const { released, ...handOff } = await updateEndpoint(c.get('ctx'), id, { enabled }, opts(c), scope);
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

  app.post(
    '/webhooks/endpoints/:id/rotate',
    onEndpoint(async (c, id, scope) => {
      const rotated = await rotateSecret(c.get('ctx'), id, undefined, scope);
      const notice = {
        text: 'A new secret signs from now on; the previous one signs beside it for 24 hours.',
        secret: rotated.secret,
      };
      return endpointPage(c, helpers.pagesOf(c), id, { limit: LOG_PAGE }, { notice });
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
      const { next } = await deleteEndpoint(c.get('ctx'), id, opts(c), scope);
      await handOffBacklog(c, id, { scheduled: [], next });
      return { done: 'deleted' };
    }),
  );

  /** Replays what a filter matches (FAILED by default): the log's current filter, or "failed since" a time. */
  const replay = (c: C, id: string, scope: WebhookScope, fields: Record<string, string | undefined>) => {
    const filter = logFilterOf(fields);
    if (!filter.success) throw validationError([], problemOf(filter.error));
    const { limit: _limit, after: _after, status, ...rest } = filter.data;
    if (status === 'PENDING')
      throw new DomainError('VALIDATION_ERROR', 'Pending messages are on their way already.');
    return replayMessages(c.get('ctx'), id, { ...rest, ...(status ? { status } : {}) }, scope).then(
      async ({ scheduled, replayed, endpointEnabled }) => {
        if (endpointEnabled) await queueDeliveries(c, scheduled);
        return replayed;
      },
    );
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
      if (!since)
        throw new DomainError(
          'VALIDATION_ERROR',
          'Say since when: the failed messages made from then on are delivered again.',
        );
      return { done: 'recovered', n: await replay(c, id, scope, { status: 'FAILED', since }) };
    }),
  );

  const messagePage = async (
    c: C,
    pages: WebhookPages,
    id: string,
    extra: { notice?: Notice; problem?: string },
  ) => {
    const scope = scopeOf(pages);
    const [message, body] = await Promise.all([
      getMessage(c.get('ctx'), id, scope),
      messageBody(c.get('ctx'), id, scope),
    ]);
    return c.html(<MessagePageView pages={pages} message={message} body={body} {...extra} />);
  };

  app.get('/webhooks/messages/:id', async (c) => {
    const pages = helpers.pagesOf(c);
    const id = idOf(c.req.param('id'));
    try {
      if (!id) throw new DomainError('NOT_FOUND', 'No such message.');
      return await messagePage(c, pages, id, { notice: noticeOf(c) });
    } catch (err) {
      return refused(c, err, (problem) => listPage(c, pages, { problem }));
    }
  });

  app.post('/webhooks/messages/:id/replay', async (c) => {
    const pages = helpers.pagesOf(c);
    const id = idOf(c.req.param('id'));
    try {
      if (!id) throw new DomainError('NOT_FOUND', 'No such message.');
      const { scheduled } = await replayMessage(c.get('ctx'), id, scopeOf(pages));
      await queueDeliveries(c, [scheduled]);
      return c.redirect(after(`${pages.base}/messages/${id}`, 'replayed-one'), 303);
    } catch (err) {
      return refused(c, err, (problem) =>
        id ? messagePage(c, pages, id, { problem }) : listPage(c, pages, { problem }),
      );
    }
  });
}
