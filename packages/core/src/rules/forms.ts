import type { FormField, FormMessages } from '@stampcard/db';
import type { ValidationIssue } from '../errors';
import { FORBIDDEN_METADATA_KEYS } from './points';

/** Most fields a reward's form may have, and so most keys a submission's `formData` may carry. */
export const MAX_FORM_FIELDS = 50;
/** Longest answer a submission may give to one field. */
export const MAX_FORM_VALUE_LENGTH = 5000;

/**
 * What a form field's `key` may be: 1 to 100 letters or digits (any script), `_` or `-`. Such a key can be sent
 * as JSON and as a form-encoded `formData[key]`, and reads plainly in an error's `formData.<key>`.
 */
export const FORM_FIELD_KEY_PATTERN = /^[\p{L}\p{N}_-]{1,100}$/u;

/**
 * Why a form field `key` is refused, or null when it is fine: the pattern above, and none of the names no body
 * may carry as a key (`__proto__`, `constructor`, `prototype`), since a submission's `formData` uses it as one.
 */
export function formFieldKeyProblem(key: string): string | null {
  if (FORBIDDEN_METADATA_KEYS.has(key)) return 'this key is not allowed';
  if (!FORM_FIELD_KEY_PATTERN.test(key)) return 'must be 1 to 100 letters, digits, _ or -';
  return null;
}

/** What a message says when the reward gives none of its own (`submissionFormMessages`). */
export const DEFAULT_FORM_MESSAGES = {
  required: 'This field is required',
  alreadySubmitted: 'A submission for this reward is already waiting for review',
} as const;

/** The fields a participant can fill in: every field but those marked `isVisible: false`. */
export const visibleFields = (fields: readonly FormField[]) => fields.filter((f) => f.isVisible !== false);

/**
 * Checks a submission's `formData` against the reward's form (pure): every key must be one of its visible
 * fields, and every visible field marked `isRequired` must be there and not blank. A missing field's message is
 * the reward's own `required` message, after the field's label. Answers the problems, none when it passes.
 */
export function checkFormData(
  fields: readonly FormField[],
  messages: FormMessages | null | undefined,
  formData: Readonly<Record<string, string>>,
): ValidationIssue[] {
  const shown = visibleFields(fields);
  const known = new Set(shown.map((f) => f.key));
  const issues: ValidationIssue[] = [];
  for (const key of Object.keys(formData)) {
    if (!known.has(key)) {
      issues.push({
        location: 'body',
        param: `formData.${key}`,
        value: null,
        msg: 'is not a field of this reward’s form',
      });
    }
  }
  const required = messages?.required || DEFAULT_FORM_MESSAGES.required;
  for (const field of shown) {
    if (!field.isRequired) continue;
    const value = Object.hasOwn(formData, field.key) ? formData[field.key] : undefined;
    if (value === undefined || value.trim() === '') {
      issues.push({
        location: 'body',
        param: `formData.${field.key}`,
        value: value ?? null,
        msg: field.label ? `${field.label}: ${required}` : required,
      });
    }
  }
  return issues;
}
