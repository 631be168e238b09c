import { loadCampaignFor, submitRewardForm } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { errorResponsesFor, PUBLIC_ERRORS } from '../../../lib/error-schema';
import { jsonBody, okResponse } from '../../../lib/schemas';
import { FormSubmission } from '../../../lib/views';
import { participantParams } from '../participants/schemas';
import { SubmitFormBody } from './schemas';

const route = createBodyRoute({
  method: 'post',
  operationId: 'submitForm',
  path: '/v1/campaign/{id}/participant/{idOrEmail}/form-submission',
  summary: "Send a reward's form for a participant",
  description:
    "Checked against the reward's `submissionFormFields`: every visible required field present and not blank (400 naming each, in the reward's `submissionFormMessages.required`), no key the form does not have. A reward that takes no form is a 400 on `rewardId`. One UNREVIEWED submission per participant and reward: another is a 400 `INVALID_STATE` with the reward's `alreadySubmitted` message. The campaign must be IN_PROGRESS. Records `PARTICIPANT_SUBMITTED_REWARD_FORM`; nothing is unlocked until the submission is approved.",
  tags: ['Form submissions'],
  request: { params: participantParams, body: jsonBody(SubmitFormBody) },
  responses: {
    ...okResponse('The FormSubmission, UNREVIEWED', FormSubmission),
    ...errorResponsesFor([...PUBLIC_ERRORS, 'INVALID_STATE']),
  },
});

export const registerSubmitForm = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, idOrEmail } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    const change = await submitRewardForm(ctx, campaign, idOrEmail, c.req.valid('json'));
    c.set('lateReply', () => c.json(change.formSubmission, 200));
    return c.json(change.formSubmission, 200);
  });
