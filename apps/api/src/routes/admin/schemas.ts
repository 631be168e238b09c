import { z } from '@hono/zod-openapi';
import {
  FORBIDDEN_METADATA_KEYS,
  formFieldKeyProblem,
  frameAncestorProblem,
  listEntryKind,
  MAX_FORM_FIELDS,
  MAX_FRAME_ANCESTORS,
  MAX_POINTS_CONVERSIONS,
} from '@stampcard/core';
import { CAMPAIGN_STATUSES, PLANS, ROLES } from '@stampcard/db';
import { emailSchema, int, metadataSchema, PG_INT_MIN, pageLimit } from '../../lib/schemas';

const positive = int(1);

export const rateLimitsSchema = z.strictObject({
  second: positive.optional().openapi({ description: 'Requests per 5-second window (default 30)' }),
  minute: positive.optional().openapi({ description: 'Requests per minute (default 200)' }),
  hour: positive.optional().openapi({ description: 'Requests per hour (default 10000)' }),
  concurrency: positive.optional().openapi({ description: 'Requests in flight per client IP (default 3)' }),
  slowdownAfter: int(0)
    .optional()
    .openapi({ description: 'Writes per minute before the slowdown (default 60; 0: off)' }),
});

const frameAncestors = z
  .array(
    z
      .string()
      .max(300)
      .superRefine((origin, ctx) => {
        const problem = frameAncestorProblem(origin);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
  )
  .max(MAX_FRAME_ANCESTORS)
  .openapi({
    description: `The origins whose pages may embed the account's portal in a frame, such as \`https://app.example.com\` (at most ${MAX_FRAME_ANCESTORS}; every other page refuses framing)`,
  });

export const AccountBody = z.strictObject({
  name: z.string().min(1).max(255),
  plan: z.enum(PLANS),
  participantQuota: int(0).nullable().optional().openapi({ description: 'null or absent: no quota' }),
  rateLimits: rateLimitsSchema.nullable().optional(),
  frameAncestors: frameAncestors.optional(),
});

export const AccountPatch = z
  .strictObject({ name: z.string().min(1).max(255).optional(), frameAncestors: frameAncestors.optional() })
  .refine((v) => Object.keys(v).length > 0, { message: 'nothing to change' })
  .openapi('AccountPatch');

const campaignIds = z.array(z.string().min(1).max(64)).max(1000);

export const UserBody = z.strictObject({
  email: emailSchema,
  role: z.enum(ROLES),
  campaignIds: campaignIds.optional(),
});

export const UserPatch = z
  .strictObject({
    role: z.enum(ROLES).optional(),
    campaignIds: campaignIds.optional().openapi({
      description:
        "A MEMBER's API access, replacing the list: campaigns of the user's account (an ADMIN keeps it, and reaches every campaign)",
    }),
  })
  .refine((v) => Object.keys(v).length > 0, { message: 'nothing to change' })
  .openapi('UserPatch');

/** An id in a path or a filter: what every id of the operator API fits in. */
export const idParam = z.string().min(1).max(64);

/** The paging of every operator list: `limit`, and `nextId`, the id of the first item of the page. */
const pageQuery = {
  limit: pageLimit,
  nextId: idParam
    .optional()
    .openapi({ description: 'The `nextId` of the previous page: the id of the first item of this one' }),
};

export const PageQuery = z.strictObject(pageQuery);

export const AccountListQuery = z.strictObject({
  ...pageQuery,
  plan: z.enum(PLANS).optional().openapi({ description: 'Only accounts on this plan' }),
});

export const CampaignListQuery = z.strictObject({
  ...pageQuery,
  status: z.enum(CAMPAIGN_STATUSES).optional().openapi({ description: 'Only campaigns in this status' }),
});

export const UserListQuery = z.strictObject({
  ...pageQuery,
  role: z.enum(ROLES).optional().openapi({ description: 'Only users with this role' }),
  email: emailSchema.optional().openapi({ description: 'Only the user with this email (any case)' }),
});

export const ApiKeyListQuery = z.strictObject({
  ...pageQuery,
  accountId: idParam.optional().openapi({ description: "Only the keys of this account's users" }),
  userId: idParam.optional().openapi({ description: 'Only the keys of this user' }),
  keyPrefix: z
    .string()
    .regex(/^[A-Za-z0-9_]{1,9}$/, {
      message:
        'must be the first 1 to 9 characters of a key (its keyPrefix, such as sk_AbC123): never the whole key',
    })
    .optional()
    .openapi({
      description:
        'Only keys whose `keyPrefix` starts with this: 1 to 9 of the first characters of a key. More is refused, so that a whole key never travels in a URL',
      example: 'sk_AbC123',
    }),
  revoked: z
    .enum(['true', 'false'])
    .optional()
    .openapi({ description: 'true: only revoked keys; false: only keys in use' }),
});

const listEntry = z
  .string()
  .min(1)
  .max(254)
  .refine((e) => listEntryKind(e) !== null, {
    message: 'must be an email, *@domain, a domain, an IP address or a CIDR range',
  });
export const antiFraudSchema = z.strictObject({
  level: z.enum(['OFF', 'STANDARD', 'STRICT']).optional(),
  blacklist: z.array(listEntry).max(10_000).optional(),
  whitelist: z.array(listEntry).max(10_000).optional(),
  ipThrottle: int(0).optional().openapi({
    description: 'New participants one IP address may bring per hour (default 10); 0 turns it off',
  }),
});

export const pointsConversionSchema = z
  .strictObject({
    metadataKey: z
      .string()
      .min(1)
      .max(255)
      .refine((k) => !FORBIDDEN_METADATA_KEYS.has(k), { message: 'this key is not allowed' })
      .openapi({ description: 'The metadata key holding the points (a key `metadataIncrement` can name)' }),
    threshold: z.number().positive().max(Number.MAX_SAFE_INTEGER).openapi({
      description: 'Points per loyalty action: each time the value reaches it, it is subtracted',
    }),
    rewardId: z.string().min(1).max(64).openapi({
      description: 'A reward of this campaign: one loyalty action is counted for it per conversion',
    }),
  })
  .openapi({
    description: `Points scheme: a \`metadataIncrement\` of \`metadataKey\` that makes it reach \`threshold\` converts it into loyalty actions for \`rewardId\` (at most ${MAX_POINTS_CONVERSIONS} per update)`,
  });

const campaignFields = {
  name: z.string().min(1).max(255),
  currencyISO: z
    .string()
    .regex(/^[A-Za-z]{3}$/, 'must be an ISO 4217 code such as USD')
    .optional(),
  status: z.enum(CAMPAIGN_STATUSES).optional(),
  antiFraud: antiFraudSchema.nullable().optional(),
  requireRewardApproval: z.boolean().optional(),
  pointsConversion: pointsConversionSchema.nullable().optional(),
};
export const CampaignBody = z.strictObject(campaignFields);
export const CampaignPatch = z
  .strictObject({ ...campaignFields, name: campaignFields.name.optional() })
  .refine((v) => Object.keys(v).length > 0, { message: 'nothing to change' });

const text = (max = 10_000) => z.string().max(max).nullable().optional();

/** A form field's `key`: it becomes a key of submissions' `formData`, so it must be safe as one. */
const formFieldKey = z
  .string()
  .superRefine((key, ctx) => {
    const problem = formFieldKeyProblem(key);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .openapi({
    description: '1 to 100 letters, digits, `_` or `-`; not `__proto__`, `constructor`, `prototype`',
  });
const url = z.url().max(2048).nullable().optional();

const rewardFields = {
  title: text(255),
  description: text(),
  subdescription: text(),
  instructions: text(50_000),
  cta: text(255),
  submissionType: z.enum(['URL', 'FORM']).nullable().optional(),
  submissionExampleUrl: url,
  submissionFormUrl: url,
  submissionFormFields: z
    .array(
      z.strictObject({
        key: formFieldKey,
        label: z.string().max(255).optional(),
        placeholder: z.string().max(255).optional(),
        type: z.string().max(50).optional(),
        isRequired: z.boolean().optional(),
        isVisible: z.boolean().optional(),
      }),
    )
    .max(MAX_FORM_FIELDS)
    .superRefine((fields, ctx) => {
      const seen = new Set<string>();
      fields.forEach((f, i) => {
        if (seen.has(f.key)) {
          ctx.addIssue({ code: 'custom', path: [i, 'key'], message: 'another field has this key' });
        }
        seen.add(f.key);
      });
    })
    .nullable()
    .optional()
    .openapi({
      description: `The form a participant sends (submissionType FORM): at most ${MAX_FORM_FIELDS} fields, keys unique`,
    }),
  submissionFormButtonText: text(255),
  submissionFormMessages: z
    .strictObject({
      required: z.string().max(1000).optional(),
      reCaptchaRequired: z.string().max(1000).optional(),
      success: z.string().max(1000).optional(),
      error: z.string().max(1000).optional(),
      alreadySubmitted: z.string().max(1000).optional(),
    })
    .nullable()
    .optional(),
  isUnlimited: z.boolean().optional(),
  limit: int(1)
    .optional()
    .openapi({ description: 'Earnings per participant (default 1); ignored when isUnlimited' }),
  conversionsRequired: int(1).optional().openapi({ description: 'Loyalty actions per earning (default 1)' }),
  limitDuration: z.enum(['IN_TOTAL', 'PER_MONTH']).optional(),
  numberOfWinners: int(1).nullable().optional(),
  couponCode: text(255),
  imageUrl: url,
  order: int(PG_INT_MIN).nullable().optional(),
  metadata: metadataSchema.nullable().optional(),
};
export const RewardBody = z.strictObject(rewardFields);
export const RewardPatch = z
  .strictObject(rewardFields)
  .refine((v) => Object.keys(v).length > 0, { message: 'nothing to change' });
