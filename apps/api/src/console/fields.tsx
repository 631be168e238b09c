/** @jsxImportSource hono/jsx */
import { validationError } from '@stampcard/core';
import type { z } from 'zod';
import { parseJsonBody } from '../lib/parse-body';

/**
 * A form's fields, described once: the page draws each from its description, and the posted form is read back
 * into the body the operator API takes, which the API's own schema then checks. Empty means "none": null for a
 * field that takes null, absent otherwise.
 */
export type Field =
  | { kind: 'text' | 'textarea' | 'url'; name: string; label: string; max?: number; required?: boolean }
  | { kind: 'number'; name: string; label: string; min?: number; step?: string }
  | { kind: 'checkbox'; name: string; label: string }
  | { kind: 'select'; name: string; label: string; options: { value: string; label: string }[] }
  /** One entry per line (anti-fraud lists). */
  | { kind: 'lines'; name: string; label: string }
  /** A JSON object (metadata). */
  | { kind: 'json'; name: string; label: string };

/** The form field that says a checkbox was on the form (an unticked box sends nothing at all). */
export const PRESENT = (name: string) => `${name}.present`;

/** A field's input with its label; `value` is what the field holds now. */
export function FieldInput(props: { field: Field; value: unknown; idPrefix: string }) {
  const f = props.field;
  const id = `${props.idPrefix}-${f.name.replaceAll('.', '-')}`;
  const v = props.value;
  const text = v === null || v === undefined ? '' : String(v);
  switch (f.kind) {
    case 'checkbox':
      return (
        <label for={id} class="check">
          <input type="hidden" name={PRESENT(f.name)} value="1" />
          <input type="checkbox" id={id} name={f.name} value="true" checked={v === true} /> {f.label}
        </label>
      );
    case 'select':
      return (
        <>
          <label for={id}>{f.label}</label>
          <select id={id} name={f.name}>
            {f.options.map((o) => (
              <option value={o.value} selected={text === o.value}>
                {o.label}
              </option>
            ))}
          </select>
        </>
      );
    case 'textarea':
    case 'lines':
    case 'json':
      return (
        <>
          <label for={id}>{f.label}</label>
          <textarea
            id={id}
            name={f.name}
            rows={f.kind === 'textarea' ? 3 : 5}
            class={f.kind === 'json' ? 'mono' : undefined}
          >
            {f.kind === 'lines' && Array.isArray(v)
              ? v.join('\n')
              : f.kind === 'json'
                ? JSON.stringify(v ?? {}, null, 2)
                : text}
          </textarea>
        </>
      );
    case 'number':
      return (
        <>
          <label for={id}>{f.label}</label>
          <input id={id} name={f.name} type="number" min={f.min} step={f.step ?? '1'} value={text} />
        </>
      );
    default:
      return (
        <>
          <label for={id}>{f.label}</label>
          <input
            id={id}
            name={f.name}
            type={f.kind === 'url' ? 'url' : 'text'}
            maxlength={f.max}
            required={f.required}
            value={text}
          />
        </>
      );
  }
}

/** A JSON object typed in a textarea, read as the API reads a body (depth, prototype keys, strings). */
function jsonObject(name: string, text: string): Record<string, unknown> {
  const refused = () =>
    validationError([{ location: 'body', param: name, value: null, msg: 'must be a JSON object' }]);
  const value = parseJsonBody(text.trim() === '' ? '{}' : text, refused);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw refused();
  return value as Record<string, unknown>;
}

/**
 * The posted values of `fields`, by name, as the API's body would carry them: numbers as numbers (a value that
 * is not one stays text, for the schema to refuse), lines as arrays, JSON as objects, a checkbox as a boolean
 * when the form had it; an empty field null. A field the form did not send is left out.
 */
export function readFields(
  fields: Field[],
  form: Record<string, string | undefined>,
): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null);
  for (const f of fields) {
    if (f.kind === 'checkbox') {
      if (form[PRESENT(f.name)] !== undefined) out[f.name] = form[f.name] === 'true';
      continue;
    }
    const raw = form[f.name];
    if (raw === undefined) continue;
    const value = raw.trim();
    if (value === '' && f.kind !== 'json') {
      out[f.name] = f.kind === 'lines' ? [] : null;
      continue;
    }
    if (f.kind === 'number') out[f.name] = Number.isFinite(Number(value)) ? Number(value) : value;
    else if (f.kind === 'lines') {
      out[f.name] = value
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter(Boolean);
    } else if (f.kind === 'json') out[f.name] = jsonObject(f.name, raw);
    else out[f.name] = f.kind === 'textarea' ? raw : value;
  }
  return out;
}

/** A schema's refusal in a sentence, field by field. */
export const problemOf = (error: z.ZodError) =>
  `Not changed: ${error.issues.map((i) => `${i.path.join('.') || 'form'} ${i.message}`).join('; ')}`;

/** Options of a select from a list of values, with a first "none" when the field may be empty. */
export const optionsOf = (values: readonly string[], none?: string) => [
  ...(none === undefined ? [] : [{ value: '', label: none }]),
  ...values.map((v) => ({ value: v, label: v })),
];
