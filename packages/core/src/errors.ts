/**
 * Domain errors. Each carries a code of the contract's catalogue; transports map the code to a status and
 * a name (see `ERROR_CATALOG`), and put `details` at the top level of the error body.
 */
export const ERROR_CATALOG = {
  VALIDATION_ERROR: { name: 'ValidationError', status: 400 },
  INVALID_STATE: { name: 'InvalidState', status: 400 },
  USAGE_LIMIT: { name: 'UsageLimit', status: 402 },
  NOT_AUTHORIZED: { name: 'NotAuthorized', status: 403 },
  NOT_FOUND: { name: 'NotFound', status: 404 },
  DUPLICATE_REQUEST: { name: 'DuplicateRequest', status: 409 },
  PARTICIPANT_BLOCKED: { name: 'ParticipantBlocked', status: 422 },
  RATE_LIMIT: { name: 'RateLimit', status: 429 },
  INTERNAL_ERROR: { name: 'InternalError', status: 500 },
  UNAVAILABLE: { name: 'Unavailable', status: 503 },
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOG;

export type ValidationIssue = { location: string; param: string; value: unknown; msg: string };

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = ERROR_CATALOG[code].name;
  }
}

export const validationError = (issues: ValidationIssue[], message?: string) =>
  new DomainError(
    'VALIDATION_ERROR',
    message ?? issues.map((i) => (i.param ? `${i.param}: ${i.msg}` : i.msg)).join('; '),
    { errors: issues },
  );

export const notFound = (what: string) => new DomainError('NOT_FOUND', `${what} does not exist`);
export const notAuthorized = (message: string) => new DomainError('NOT_AUTHORIZED', message);
export const invalidState = (message: string) => new DomainError('INVALID_STATE', message);
