import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Every Markdown file of the project's own: the root's, docs/, and each workspace's README. */
function markdownFiles(): string[] {
  const found = readdirSync(ROOT).filter((f) => f.endsWith('.md'));
  found.push(
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  );
  for (const group of ['apps', 'packages']) {
    for (const dir of readdirSync(join(ROOT, group))) {
      if (existsSync(join(ROOT, group, dir, 'README.md'))) found.push(`${group}/${dir}/README.md`);
    }
  }
  return found;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replaceAll(' ', '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.*)$/gm)].map((m) => slug(m[1]!)));
}

describe('the documentation', () => {
  it('links only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const file of markdownFiles()) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const resolved = path ? normalize(join(dirname(file), path)) : file;
        if (!existsSync(join(ROOT, resolved))) {
          broken.push(`${file}: ${target} (no file ${relative('.', resolved)})`);
        } else if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) {
          broken.push(`${file}: ${target} (no heading #${anchor})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
