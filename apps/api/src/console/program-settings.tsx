/** @jsxImportSource hono/jsx */
import {
  type AuditEntryView,
  createReward,
  DomainError,
  entityHistory,
  getCampaignForOperator,
  MAX_FORM_FIELDS,
  showReward,
  updateCampaign,
  updateReward,
  validationError,
} from '@stampcard/core';
import { CAMPAIGN_STATUSES } from '@stampcard/db';
import type { Context, Hono } from 'hono';
import type { AppEnv } from '../env';
import { ERROR_STATUS } from '../lib/error-status';
import { CampaignPatch, RewardBody, RewardPatch } from '../routes/admin/schemas';
import { type Field, FieldInput, optionsOf, PRESENT, problemOf, readFields } from './fields';
import { History } from './history';
import { type ConsoleHelpers, idOf } from './lib';
import { CONSOLE_PATH, CSRF_FIELD, Layout } from './views';

type C = Context<AppEnv>;
type Campaign = Awaited<ReturnType<typeof getCampaignForOperator>>;
type Reward = Campaign['rewards'][number];
type Shown = { problem?: string; notice?: string };

export const campaignPath = (id: string) => `${CONSOLE_PATH}/programs/campaigns/${encodeURIComponent(id)}`;
const rewardPath = (campaignId: string, rewardId: string) =>
  `${campaignPath(campaignId)}/rewards/${encodeURIComponent(rewardId)}`;

/** Blank form-field rows a reward's page offers beside its fields, for new ones. */
const BLANK_FORM_FIELDS = 3;

const campaignFields = (rewards: Reward[]): Field[][] => [
  [
    { kind: 'text', name: 'name', label: 'Name', max: 255, required: true },
    { kind: 'text', name: 'currencyISO', label: 'Currency (ISO 4217, such as USD)', max: 3 },
    { kind: 'select', name: 'status', label: 'Status', options: optionsOf(CAMPAIGN_STATUSES) },
    {
      kind: 'checkbox',
      name: 'requireRewardApproval',
      label: 'Rewards wait for an operator to approve them',
    },
  ],
  [
    {
      kind: 'select',
      name: 'antiFraud.level',
      label: 'Level',
      options: optionsOf(['OFF', 'STANDARD', 'STRICT'], 'The default (STANDARD)'),
    },
    {
      kind: 'lines',
      name: 'antiFraud.blacklist',
      label: 'Blacklist: emails, *@domains, domains, IPs or CIDRs, one a line',
    },
    { kind: 'lines', name: 'antiFraud.whitelist', label: 'Whitelist, one a line' },
    {
      kind: 'number',
      name: 'antiFraud.ipThrottle',
      label: 'New participants per IP address per hour (0: off)',
      min: 0,
    },
  ],
  [
    {
      kind: 'select',
      name: 'pointsConversion.rewardId',
      label: 'Reward the points count towards',
      options: [
        { value: '', label: 'No points scheme' },
        ...rewards.map((r) => ({ value: r.id, label: r.title ?? r.id })),
      ],
    },
    {
      kind: 'text',
      name: 'pointsConversion.metadataKey',
      label: 'Metadata key holding the points',
      max: 255,
    },
    {
      kind: 'number',
      name: 'pointsConversion.threshold',
      label: 'Points per loyalty action',
      min: 0,
      step: 'any',
    },
  ],
];

/** The campaign's settings as its form shows them, by field name. */
function campaignValues(c: Campaign): Record<string, unknown> {
  return {
    name: c.name,
    currencyISO: c.currencyISO,
    status: c.status,
    requireRewardApproval: c.requireRewardApproval,
    'antiFraud.level': c.antiFraud?.level,
    'antiFraud.blacklist': c.antiFraud?.blacklist ?? [],
    'antiFraud.whitelist': c.antiFraud?.whitelist ?? [],
    'antiFraud.ipThrottle': c.antiFraud?.ipThrottle,
    'pointsConversion.rewardId': c.pointsConversion?.rewardId ?? '',
    'pointsConversion.metadataKey': c.pointsConversion?.metadataKey,
    'pointsConversion.threshold': c.pointsConversion?.threshold,
  };
}

/** Only the keys whose value says something: an empty list or a null is "not set". */
const setOnly = (o: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(o).filter(([, v]) => v !== null && !(Array.isArray(v) && v.length === 0)),
  );

/** The campaign form as the operator API's PATCH body: groups left empty are null (no settings). */
function campaignBody(v: Record<string, unknown>) {
  const antiFraud = setOnly({
    level: v['antiFraud.level'],
    blacklist: v['antiFraud.blacklist'],
    whitelist: v['antiFraud.whitelist'],
    ipThrottle: v['antiFraud.ipThrottle'],
  });
  const points = setOnly({
    rewardId: v['pointsConversion.rewardId'],
    metadataKey: v['pointsConversion.metadataKey'],
    threshold: v['pointsConversion.threshold'],
  });
  // A group the form did not carry is left as it is; one it carried empty is cleared.
  const carried = (group: string) => Object.keys(v).some((name) => name.startsWith(`${group}.`));
  return {
    // An emptied name stays null, for the schema to refuse.
    ...(v.name === undefined ? {} : { name: v.name }),
    ...setOnly({
      currencyISO: v.currencyISO,
      status: v.status,
      requireRewardApproval: v.requireRewardApproval,
    }),
    ...(carried('antiFraud') ? { antiFraud: Object.keys(antiFraud).length ? antiFraud : null } : {}),
    ...(carried('pointsConversion') ? { pointsConversion: points.rewardId ? points : null } : {}),
  };
}

const REWARD_MESSAGES = ['required', 'reCaptchaRequired', 'success', 'error', 'alreadySubmitted'] as const;

const REWARD_FIELDS: Field[][] = [
  [
    { kind: 'text', name: 'title', label: 'Title', max: 255 },
    { kind: 'textarea', name: 'description', label: 'Description' },
    { kind: 'textarea', name: 'subdescription', label: 'Subdescription' },
    { kind: 'textarea', name: 'instructions', label: 'Instructions' },
    { kind: 'text', name: 'cta', label: 'Call to action', max: 255 },
    { kind: 'url', name: 'imageUrl', label: 'Image URL' },
    { kind: 'number', name: 'order', label: 'Order (lower first)' },
  ],
  [
    { kind: 'number', name: 'conversionsRequired', label: 'Loyalty actions per reward', min: 1 },
    { kind: 'checkbox', name: 'isUnlimited', label: 'Unlimited: earned again and again' },
    { kind: 'number', name: 'limit', label: 'Earnings per participant', min: 1 },
    {
      kind: 'select',
      name: 'limitDuration',
      label: 'Limit counted',
      options: optionsOf(['IN_TOTAL', 'PER_MONTH']),
    },
    {
      kind: 'number',
      name: 'numberOfWinners',
      label: 'Winners per month (PER_MONTH only; empty: no cap)',
      min: 1,
    },
    { kind: 'text', name: 'couponCode', label: 'Coupon code', max: 255 },
  ],
  [
    {
      kind: 'select',
      name: 'submissionType',
      label: 'Submission',
      options: optionsOf(['URL', 'FORM'], 'None'),
    },
    { kind: 'url', name: 'submissionExampleUrl', label: 'Example URL' },
    { kind: 'url', name: 'submissionFormUrl', label: 'Form URL' },
    { kind: 'text', name: 'submissionFormButtonText', label: 'Form button text', max: 255 },
    ...REWARD_MESSAGES.map(
      (m): Field => ({ kind: 'text', name: `message.${m}`, label: `Message: ${m}`, max: 1000 }),
    ),
  ],
  [{ kind: 'json', name: 'metadata', label: 'Metadata (a JSON object)' }],
];

const FORM_FIELD_COLUMNS = ['key', 'label', 'placeholder', 'type'] as const;
const FORM_FIELD_FLAGS = ['isRequired', 'isVisible'] as const;
const rowField = (i: number, name: string) => `formField.${i}.${name}`;

function rewardValues(r: Reward | undefined): Record<string, unknown> {
  if (!r) return { conversionsRequired: 1, limit: 1, limitDuration: 'IN_TOTAL', metadata: {} };
  const values: Record<string, unknown> = { ...r, limit: r.isUnlimited ? '' : r.limit };
  for (const m of REWARD_MESSAGES) values[`message.${m}`] = r.submissionFormMessages?.[m];
  return values;
}

/** The reward form as the operator API's body: messages and form-field rows gathered, empty rows dropped. */
function rewardBody(v: Record<string, unknown>, form: Record<string, string | undefined>) {
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(v)) if (!name.startsWith('message.')) body[name] = value;
  const messages = setOnly(Object.fromEntries(REWARD_MESSAGES.map((m) => [m, v[`message.${m}`]])));
  body.submissionFormMessages = Object.keys(messages).length ? messages : null;
  const rows = [];
  for (let i = 0; i < MAX_FORM_FIELDS + BLANK_FORM_FIELDS; i++) {
    const key = form[rowField(i, 'key')]?.trim();
    if (!key) continue;
    const row: Record<string, unknown> = { key };
    for (const c of FORM_FIELD_COLUMNS.slice(1)) {
      const value = form[rowField(i, c)]?.trim();
      if (value) row[c] = value;
    }
    for (const flag of FORM_FIELD_FLAGS) {
      if (form[PRESENT(rowField(i, flag))] !== undefined) row[flag] = form[rowField(i, flag)] === 'true';
    }
    rows.push(row);
  }
  body.submissionFormFields = rows.length ? rows : null;
  // Fields the API takes but never as null: empty means "leave as it is" (the defaults on a new reward).
  for (const name of ['limit', 'conversionsRequired', 'limitDuration', 'isUnlimited']) {
    if (body[name] === null) delete body[name];
  }
  return body;
}

function Group(props: {
  legend: string;
  fields: Field[];
  values: Record<string, unknown>;
  idPrefix: string;
}) {
  return (
    <fieldset class="stack">
      <legend>{props.legend}</legend>
      {props.fields.map((field) => (
        <FieldInput field={field} value={props.values[field.name]} idPrefix={props.idPrefix} />
      ))}
    </fieldset>
  );
}

function FormFieldRows(props: { fields: NonNullable<Reward['submissionFormFields']> }) {
  const rows = [...props.fields, ...Array.from({ length: BLANK_FORM_FIELDS }, () => undefined)];
  return (
    <fieldset>
      <legend>Form fields (a row without a key is left out)</legend>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              {[...FORM_FIELD_COLUMNS, 'required', 'visible'].map((c) => (
                <th scope="col">{c}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((row, i) => (
              <tr>
                {FORM_FIELD_COLUMNS.map((c) => (
                  <td>
                    <input
                      name={rowField(i, c)}
                      aria-label={`Form field ${i + 1}: ${c}`}
                      maxlength={c === 'type' ? 50 : 255}
                      value={(row?.[c] as string | undefined) ?? ''}
                    />
                  </td>
                ))}
                {FORM_FIELD_FLAGS.map((flag) => (
                  <td>
                    <input type="hidden" name={PRESENT(rowField(i, flag))} value="1" />
                    <input
                      type="checkbox"
                      name={rowField(i, flag)}
                      value="true"
                      aria-label={`Form field ${i + 1}: ${flag === 'isRequired' ? 'required' : 'visible'}`}
                      checked={flag === 'isVisible' ? row?.isVisible !== false : row?.isRequired === true}
                    />
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </fieldset>
  );
}

function Flash(props: Shown) {
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

export function CampaignSettingsPage(
  props: { csrf: string; campaign: Campaign; history?: AuditEntryView[] } & Shown,
) {
  const c = props.campaign;
  const [basics, antiFraud, points] = campaignFields(c.rewards);
  const values = campaignValues(c);
  return (
    <Layout title="Campaign" current="programs" csrf={props.csrf}>
      <p>
        <a href={`${CONSOLE_PATH}/programs?accountId=${encodeURIComponent(c.accountId)}`}>
          The account's campaigns
        </a>
      </p>
      <h1>
        {c.name} <span class="muted">({c.id})</span>
      </h1>
      <Flash problem={props.problem} notice={props.notice} />
      <form method="post" action={campaignPath(c.id)} class="settings">
        <input type="hidden" name={CSRF_FIELD} value={props.csrf} />
        <Group legend="The campaign" fields={basics!} values={values} idPrefix="c" />
        <Group legend="Anti-fraud" fields={antiFraud!} values={values} idPrefix="c" />
        <Group legend="Points" fields={points!} values={values} idPrefix="c" />
        <button type="submit">Save the campaign</button>
      </form>
      <section aria-labelledby="rewards-h">
        <h2 id="rewards-h">Rewards</h2>
        <ul class="plain">
          {c.rewards.map((r) => (
            <li>
              <a href={rewardPath(c.id, r.id)}>{r.title ?? r.id}</a>{' '}
              <span class="muted">
                ({r.conversionsRequired} actions,{' '}
                {r.isUnlimited ? 'unlimited' : `${r.limit} ${r.limitDuration}`})
              </span>
            </li>
          ))}
        </ul>
        <p>
          <a href={`${campaignPath(c.id)}/rewards/new`}>Add a reward</a>
        </p>
      </section>
      {props.history ? <History entries={props.history} what="campaign" /> : null}
    </Layout>
  );
}

export function RewardSettingsPage(
  props: { csrf: string; campaign: Campaign; reward?: Reward; history?: AuditEntryView[] } & Shown,
) {
  const { campaign: c, reward: r } = props;
  const values = rewardValues(r);
  const [about, limits, submission, more] = REWARD_FIELDS;
  return (
    <Layout title="Reward" current="programs" csrf={props.csrf}>
      <p>
        <a href={campaignPath(c.id)}>{c.name}</a>
      </p>
      <h1>{r ? (r.title ?? r.id) : `A new reward of ${c.name}`}</h1>
      <Flash problem={props.problem} notice={props.notice} />
      <form
        method="post"
        action={r ? rewardPath(c.id, r.id) : `${campaignPath(c.id)}/rewards`}
        class="settings"
      >
        <input type="hidden" name={CSRF_FIELD} value={props.csrf} />
        <Group legend="What it is" fields={about!} values={values} idPrefix="r" />
        <Group legend="How it is earned" fields={limits!} values={values} idPrefix="r" />
        <Group legend="What the participant sends" fields={submission!} values={values} idPrefix="r" />
        <FormFieldRows fields={r?.submissionFormFields ?? []} />
        <Group legend="More" fields={more!} values={values} idPrefix="r" />
        <button type="submit">{r ? 'Save the reward' : 'Add the reward'}</button>
      </form>
      {props.history ? <History entries={props.history} what="reward" /> : null}
    </Layout>
  );
}

const statusOf = (err: DomainError) => ERROR_STATUS[err.code] as 400 | 403 | 404 | 409 | 422;
const rethrown = (err: unknown): DomainError => {
  if (!(err instanceof DomainError) || err.code === 'UNAVAILABLE') throw err;
  return err;
};

/** A campaign's settings page and its rewards' pages: every field, through the operator API's schemas. */
export function registerProgramSettings(app: Hono<AppEnv>, helpers: ConsoleHelpers) {
  const campaignOf = async (c: C) => {
    const id = idOf(c.req.param('campaignId'));
    if (!id) throw new DomainError('NOT_FOUND', 'No such campaign.');
    return getCampaignForOperator(c.get('ctx'), id);
  };
  const notFound = (c: C, err: DomainError) =>
    c.html(
      <Layout title="Not found" current="programs" csrf={helpers.csrfOf(c)}>
        <p class="error" role="alert">
          {err.message}
        </p>
      </Layout>,
      statusOf(err),
    );

  app.get('/programs/campaigns/:campaignId', async (c) => {
    try {
      const notice = c.req.query('done') === 'saved' ? 'Saved.' : undefined;
      const campaign = await campaignOf(c);
      const history = await entityHistory(c.get('ctx'), 'campaign', campaign.id);
      return c.html(
        <CampaignSettingsPage
          csrf={helpers.csrfOf(c)}
          campaign={campaign}
          notice={notice}
          history={history}
        />,
      );
    } catch (err) {
      return notFound(c, rethrown(err));
    }
  });

  app.post('/programs/campaigns/:campaignId', async (c) => {
    let campaign: Campaign;
    try {
      campaign = await campaignOf(c);
    } catch (err) {
      return notFound(c, rethrown(err));
    }
    const form = await helpers.formOf(c);
    try {
      const [basics, antiFraud, points] = campaignFields(campaign.rewards);
      const patch = CampaignPatch.safeParse(
        campaignBody(readFields([...basics!, ...antiFraud!, ...points!], form)),
      );
      if (!patch.success) throw validationError([], problemOf(patch.error));
      await updateCampaign(c.get('ctx'), campaign.id, patch.data);
      return c.redirect(`${campaignPath(campaign.id)}?done=saved`, 303);
    } catch (err) {
      const problem = rethrown(err).message;
      return c.html(
        <CampaignSettingsPage csrf={helpers.csrfOf(c)} campaign={campaign} problem={problem} />,
        statusOf(rethrown(err)),
      );
    }
  });

  app.get('/programs/campaigns/:campaignId/rewards/new', async (c) => {
    try {
      return c.html(<RewardSettingsPage csrf={helpers.csrfOf(c)} campaign={await campaignOf(c)} />);
    } catch (err) {
      return notFound(c, rethrown(err));
    }
  });

  /** A reward made or changed from its form; a refusal shown on the form, nothing changed. */
  const saveReward = (existing: boolean) => async (c: C) => {
    let campaign: Campaign;
    let reward: Reward | undefined;
    try {
      campaign = await campaignOf(c);
      if (existing) {
        const rewardId = idOf(c.req.param('rewardId'));
        reward = rewardId ? campaign.rewards.find((r) => r.id === rewardId) : undefined;
        if (!reward) throw new DomainError('NOT_FOUND', 'No such reward in this campaign.');
      }
    } catch (err) {
      return notFound(c, rethrown(err));
    }
    const form = await helpers.formOf(c);
    try {
      const body = rewardBody(readFields(REWARD_FIELDS.flat(), form), form);
      const parsed = (existing ? RewardPatch : RewardBody).safeParse(body);
      if (!parsed.success) throw validationError([], problemOf(parsed.error));
      const ctx = c.get('ctx');
      const saved = reward
        ? await updateReward(ctx, campaign.id, reward.id, parsed.data)
        : await createReward(ctx, campaign.id, parsed.data);
      return c.redirect(`${rewardPath(campaign.id, saved.id)}?done=saved`, 303);
    } catch (err) {
      const problem = rethrown(err).message;
      return c.html(
        <RewardSettingsPage csrf={helpers.csrfOf(c)} campaign={campaign} reward={reward} problem={problem} />,
        statusOf(rethrown(err)),
      );
    }
  };

  app.post('/programs/campaigns/:campaignId/rewards', saveReward(false));
  app.post('/programs/campaigns/:campaignId/rewards/:rewardId', saveReward(true));

  app.get('/programs/campaigns/:campaignId/rewards/:rewardId', async (c) => {
    try {
      const campaign = await campaignOf(c);
      const rewardId = idOf(c.req.param('rewardId')) ?? '';
      const reward = (await showReward(c.get('ctx'), campaign.id, rewardId)) as Reward;
      const notice = c.req.query('done') === 'saved' ? 'Saved.' : undefined;
      const history = await entityHistory(c.get('ctx'), 'reward', reward.id);
      return c.html(
        <RewardSettingsPage
          csrf={helpers.csrfOf(c)}
          campaign={campaign}
          reward={reward}
          notice={notice}
          history={history}
        />,
      );
    } catch (err) {
      return notFound(c, rethrown(err));
    }
  });
}
