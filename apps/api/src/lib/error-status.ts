import { ERROR_CATALOG, type ErrorCode } from '@stampcard/core';

/** The HTTP status the API answers each code of core's error catalogue with (the contract's table). */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  INVALID_STATE: 400,
  AUTHENTICATION_REQUIRED: 401,
  USAGE_LIMIT: 402,
  NOT_AUTHORIZED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  DUPLICATE_REQUEST: 409,
  OPERATION_IN_PROGRESS: 409,
  PARTICIPANT_BLOCKED: 422,
  RATE_LIMIT: 429,
  INTERNAL_ERROR: 500,
  UNAVAILABLE: 503,
} as const satisfies Record<ErrorCode, number>;

export type HttpError<C extends ErrorCode = ErrorCode> = {
  name: (typeof ERROR_CATALOG)[C]['name'];
  status: (typeof ERROR_STATUS)[C];
};

/** Each code as the error body shows it: core's name, and the HTTP status. */
export const HTTP_ERRORS = Object.fromEntries(
  (Object.keys(ERROR_CATALOG) as ErrorCode[]).map((code) => [
    code,
    { name: ERROR_CATALOG[code].name, status: ERROR_STATUS[code] },
  ]),
) as { readonly [C in ErrorCode]: HttpError<C> };
