/** @jsxImportSource hono/jsx */
import {
  type AuditEntryView,
  acceptLoyaltyAction,
  approveParticipantReward,
  badStringReason,
  campaignForReview,
  DomainError,
  entityHistory,
  fulfilCampaignReward,
  listParticipants,
  listRewards,
  type ParticipantView,
  removeParticipantReward,
  requireParticipant,
  setFraudRiskLevel,
  showParticipant,
  updateParticipant,
  validationError,
} from '@stampcard/core';
import { FRAUD_RISK_LEVELS } from '@stampcard/db';
import type { Context, Hono } from 'hono';
import type { z } from 'zod';
import type { AppEnv } from '../env';
import { ERROR_STATUS } from '../lib/error-status';
import { exportResponse, loyaltyActionsExport, participantsExport } from '../lib/exports';
import { parseJsonBody } from '../lib/parse-body';
import { UpdateParticipantBody } from '../routes/v1/participants/schemas';
import { History } from './history';
import { type ConsoleHelpers, idOf, pagedOn, utcMinute } from './lib';
import { CONSOLE_PATH, CSRF_FIELD, Layout } from './views';

export const PARTICIPANTS_PATH = `${CONSOLE_PATH}/participants`;

/** Participants one page lists; rewards a participant page offers for a manual action. */
const PAGE = 25;
const REWARDS_OFFERED = 100;
/** The longest search the form takes: a prefix of an email or a name. */
const MAX_SEARCH = 100;

type C = Context<AppEnv>;
type Filter = { campaignId?: string; q?: string; risk?: string; winner?: string };
type Problem = { problem?: string; notice?: string };
type Reward = { id: string; title: string | null };

const participantPath = (campaignId: string, id: string) =>
  `${PARTICIPANTS_PATH}/${encodeURIComponent(campaignId)}/${encodeURIComponent(id)}`;

const fullName = (p: Pick<ParticipantView, 'firstName' | 'lastName'>) =>
  [p.firstName, p.lastName].filter(Boolean).join(' ') || '–';

function Flash(props: Problem) {
  return (
    <>
      {props.problem ? (
        <p class="error" role="alert">
          {props.problem}
        </p>
      ) : null}
      {props.notice ? (
        <p class="notice" role="status">
          {props.notice}
        </p>
      ) : null}
    </>
  );
}

function SearchForm(props: { filter: Filter }) {
  const f = props.filter;
  return (
    <form method="get" action={PARTICIPANTS_PATH} class="inline" aria-label="Find participants">
      <label for="p-campaign">Campaign id</label>
      <input id="p-campaign" name="campaignId" required maxlength={64} value={f.campaignId ?? ''} />
      <label for="p-q">Email or name starts with</label>
      <input id="p-q" name="q" type="search" maxlength={MAX_SEARCH} value={f.q ?? ''} />
      <label for="p-risk">Risk</label>
      <select id="p-risk" name="risk">
        <option value="">Any</option>
        {FRAUD_RISK_LEVELS.map((level) => (
          <option value={level} selected={f.risk === level}>
            {level}
          </option>
        ))}
      </select>
      <label for="p-winner">Winner</label>
      <select id="p-winner" name="winner">
        <option value="">Any</option>
        <option value="true" selected={f.winner === 'true'}>
          Yes
        </option>
        <option value="false" selected={f.winner === 'false'}>
          No
        </option>
      </select>
      <button type="submit">Find</button>
    </form>
  );
}

export function ParticipantsPage(props: {
  csrf: string;
  filter: Filter;
  campaignName?: string;
  page?: Awaited<ReturnType<typeof listParticipants>>;
  problem?: string;
}) {
  const { filter, page } = props;
  const fixed = Object.fromEntries(Object.entries(filter).filter(([, v]) => v)) as Record<string, string>;
  return (
    <Layout title="Participants" current="participants" csrf={props.csrf}>
      <h1>Participants{props.campaignName ? `: ${props.campaignName}` : ''}</h1>
      <Flash problem={props.problem} />
      <SearchForm filter={filter} />
      {page && filter.campaignId ? (
        <p>
          <a
            href={`${PARTICIPANTS_PATH}/export?campaignId=${encodeURIComponent(filter.campaignId)}`}
            download
          >
            Export every participant (CSV)
          </a>{' '}
          ·{' '}
          <a
            href={`${PARTICIPANTS_PATH}/export-actions?campaignId=${encodeURIComponent(filter.campaignId)}`}
            download
          >
            Export every loyalty action (CSV)
          </a>{' '}
          ·{' '}
          <a href={`${CONSOLE_PATH}/imports?campaignId=${encodeURIComponent(filter.campaignId)}`}>
            Import participants
          </a>
        </p>
      ) : null}
      {page ? (
        <section class="table-wrap" tabindex={0} aria-label="Participants found">
          {page.participants.length === 0 ? (
            <p class="muted">No participant matches.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Name</th>
                  <th scope="col">Risk</th>
                  <th scope="col" class="n">
                    Loyalty actions
                  </th>
                  <th scope="col">Winner</th>
                  <th scope="col">Joined (UTC)</th>
                </tr>
              </thead>
              <tbody>
                {page.participants.map((p) => (
                  <tr>
                    <th scope="row">
                      <a href={participantPath(filter.campaignId!, p.id)}>{p.email}</a>
                    </th>
                    <td>{fullName(p)}</td>
                    <td class={p.fraudRiskLevel === 'HIGH' ? 'bad' : undefined}>{p.fraudRiskLevel}</td>
                    <td class="n">{p.loyaltyActionCount}</td>
                    <td>{p.isWinner ? 'Yes' : 'No'}</td>
                    <td>{utcMinute(p.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {page.more && page.nextId ? (
            <a href={pagedOn(PARTICIPANTS_PATH, fixed, {}, 'after', page.nextId)}>Next participants</a>
          ) : null}
        </section>
      ) : (
        <p class="muted">
          Name a campaign (its id is on the Programs page) to list and search its participants.
        </p>
      )}
    </Layout>
  );
}

function Act(props: { action: string; label: string; csrf: string }) {
  return (
    <form method="post" action={props.action} class="inline">
      <input type="hidden" name={CSRF_FIELD} value={props.csrf} />
      <button type="submit">{props.label}</button>
    </form>
  );
}

export function ParticipantPage(
  props: {
    csrf: string;
    campaignId: string;
    participant: ParticipantView;
    rewards: Reward[];
    history?: AuditEntryView[];
  } & Problem,
) {
  const { csrf, participant: p, campaignId } = props;
  const here = participantPath(campaignId, p.id);
  const title = (rewardId: string) => props.rewards.find((r) => r.id === rewardId)?.title ?? rewardId;
  const counts = Object.entries(p.loyaltyActionCountPerReward ?? {});
  const card = (label: string, value: string | number, cls?: string) => (
    <div>
      <dt>{label}</dt>
      <dd class={cls}>{value}</dd>
    </div>
  );
  return (
    <Layout title="Participant" current="participants" csrf={csrf}>
      <p>
        <a href={`${PARTICIPANTS_PATH}?campaignId=${encodeURIComponent(campaignId)}`}>All participants</a>
      </p>
      <h1 class="word">
        {p.email} <span class="muted">({fullName(p)})</span>
      </h1>
      <Flash problem={props.problem} notice={props.notice} />
      <dl class="cards">
        {card('Loyalty actions', p.loyaltyActionCount)}
        {card('This month', p.monthlyLoyaltyActionCount)}
        {card('Rank', p.rank ?? '–')}
        {card('Rank this month', p.monthlyRank ?? '–')}
        {card(
          'Risk',
          `${p.fraudRiskLevel} (${p.fraudReasonCode})`,
          p.fraudRiskLevel === 'HIGH' ? 'word bad' : 'word',
        )}
        {card('Winner', p.isWinner ? 'Yes' : 'No', 'word')}
      </dl>
      <section class="table-wrap" tabindex={0} aria-labelledby="counts-h">
        <h2 id="counts-h">Counts per reward</h2>
        {counts.length === 0 ? (
          <p class="muted">No loyalty action yet.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Reward</th>
                <th scope="col" class="n">
                  Loyalty actions
                </th>
              </tr>
            </thead>
            <tbody>
              {counts.map(([rewardId, n]) => (
                <tr>
                  <th scope="row">{title(rewardId)}</th>
                  <td class="n">{n}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section class="table-wrap" tabindex={0} aria-labelledby="rewards-h">
        <h2 id="rewards-h">Rewards earned</h2>
        {(p.rewards ?? []).length === 0 ? <p class="muted">None yet.</p> : null}
        {p.moreRewards ? (
          <p class="muted">
            The newest {p.rewards?.length} of {p.rewardCount}.
          </p>
        ) : null}
        {(p.rewards ?? []).length > 0 ? (
          <table>
            <thead>
              <tr>
                <th scope="col">Reward</th>
                <th scope="col">Status</th>
                <th scope="col">Earned (UTC)</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {(p.rewards ?? []).map((r) => (
                <tr>
                  <th scope="row">{title(r.rewardId)}</th>
                  <td>{r.status}</td>
                  <td>{utcMinute(r.createdAt)}</td>
                  <td>
                    <div class="actions">
                      {!r.approved ? (
                        <Act action={`${here}/rewards/${r.id}/approve`} label="Approve" csrf={csrf} />
                      ) : null}
                      {r.approved && !r.isFulfilled ? (
                        <Act action={`${here}/rewards/${r.id}/fulfil`} label="Mark fulfilled" csrf={csrf} />
                      ) : null}
                      {!r.approved ? (
                        <Act action={`${here}/rewards/${r.id}/delete`} label="Delete" csrf={csrf} />
                      ) : null}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </section>
      <section class="card" aria-labelledby="action-h">
        <h2 id="action-h">Record a loyalty action by hand</h2>
        <form method="post" action={`${here}/loyalty-action`} class="inline">
          <input type="hidden" name={CSRF_FIELD} value={csrf} />
          <label for="action-reward">Reward</label>
          <select id="action-reward" name="rewardId">
            {props.rewards.map((r) => (
              <option value={r.id}>{r.title ?? r.id}</option>
            ))}
          </select>
          <button type="submit">Record it</button>
        </form>
      </section>
      <section class="card" aria-labelledby="risk-h">
        <h2 id="risk-h">Risk level</h2>
        <form method="post" action={`${here}/risk`} class="inline">
          <input type="hidden" name={CSRF_FIELD} value={csrf} />
          <label for="risk-level">Level</label>
          <select id="risk-level" name="level">
            {FRAUD_RISK_LEVELS.map((level) => (
              <option value={level} selected={p.fraudRiskLevel === level}>
                {level}
              </option>
            ))}
          </select>
          <button type="submit">Set by hand</button>
        </form>
      </section>
      <section class="card" aria-labelledby="edit-h">
        <h2 id="edit-h">Name, notes and metadata</h2>
        <form method="post" action={here} class="stack">
          <input type="hidden" name={CSRF_FIELD} value={csrf} />
          <label for="edit-first">First name</label>
          <input id="edit-first" name="firstName" maxlength={255} value={p.firstName ?? ''} />
          <label for="edit-last">Last name</label>
          <input id="edit-last" name="lastName" maxlength={255} value={p.lastName ?? ''} />
          <label for="edit-notes">Notes</label>
          <textarea id="edit-notes" name="notes" rows={3}>
            {p.notes ?? ''}
          </textarea>
          <label for="edit-metadata">Metadata (a JSON object; a key left out is deleted)</label>
          <textarea id="edit-metadata" name="metadata" rows={6} class="mono">
            {JSON.stringify(p.metadata, null, 2)}
          </textarea>
          <button type="submit">Save</button>
        </form>
      </section>
      {props.history ? <History entries={props.history} what="participant" /> : null}
    </Layout>
  );
}

/** The list's filter from the query; a value it cannot take is a problem to show, never a 500. */
function filterOf(c: C): { filter: Filter; problem?: string } {
  const q = c.req.query();
  const filter: Filter = {
    campaignId: q.campaignId ? idOf(q.campaignId) : undefined,
    q: q.q?.trim() ? q.q.trim().slice(0, MAX_SEARCH) : undefined,
    risk: (FRAUD_RISK_LEVELS as readonly string[]).includes(q.risk ?? '') ? q.risk : undefined,
    winner: q.winner === 'true' || q.winner === 'false' ? q.winner : undefined,
  };
  if (q.campaignId && !filter.campaignId) return { filter, problem: 'That is not a campaign id.' };
  if (q.q && badStringReason(q.q)) {
    return { filter: { ...filter, q: undefined }, problem: 'The search has a character no name holds.' };
  }
  return { filter };
}

/** A problem shown on the page with its status: a refusal of core's, or of the console's own checks. */
const statusOf = (err: DomainError) => ERROR_STATUS[err.code] as 400 | 403 | 404 | 409 | 422;

/** The metadata the textarea holds, as the patch that makes the stored metadata exactly that. */
function metadataPatch(text: string | undefined, before: Record<string, unknown>) {
  if (text === undefined) return undefined;
  const parsed = parseJsonBody(text.trim() === '' ? '{}' : text, () =>
    validationError([{ location: 'body', param: 'metadata', value: null, msg: 'must be a JSON object' }]),
  );
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw validationError([
      { location: 'body', param: 'metadata', value: null, msg: 'must be a JSON object' },
    ]);
  }
  const patch: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(before)) if (!Object.hasOwn(parsed, key)) patch[key] = null;
  for (const [key, value] of Object.entries(parsed)) patch[key] = value;
  return { ...patch };
}

const problemOf = (error: z.ZodError) =>
  `Not changed: ${error.issues.map((i) => `${i.path.join('.') || 'form'} ${i.message}`).join('; ')}`;

/** `GET /console/participants` and a participant's page, with its changes (the API's own services). */
export function registerParticipants(app: Hono<AppEnv>, helpers: ConsoleHelpers) {
  app.get('/participants/export', async (c) => {
    const campaign = await campaignForReview(c.get('ctx'), idOf(c.req.query('campaignId')) ?? '');
    return exportResponse(c, participantsExport(campaign.id), 'csv');
  });

  app.get('/participants/export-actions', async (c) => {
    const campaign = await campaignForReview(c.get('ctx'), idOf(c.req.query('campaignId')) ?? '');
    return exportResponse(c, loyaltyActionsExport(campaign.id, {}), 'csv');
  });

  app.get('/participants', async (c) => {
    const csrf = helpers.csrfOf(c);
    const { filter, problem } = filterOf(c);
    if (problem || !filter.campaignId) {
      return c.html(<ParticipantsPage csrf={csrf} filter={filter} problem={problem} />, problem ? 400 : 200);
    }
    try {
      const ctx = c.get('ctx');
      const campaign = await campaignForReview(ctx, filter.campaignId);
      const after = idOf(c.req.query('after'));
      const page = await listParticipants(ctx, campaign.id, {
        limit: PAGE,
        ...(after ? { nextId: after } : {}),
        ...(filter.q ? { search: filter.q } : {}),
        ...(filter.risk ? { fraudRiskLevel: filter.risk as (typeof FRAUD_RISK_LEVELS)[number] } : {}),
        ...(filter.winner ? { isWinner: filter.winner === 'true' } : {}),
      });
      return c.html(
        <ParticipantsPage csrf={csrf} filter={filter} campaignName={campaign.name} page={page} />,
      );
    } catch (err) {
      if (!(err instanceof DomainError) || err.code === 'UNAVAILABLE') throw err;
      return c.html(<ParticipantsPage csrf={csrf} filter={filter} problem={err.message} />, statusOf(err));
    }
  });

  /** The campaign and participant a path names (404 when either is not there). */
  async function subjectOf(c: C) {
    const campaignId = idOf(c.req.param('campaignId'));
    const participantId = idOf(c.req.param('participantId'));
    if (!campaignId || !participantId) throw new DomainError('NOT_FOUND', 'No such participant.');
    const ctx = c.get('ctx');
    const campaign = await campaignForReview(ctx, campaignId);
    const row = await requireParticipant(ctx, campaign.id, participantId);
    return { campaign, row };
  }

  async function page(c: C, extra: Problem = {}, status: 200 | 400 | 403 | 404 | 409 | 422 = 200) {
    const { campaign, row } = await subjectOf(c);
    const ctx = c.get('ctx');
    const [participant, rewards, history] = await Promise.all([
      showParticipant(ctx, row),
      listRewards(ctx, campaign.id, { limit: REWARDS_OFFERED }),
      entityHistory(ctx, 'participant', row.id),
    ]);
    return c.html(
      <ParticipantPage
        csrf={helpers.csrfOf(c)}
        campaignId={campaign.id}
        participant={participant}
        rewards={rewards.rewards.map((r) => ({ id: r.id, title: r.title }))}
        history={history}
        {...extra}
      />,
      status,
    );
  }

  /** A change: done, then back to the page with a notice; a refusal shown on the page, nothing changed. */
  const change =
    (act: (c: C, subject: Awaited<ReturnType<typeof subjectOf>>) => Promise<string>) => async (c: C) => {
      try {
        const notice = await act(c, await subjectOf(c));
        return page(c, { notice });
      } catch (err) {
        if (!(err instanceof DomainError) || err.code === 'UNAVAILABLE') throw err;
        return page(c, { problem: err.message }, statusOf(err)).catch(() =>
          c.html(
            <ParticipantsPage csrf={helpers.csrfOf(c)} filter={{}} problem={err.message} />,
            statusOf(err),
          ),
        );
      }
    };

  app.get('/participants/:campaignId/:participantId', async (c) => {
    try {
      return await page(c);
    } catch (err) {
      if (!(err instanceof DomainError) || err.code === 'UNAVAILABLE') throw err;
      return c.html(
        <ParticipantsPage csrf={helpers.csrfOf(c)} filter={{}} problem={err.message} />,
        statusOf(err),
      );
    }
  });

  app.post(
    '/participants/:campaignId/:participantId',
    change(async (c, { campaign, row }) => {
      const form = await helpers.formOf(c);
      const blank = (v: string | undefined) => (v === undefined ? undefined : v.trim() === '' ? null : v);
      const body = UpdateParticipantBody.safeParse({
        firstName: blank(form.firstName),
        lastName: blank(form.lastName),
        notes: blank(form.notes),
        metadata: metadataPatch(form.metadata, row.metadata ?? {}),
      });
      if (!body.success) throw validationError([], problemOf(body.error));
      const { metadataIncrement: _none, ...patch } = body.data;
      await updateParticipant(c.get('ctx'), campaign, row.id, patch);
      return 'Saved.';
    }),
  );

  app.post(
    '/participants/:campaignId/:participantId/risk',
    change(async (c, { campaign, row }) => {
      const level = (await helpers.formOf(c)).level;
      if (!(FRAUD_RISK_LEVELS as readonly (string | undefined)[]).includes(level)) {
        throw validationError([], `The risk level must be one of ${FRAUD_RISK_LEVELS.join(', ')}.`);
      }
      await setFraudRiskLevel(c.get('ctx'), campaign.id, row.id, level as (typeof FRAUD_RISK_LEVELS)[number]);
      return `Risk level set to ${level} by hand.`;
    }),
  );

  app.post(
    '/participants/:campaignId/:participantId/loyalty-action',
    change(async (c, { campaign, row }) => {
      const rewardId = idOf((await helpers.formOf(c)).rewardId);
      if (!rewardId) throw validationError([], 'Pick a reward.');
      const accept = c.get('trigger').accept ?? acceptLoyaltyAction;
      const { action } = await accept(c.get('ctx'), campaign, { rewardId, participant: { id: row.id } });
      return `Loyalty action ${action.id} recorded: the counts show it once a worker applied it.`;
    }),
  );

  const rewardAction = (
    verb: string,
    act: (c: C, campaign: Awaited<ReturnType<typeof campaignForReview>>, id: string) => Promise<unknown>,
    done: string,
  ) =>
    app.post(
      `/participants/:campaignId/:participantId/rewards/:rewardId/${verb}`,
      change(async (c, { campaign }) => {
        const id = idOf(c.req.param('rewardId'));
        if (!id) throw new DomainError('NOT_FOUND', 'No such reward.');
        await act(c, campaign, id);
        return done;
      }),
    );
  rewardAction(
    'approve',
    (c, campaign, id) => approveParticipantReward(c.get('ctx'), campaign, id),
    'Reward approved.',
  );
  rewardAction(
    'fulfil',
    (c, campaign, id) => fulfilCampaignReward(c.get('ctx'), campaign, id),
    'Reward marked fulfilled.',
  );
  rewardAction(
    'delete',
    (c, campaign, id) => removeParticipantReward(c.get('ctx'), campaign, id),
    'Reward deleted.',
  );
}
