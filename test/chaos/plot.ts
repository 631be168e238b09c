/** One line of a panel: its name in the legend, and its points (x in minutes). */
export type Series = { name: string; points: [number, number][] };
/** A chart of one quantity over the run: its lines share the y axis. */
export type Panel = { title: string; unit: string; series: Series[] };

const WIDTH = 760;
const PANEL_HEIGHT = 260;
const MARGIN = { left: 64, right: 150, top: 34, bottom: 40 };
/** Colours that stay apart for the common kinds of colour blindness (Okabe–Ito), each with its own dash. */
const LINES = [
  { color: '#0072B2', dash: '' },
  { color: '#D55E00', dash: '6 3' },
  { color: '#009E73', dash: '2 3' },
  { color: '#CC79A7', dash: '8 3 2 3' },
  { color: '#E69F00', dash: '1 2' },
];

const escapeXml = (s: string) =>
  s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** A round step for about `n` ticks over `span`: 1, 2 or 5 times a power of ten. */
function step(span: number, n: number): number {
  const raw = span / n;
  const power = 10 ** Math.floor(Math.log10(raw || 1));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? raw;
}

const label = (v: number) =>
  Math.abs(v) >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1);

function panel(p: Panel, top: number, xMax: number): string {
  const w = WIDTH - MARGIN.left - MARGIN.right;
  const h = PANEL_HEIGHT - MARGIN.top - MARGIN.bottom;
  const ys = p.series.flatMap((s) => s.points.map(([, y]) => y));
  const yStep = step(Math.max(...ys, 1), 4);
  const yMax = Math.ceil(Math.max(...ys, 1) / yStep) * yStep;
  const xStep = step(xMax, 8);
  const x = (v: number) => Math.round((MARGIN.left + (v / xMax) * w) * 10) / 10;
  const y = (v: number) => Math.round((top + MARGIN.top + h - (v / yMax) * h) * 10) / 10;
  const out: string[] = [
    `<text x="${MARGIN.left}" y="${top + 20}" font-size="14" font-weight="bold">${escapeXml(p.title)}</text>`,
  ];
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    out.push(
      `<line x1="${x(0)}" x2="${x(xMax)}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${MARGIN.left - 6}" y="${y(v) + 4}" font-size="11" text-anchor="end">${label(v)}</text>`,
    );
  }
  for (let v = 0; v <= xMax + 1e-9; v += xStep) {
    out.push(
      `<line x1="${x(v)}" x2="${x(v)}" y1="${y(0)}" y2="${y(0) + 4}" stroke="#333"/>`,
      `<text x="${x(v)}" y="${y(0) + 16}" font-size="11" text-anchor="middle">${label(v)}</text>`,
    );
  }
  out.push(
    `<line x1="${x(0)}" x2="${x(xMax)}" y1="${y(0)}" y2="${y(0)}" stroke="#333"/>`,
    `<text x="${x(xMax / 2)}" y="${y(0) + 32}" font-size="11" text-anchor="middle">minutes</text>`,
    `<text transform="translate(16 ${y(yMax / 2)}) rotate(-90)" font-size="11" text-anchor="middle">${escapeXml(p.unit)}</text>`,
  );
  p.series.forEach((s, i) => {
    const line = LINES[i % LINES.length]!;
    const d = s.points.map(([px, py], j) => `${j ? 'L' : 'M'}${x(px)} ${y(py)}`).join(' ');
    const dash = line.dash ? ` stroke-dasharray="${line.dash}"` : '';
    const ly = top + MARGIN.top + 8 + i * 18;
    out.push(
      `<path d="${d}" fill="none" stroke="${line.color}" stroke-width="1.6"${dash}/>`,
      `<line x1="${WIDTH - MARGIN.right + 12}" x2="${WIDTH - MARGIN.right + 36}" y1="${ly}" y2="${ly}" stroke="${line.color}" stroke-width="2"${dash}/>`,
      `<text x="${WIDTH - MARGIN.right + 42}" y="${ly + 4}" font-size="12">${escapeXml(s.name)}</text>`,
    );
  });
  return out.join('\n');
}

/**
 * The panels one above the other, as a standalone SVG with a title and a description (what a screen reader
 * reads): no library, no script, no external font.
 */
export function svgPlot(title: string, description: string, panels: Panel[]): string {
  const xMax = Math.max(...panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([x]) => x))), 0.1);
  const height = panels.length * PANEL_HEIGHT;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-labelledby="t d" font-family="sans-serif">`,
    `<title id="t">${escapeXml(title)}</title>`,
    `<desc id="d">${escapeXml(description)}</desc>`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    ...panels.map((p, i) => panel(p, i * PANEL_HEIGHT, xMax)),
    '</svg>',
    '',
  ].join('\n');
}
