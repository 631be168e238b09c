/** @jsxImportSource hono/jsx */
import {
  approveParticipantReward,
  campaignForReview,
  DomainError,
  listWaitingRewards,
  listWaitingSubmissions,
  removeParticipantReward,
  reviewFormSubmission,
  type WaitingPage,
} from '@stampcard/core';
import type { Context, Hono } from 'hono';
import type { AppEnv } from '../env';
import { ERROR_STATUS } from '../lib/error-status';
import { type ConsoleHelpers, idOf, pagedOn, utcMinute } from './lib';
import { CONSOLE_PATH, CSRF_FIELD, Layout } from './views';

export const REVIEWS_PATH = `${CONSOLE_PATH}/reviews`;

/** Most items each list of the page shows at once (each pages on with its own cursor). */
const PAGE = 25;

type C = Context<AppEnv>;
type Cursors = { forms?: string; rewards?: string };

/** One click: a form of its own, posting the decision with the session's CSRF token. */
function Decide(props: { action: string; label: string; csrf: string; campaignId: string }) {
  return (
    <form method="post" action={props.action} class="inline">
      <input type="hidden" name={CSRF_FIELD} value={props.csrf} />
      <input type="hidden" name="campaignId" value={props.campaignId} />
      <button type="submit">{props.label}</button>
    </form>
  );
}

function WaitingTable(props: {
  title: string;
  id: string;
  page: WaitingPage;
  next?: string;
  empty: string;
  /** What is decided on: the path of its decisions and the word its buttons name it by. */
  kind: 'forms' | 'rewards';
  noun: string;
  csrf: string;
}) {
  const { items } = props.page;
  return (
    <section class="table-wrap" tabindex={0} aria-labelledby={props.id}>
      <h2 id={props.id}>{props.title}</h2>
      {items.length === 0 ? (
        <p class="muted">{props.empty}</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Since (UTC)</th>
              <th scope="col">Campaign</th>
              <th scope="col">Participant</th>
              <th scope="col">Reward</th>
              <th scope="col">Decision</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <tr>
                <td>{utcMinute(item.createdAt)}</td>
                <td>{item.campaignName}</td>
                <td>
                  {item.participantEmail}
                  {item.answers !== null ? <div class="muted answers">{item.answers}</div> : null}
                </td>
                <td>{item.rewardTitle ?? '(untitled reward)'}</td>
                <td>
                  {(['approve', 'reject'] as const).map((decision) => (
                    <Decide
                      action={`${REVIEWS_PATH}/${props.kind}/${item.id}/${decision}`}
                      label={`${decision === 'approve' ? 'Approve' : 'Reject'} ${item.participantEmail}'s ${props.noun}`}
                      csrf={props.csrf}
                      campaignId={item.campaignId}
                    />
                  ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {props.next ? <a href={props.next}>{`Next: ${props.title.toLowerCase()}`}</a> : null}
    </section>
  );
}

export function ReviewsPage(props: {
  csrf: string;
  forms: WaitingPage;
  rewards: WaitingPage;
  cursors: Cursors;
  problem?: string;
}) {
  const { csrf, cursors } = props;
  const next = (list: keyof Cursors, page: WaitingPage) =>
    page.more && page.nextId ? pagedOn(REVIEWS_PATH, {}, cursors, list, page.nextId) : undefined;
  return (
    <Layout title="Reviews" current="reviews" csrf={csrf}>
      <h1>Reviews</h1>
      <p class="muted">
        What waits for an operator in every campaign, oldest first. Each decision is one click.
      </p>
      {props.problem ? (
        <p class="error" role="alert">
          {props.problem}
        </p>
      ) : null}
      <WaitingTable
        title="Form submissions"
        id="forms-h"
        page={props.forms}
        next={next('forms', props.forms)}
        empty="No form submission waits for review."
        kind="forms"
        noun="form"
        csrf={csrf}
      />
      <WaitingTable
        title="Rewards awaiting approval"
        id="rewards-h"
        page={props.rewards}
        next={next('rewards', props.rewards)}
        empty="No reward waits for approval."
        kind="rewards"
        noun="reward"
        csrf={csrf}
      />
    </Layout>
  );
}

async function reviewsView(c: C, cursors: Cursors) {
  const ctx = c.get('ctx');
  const [forms, rewards] = await Promise.all([
    listWaitingSubmissions(ctx, { limit: PAGE, ...(cursors.forms ? { nextId: cursors.forms } : {}) }),
    listWaitingRewards(ctx, { limit: PAGE, ...(cursors.rewards ? { nextId: cursors.rewards } : {}) }),
  ]);
  return { forms, rewards, cursors };
}

/**
 * A decision: the campaign the form names (404 when absent), then core's own review service, which checks the
 * item is that campaign's and still waiting. A refusal of core's is shown on the page with its status.
 */
function decide(
  helpers: ConsoleHelpers,
  act: (c: C, campaignId: string, itemId: string) => Promise<unknown>,
) {
  return async (c: C) => {
    const itemId = idOf(c.req.param('itemId'));
    const campaignId = idOf((await helpers.formOf(c)).campaignId);
    try {
      if (!itemId || !campaignId)
        throw new DomainError('VALIDATION_ERROR', 'That is not an item of a campaign.');
      await act(c, campaignId, itemId);
      return c.redirect(REVIEWS_PATH, 303);
    } catch (err) {
      if (!(err instanceof DomainError) || err.code === 'UNAVAILABLE') throw err;
      const status = ERROR_STATUS[err.code] as 400 | 403 | 404 | 409 | 422;
      const view = await reviewsView(c, {});
      return c.html(<ReviewsPage csrf={helpers.csrfOf(c)} {...view} problem={err.message} />, status);
    }
  };
}

/** `GET /console/reviews` and its one-click decisions on form submissions and rewards awaiting approval. */
export function registerReviews(app: Hono<AppEnv>, helpers: ConsoleHelpers) {
  app.get('/reviews', async (c) => {
    const cursors = { forms: idOf(c.req.query('forms')), rewards: idOf(c.req.query('rewards')) };
    return c.html(<ReviewsPage csrf={helpers.csrfOf(c)} {...(await reviewsView(c, cursors))} />);
  });
  const campaign = (c: C, campaignId: string) => campaignForReview(c.get('ctx'), campaignId);
  app.post(
    '/reviews/forms/:itemId/approve',
    decide(helpers, async (c, cid, id) =>
      reviewFormSubmission(c.get('ctx'), await campaign(c, cid), id, true),
    ),
  );
  app.post(
    '/reviews/forms/:itemId/reject',
    decide(helpers, async (c, cid, id) =>
      reviewFormSubmission(c.get('ctx'), await campaign(c, cid), id, false),
    ),
  );
  app.post(
    '/reviews/rewards/:itemId/approve',
    decide(helpers, async (c, cid, id) => approveParticipantReward(c.get('ctx'), await campaign(c, cid), id)),
  );
  app.post(
    '/reviews/rewards/:itemId/reject',
    decide(helpers, async (c, cid, id) => removeParticipantReward(c.get('ctx'), await campaign(c, cid), id)),
  );
}
