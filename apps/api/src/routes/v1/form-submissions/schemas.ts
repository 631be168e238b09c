import { z } from '@hono/zod-openapi';
import { FORBIDDEN_METADATA_KEYS, MAX_FORM_FIELDS, MAX_FORM_VALUE_LENGTH } from '@stampcard/core';
import { FORM_SUBMISSION_STATUSES } from '@stampcard/db';
import { campaignIdParam, pageLimit } from '../../../lib/schemas';
import { FormSubmission } from '../../../lib/views';

/** Shared by the form submission routes. */

export const submissionParams = z.object({
  id: campaignIdParam,
  submissionId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'submissionId', in: 'path' }, example: 'fsub_3kQ9aZ7xY2bC4dE6fG8h' }),
});

/**
 * A field's key, as a reward's form names it (the reward's form decides which are known), and what the
 * participant wrote. Prototype names never pass: the body parser refuses them first, this says so again.
 */
const fieldKey = z
  .string()
  .min(1)
  .max(200)
  .refine((k) => !FORBIDDEN_METADATA_KEYS.has(k), { message: 'this key is not allowed' });
const fieldValue = z.string().max(MAX_FORM_VALUE_LENGTH);

export const SubmitFormBody = z
  .strictObject({
    rewardId: z.string().min(1).max(64).openapi({ description: 'The reward whose form this is' }),
    formData: z
      .record(fieldKey, fieldValue)
      .refine((d) => Object.keys(d).length <= MAX_FORM_FIELDS, {
        message: `formData has at most ${MAX_FORM_FIELDS} fields`,
      })
      .openapi({
        description:
          "The answers, by the `key` of the reward's `submissionFormFields`: every visible field marked `isRequired`, no key the form does not have",
        example: { handle: '@ada', postUrl: 'https://example.com/post/1' },
      }),
  })
  .openapi('SubmitRewardForm');

export const formSubmissionListQuery = z.strictObject({
  limit: pageLimit,
  nextId: z.string().min(1).max(64).optional().openapi({ description: 'The `nextId` of the previous page' }),
  status: z.enum(FORM_SUBMISSION_STATUSES).optional(),
  rewardId: z.string().min(1).max(64).optional(),
});

/** `listFormSubmissions`. */
export const FormSubmissionPage = z
  .strictObject({
    formSubmissions: z.array(FormSubmission),
    limit: z.number().int().openapi({
      description:
        'The `limit` asked for: the most items a page holds. A page may hold fewer (its byte budget) while `more` is true',
    }),
    nextId: z.string().nullable().openapi({
      description: 'The `nextId` of the next page: the id of its first submission (null on the last page)',
    }),
    more: z.boolean().openapi({ description: 'Whether another page follows' }),
  })
  .openapi('FormSubmissionPage');
