import { badStringReason, type ValidationIssue, validationError } from '@stampcard/core';

/** Input limits enforced while a body is parsed, before any schema sees it (the README lists them). */
export const BODY_LIMITS = {
  /** Largest body, in bytes. */
  maxBytes: 1024 * 1024,
  /** Deepest nesting of objects and arrays; the top-level object is depth 1. */
  maxDepth: 6,
  /** Most fields in a form-encoded body. */
  maxFormFields: 1000,
} as const;

/** Keys that reach `Object.prototype` or a constructor when assigned: refused wherever they appear. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const tooDeep = () =>
  validationError(
    [
      {
        location: 'body',
        param: '',
        value: null,
        msg: `nested more than ${BODY_LIMITS.maxDepth} levels deep`,
      },
    ],
    `Request body is nested more than ${BODY_LIMITS.maxDepth} levels deep`,
  );

/**
 * Walks a parsed body once: keys that could pollute prototypes, and strings PostgreSQL refuses (NUL,
 * unpaired surrogates), in keys and values at every depth. Depth was bounded by the parser.
 */
export function checkTree(value: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const walk = (v: unknown, path: string[]) => {
    if (typeof v === 'string') {
      const why = badStringReason(v);
      if (why) issues.push({ location: 'body', param: path.join('.'), value: v, msg: why });
      return;
    }
    if (v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) walk(v[i], [...path, String(i)]);
      return;
    }
    for (const key of Object.keys(v)) {
      const at = [...path, key];
      if (FORBIDDEN_KEYS.has(key)) {
        issues.push({ location: 'body', param: at.join('.'), value: null, msg: 'this key is not allowed' });
        continue;
      }
      const why = badStringReason(key);
      if (why) {
        issues.push({ location: 'body', param: at.join('.'), value: null, msg: `a key ${why}` });
        continue;
      }
      walk((v as Record<string, unknown>)[key], at);
    }
  };
  walk(value, []);
  return issues;
}

/** Nesting depth of a JSON text, counted without parsing it, so a hostile text never reaches the parser. */
function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92 /* \ */) i++;
      else if (ch === 34 /* " */) inString = false;
    } else if (ch === 34) inString = true;
    else if (ch === 123 /* { */ || ch === 91 /* [ */) {
      if (++depth > max) return true;
    } else if (ch === 125 /* } */ || ch === 93 /* ] */) depth--;
  }
  return false;
}

const malformedJson = () =>
  validationError(
    [{ location: 'body', param: '', value: null, msg: 'is not valid JSON' }],
    'Malformed JSON in request body',
  );

/**
 * A JSON body, checked: depth at most `BODY_LIMITS.maxDepth`, no prototype keys, no string PostgreSQL
 * refuses. Every failure is a ValidationError naming the place.
 * @param malformed the error for a text that is not JSON at all. @defaultValue "Malformed JSON in request body"
 */
export function parseJsonBody(text: string, malformed: () => Error = malformedJson): unknown {
  if (jsonDepthExceeds(text, BODY_LIMITS.maxDepth)) throw tooDeep();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformed();
  }
  const issues = checkTree(value);
  if (issues.length > 0) throw validationError(issues);
  return value;
}

type Node = Record<string, unknown>;
const node = (): Node => Object.create(null) as Node;

/**
 * A form-encoded body as the JSON it stands for, nested keys as forms write them (`metadata[points]=5` →
 * `{ metadata: { points: "5" } }`, `a[]=1&a[]=2` → an array). Objects are null-prototype, the field count
 * and depth are bounded, and the result passes the same checks as a JSON body.
 */
export function parseFormBody(text: string): Node {
  const out = node();
  let fields = 0;
  for (const [rawKey, value] of new URLSearchParams(text)) {
    if (++fields > BODY_LIMITS.maxFormFields) {
      throw validationError(
        [
          {
            location: 'body',
            param: '',
            value: null,
            msg: `more than ${BODY_LIMITS.maxFormFields} form fields`,
          },
        ],
        `Request body has more than ${BODY_LIMITS.maxFormFields} form fields`,
      );
    }
    const keys = rawKey.match(/^[^[\]]+|\[[^[\]]*\]/g)?.map((k) => k.replace(/^\[|\]$/g, '')) ?? [rawKey];
    if (keys.length > BODY_LIMITS.maxDepth) throw tooDeep();
    let at = out;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (key === '') continue;
      if (i === keys.length - 1) {
        at[key] = value;
      } else if (keys[i + 1] === '') {
        const arr = Array.isArray(at[key]) ? (at[key] as unknown[]) : [];
        arr.push(value);
        at[key] = arr;
        break;
      } else {
        const next = at[key];
        if (typeof next !== 'object' || next === null || Array.isArray(next)) at[key] = node();
        at = at[key] as Node;
      }
    }
  }
  const issues = checkTree(out);
  if (issues.length > 0) throw validationError(issues);
  return out;
}
