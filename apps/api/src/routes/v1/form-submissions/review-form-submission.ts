import { createRoute } from '@hono/zod-openapi';
import { loadCampaignFor, reviewFormSubmission } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponsesFor, PUBLIC_ERRORS } from '../../../lib/error-schema';
import { okResponse } from '../../../lib/schemas';
import { FormSubmission } from '../../../lib/views';
import { submissionParams } from './schemas';

/** The loyalty action an approval counted, for a caller who wants to follow it (`GET …/loyalty-action/{id}`). */
export const ACTION_ID_HEADER = 'Stampcard-Loyalty-Action-Id';

const descriptions = {
  approve: `The submission becomes REVIEWED and a loyalty action is counted for its reward, through the same pipeline as a trigger: the worker applies it and the unlock rule decides whether the reward is earned. Its id is in the \`${ACTION_ID_HEADER}\` header. The campaign must be IN_PROGRESS. Records \`REWARD_FORM_REVIEWED\` (\`approved: true\`). A submission already REVIEWED: 400 \`INVALID_STATE\`.`,
  reject:
    'The submission becomes REVIEWED and nothing is unlocked. Records `REWARD_FORM_REVIEWED` (`approved: false`). A submission already REVIEWED: 400 `INVALID_STATE`.',
} as const;

/** Approve and reject are one operation with a different outcome. */
const routeFor = (verb: 'approve' | 'reject') =>
  createRoute({
    method: 'post',
    operationId: `${verb}FormSubmission`,
    path: `/v1/campaign/{id}/form-submission/{submissionId}/${verb}`,
    summary: verb === 'approve' ? 'Approve a form submission' : 'Reject a form submission',
    description: descriptions[verb],
    tags: ['Form submissions'],
    request: { params: submissionParams },
    responses: {
      200: {
        ...okResponse('The FormSubmission, REVIEWED', FormSubmission)[200],
        ...(verb === 'approve'
          ? {
              headers: {
                [ACTION_ID_HEADER]: {
                  description: 'The loyalty action (`act_…`) the approval counted, QUEUED',
                  schema: { type: 'string' },
                },
              },
            }
          : {}),
      },
      ...errorResponsesFor([...PUBLIC_ERRORS, 'INVALID_STATE']),
    },
  });

export const registerReviewFormSubmission = (app: App) => {
  for (const verb of ['approve', 'reject'] as const) {
    app.openapi(routeFor(verb), async (c) => {
      const ctx = c.get('ctx');
      const { id, submissionId } = c.req.valid('param');
      const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
      const review = await reviewFormSubmission(ctx, campaign, submissionId, verb === 'approve');
      if (review.loyaltyActionId) c.header(ACTION_ID_HEADER, review.loyaltyActionId);
      c.set('lateReply', () => c.json(review.formSubmission, 200));
      return c.json(review.formSubmission, 200);
    });
  }
};
