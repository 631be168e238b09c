/**
 * Domain errors. Each carries a code of the catalogue, a message, and `details` in the domain's terms; core
 * knows no transport: the API maps each code to its HTTP status (`apps/api/src/lib/error-status.ts`) and puts
 * `details` at the top level of the error body.
 */
export const ERROR_CATALOG = {
  VALIDATION_ERROR: { name: 'ValidationError' },
  INVALID_STATE: { name: 'InvalidState' },
  AUTHENTICATION_REQUIRED: { name: 'AuthenticationRequired' },
  USAGE_LIMIT: { name: 'UsageLimit' },
  NOT_AUTHORIZED: { name: 'NotAuthorized' },
  NOT_FOUND: { name: 'NotFound' },
  METHOD_NOT_ALLOWED: { name: 'MethodNotAllowed' },
  DUPLICATE_REQUEST: { name: 'DuplicateRequest' },
  OPERATION_IN_PROGRESS: { name: 'OperationInProgress' },
  PARTICIPANT_BLOCKED: { name: 'ParticipantBlocked' },
  RATE_LIMIT: { name: 'RateLimit' },
  INTERNAL_ERROR: { name: 'InternalError' },
  UNAVAILABLE: { name: 'Unavailable' },
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

/** A 400 lists at most this many problems; `errorCount` says how many there were in all. */
export const MAX_LISTED_ISSUES = 25;
/** An echoed value or parameter name is cut to this many characters. */
export const MAX_EXCERPT_CHARS = 64;

/** At most `max` characters (whole code points), with `…` when cut. */
export function clip(s: string, max = MAX_EXCERPT_CHARS): string {
  if (s.length <= max) return s;
  return `${Array.from(s.slice(0, max + 1))
    .slice(0, max)
    .join('')}…`;
}

/**
 * A short, safe echo of a bad value: numbers, booleans and null as they are, strings cut to
 * `MAX_EXCERPT_CHARS`, objects and arrays named by their size only (a body may be deep or huge).
 */
export function excerpt(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return clip(value);
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return `[array of ${value.length}]`;
  if (typeof value === 'object') return `{object with ${Object.keys(value).length} keys}`;
  return clip(String(value));
}

/**
 * The one 400 for bad input. Values are echoed as excerpts, and a long list of problems is cut to
 * `MAX_LISTED_ISSUES` (the message and `errorCount` say how many there were).
 */
export function validationError(issues: ValidationIssue[], message?: string): DomainError {
  const listed = issues.slice(0, MAX_LISTED_ISSUES).map((i) => ({
    location: i.location,
    param: clip(i.param, 200),
    value: excerpt(i.value),
    msg: i.msg,
  }));
  const more = issues.length - listed.length;
  const summary = listed
    .slice(0, 5)
    .map((i) => (i.param ? `${i.param}: ${i.msg}` : i.msg))
    .join('; ');
  const rest = issues.length - Math.min(listed.length, 5);
  return new DomainError(
    'VALIDATION_ERROR',
    message ?? (rest > 0 ? `${summary}; and ${rest} more problem${rest === 1 ? '' : 's'}` : summary),
    more > 0 ? { errors: listed, errorCount: issues.length } : { errors: listed },
  );
}

/** What core says of a `DUPLICATE_REQUEST`: when the identical request still in progress was accepted. */
export type DuplicateRequestDetails = {
  /** When the first of the identical requests was accepted, in UTC ms. */
  startedAt: number;
};

/**
 * An identical request (same caller, same operation, same input) is still in progress: the first must finish
 * before it may be repeated.
 */
export const duplicateRequest = (message: string, details: DuplicateRequestDetails, cause?: unknown) =>
  new DomainError('DUPLICATE_REQUEST', message, details, { cause });

export const notFound = (what: string) => new DomainError('NOT_FOUND', `${what} does not exist`);
export const notAuthorized = (message: string) => new DomainError('NOT_AUTHORIZED', message);
export const invalidState = (message: string) => new DomainError('INVALID_STATE', message);
export const unavailable = (message: string, cause?: unknown) =>
  new DomainError('UNAVAILABLE', message, {}, { cause });
