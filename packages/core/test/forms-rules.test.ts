import { describe, expect, it } from 'vitest';
import { checkFormData, DEFAULT_FORM_MESSAGES, formFieldKeyProblem, visibleFields } from '../src/rules/forms';

const fields = [
  { key: 'name', label: 'Name', isRequired: true },
  { key: 'url', isRequired: true, isVisible: true },
  { key: 'note', label: 'Note' },
  { key: 'secret', label: 'Hidden', isRequired: true, isVisible: false },
];

describe('checkFormData (a reward form, pure)', () => {
  it('passes a form with every visible required field, optional ones left out', () => {
    expect(checkFormData(fields, null, { name: 'Ada', url: 'https://x.test' })).toEqual([]);
    expect(checkFormData(fields, null, { name: 'Ada', url: 'u', note: '' })).toEqual([]);
  });

  it("names each missing or blank required field, in the reward's message after the field's label", () => {
    const issues = checkFormData(fields, { required: 'Needed!' }, { name: ' \t' });
    expect(issues.map((i) => [i.param, i.msg])).toEqual([
      ['formData.name', 'Name: Needed!'],
      ['formData.url', 'Needed!'],
    ]);
    expect(checkFormData(fields, {}, {})[0]!.msg).toBe(`Name: ${DEFAULT_FORM_MESSAGES.required}`);
  });

  it('refuses keys the form does not show, hidden fields included; prototype names are just unknown keys', () => {
    const data = Object.assign(Object.create(null) as Record<string, string>, {
      name: 'Ada',
      url: 'u',
      secret: 's',
      toString: 'x',
      constructor: 'y',
    });
    expect(checkFormData(fields, null, data).map((i) => i.param)).toEqual([
      'formData.secret',
      'formData.toString',
      'formData.constructor',
    ]);
    expect(visibleFields(fields).map((f) => f.key)).toEqual(['name', 'url', 'note']);
  });

  it('form-field keys: letters of any script, digits, _ and -, 1 to 100 of them; never a prototype name', () => {
    for (const key of ['url', 'postUrl', 'Straße_1', 'écrit-2', '名前', 'k'.repeat(100)]) {
      expect(formFieldKeyProblem(key), key).toBeNull();
    }
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      expect(formFieldKeyProblem(key)).toBe('this key is not allowed');
    }
    for (const key of ['', 'a b', 'a.b', 'a[b]', 'k'.repeat(101), 'a\nb']) {
      expect(formFieldKeyProblem(key), key).toMatch(/letters, digits/);
    }
  });
});
