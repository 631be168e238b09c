import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

/** Where the console's files are served: libraries from their npm packages, and the console's own. */
export const ASSETS_PATH = '/console/assets';

/**
 * The console's own script: draws the overview's chart with uPlot from the JSON the page carries
 * (the `data-chart` of `#overview-data`), and again each time htmx swaps in a fresh copy. No inline script anywhere: the page's
 * policy allows scripts from this service only.
 */
const CONSOLE_JS = `'use strict';
(function () {
  var plot = null;
  var SERIES = [
    { key: 'accepted', label: 'Actions accepted', stroke: '#1d4ed8' },
    { key: 'applied', label: 'Actions applied', stroke: '#15803d' },
    { key: 'delivered', label: 'Deliveries OK', stroke: '#7c3aed' },
    { key: 'failed', label: 'Deliveries failed', stroke: '#b91c1c' },
    { key: 'throttled', label: 'Deliveries throttled', stroke: '#b45309' }
  ];
  function width(el) { return Math.max(260, el.clientWidth); }
  function draw() {
    var source = document.getElementById('overview-data');
    var el = document.getElementById('overview-chart');
    if (!source || !el || typeof uPlot === 'undefined') return;
    var d = JSON.parse(source.getAttribute('data-chart') || '{}');
    var data = [d.t].concat(SERIES.map(function (s) { return d[s.key]; }));
    if (plot && plot.root.isConnected) { plot.setData(data); return; }
    el.textContent = '';
    plot = new uPlot({
      width: width(el),
      height: 240,
      scales: { x: { time: true } },
      axes: [{}, { label: 'per minute' }],
      series: [{ label: 'Minute' }].concat(SERIES.map(function (s) {
        return { label: s.label, stroke: s.stroke, width: 2 };
      }))
    }, data, el);
  }
  window.addEventListener('resize', function () {
    var el = document.getElementById('overview-chart');
    if (plot && el) plot.setSize({ width: width(el), height: 240 });
  });
  document.addEventListener('DOMContentLoaded', draw);
  document.addEventListener('htmx:after:swap', draw);

  // The import page: a chosen file's header is mapped by the server before the import can start; the file is
  // then sent as the API takes it (a CSV body, streamed), and its import's page opened.
  function setupImport() {
    var form = document.getElementById('import-form');
    if (!form) return;
    var file = document.getElementById('import-file');
    var mapping = document.getElementById('import-mapping');
    var start = document.getElementById('import-start');
    var status = document.getElementById('import-status');
    var headers = { 'content-type': 'text/csv', 'x-csrf-token': form.getAttribute('data-csrf') };
    function chosen() { return file.files && file.files[0]; }
    file.addEventListener('change', function () {
      start.disabled = true;
      mapping.textContent = '';
      status.textContent = '';
      var f = chosen();
      if (!f) return;
      f.slice(0, 65536).arrayBuffer().then(function (head) {
        return fetch(form.getAttribute('data-preview'), { method: 'POST', headers: headers, body: head, credentials: 'same-origin' });
      }).then(function (res) {
        return res.text().then(function (html) {
          mapping.innerHTML = html;
          start.disabled = !(res.ok && mapping.querySelector('[data-ready="true"]'));
        });
      }).catch(function () { status.textContent = 'The file could not be read: choose it again.'; });
    });
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var f = chosen();
      if (!f) return;
      start.disabled = true;
      status.textContent = 'Uploading ' + f.name + '…';
      var mode = document.getElementById('import-mode').value;
      var silent = document.getElementById('import-silent').checked ? 'true' : 'false';
      var url = form.getAttribute('data-upload') + '&mode=' + encodeURIComponent(mode) + '&silent=' + silent;
      fetch(url, { method: 'POST', headers: headers, body: f, credentials: 'same-origin' }).then(function (res) {
        return res.json().then(function (body) {
          if (res.ok) location.assign(form.getAttribute('data-imports') + '/' + encodeURIComponent(body.id));
          else { status.textContent = body.message || 'The upload failed.'; start.disabled = false; }
        });
      }).catch(function () { status.textContent = 'The upload failed: try again.'; start.disabled = false; });
    });
  }
  document.addEventListener('DOMContentLoaded', setupImport);
})();
`;

const CONSOLE_CSS = `
:root { color-scheme: light; --fg: #111827; --muted: #4b5563; --line: #d1d5db; --bg: #ffffff; --accent: #1d4ed8; --bad: #b91c1c; --ok: #15803d; --code-bg: #f3f4f6; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: -9999px; }
.skip:focus { left: 1rem; top: 1rem; background: #fff; padding: .5rem; z-index: 10; }
header.top { display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; align-items: center; padding: .75rem 1.25rem; border-bottom: 1px solid var(--line); }
header.top .brand { font-weight: 700; margin-right: auto; }
nav ul { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: 0; padding: 0; }
nav a[aria-current="page"] { font-weight: 700; color: var(--fg); }
button { font: inherit; padding: .4rem .9rem; border: 1px solid var(--accent); background: var(--accent); color: #fff; border-radius: 4px; cursor: pointer; }
button.link { background: none; color: var(--accent); border-color: var(--line); }
main { padding: 1rem 1.25rem 2rem; max-width: 1200px; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
.muted { color: var(--muted); }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: .75rem; margin: 0; }
.cards div { border: 1px solid var(--line); border-radius: 6px; padding: .6rem .8rem; }
.cards dt { color: var(--muted); font-size: .875rem; }
.cards dd { margin: 0; font-size: 1.5rem; font-weight: 600; font-variant-numeric: tabular-nums; }
.table-wrap { overflow-x: auto; margin-top: 1.25rem; }
figure { margin: 0; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); }
td.n, th.n { text-align: right; }
.bad { color: var(--bad); font-weight: 600; }
#overview-chart { min-height: 240px; }
form.sign-in { max-width: 26rem; display: grid; gap: .75rem; }
form.sign-in input { font: inherit; padding: .45rem; border: 1px solid var(--muted); border-radius: 4px; width: 100%; }
.error { color: var(--bad); border: 1px solid var(--bad); padding: .5rem .75rem; border-radius: 4px; }
ul.plain { list-style: none; padding: 0; } ul.plain li { padding: .2rem 0; }
form.inline { display: flex; flex-wrap: wrap; gap: .4rem .6rem; align-items: center; margin: .25rem 0; }
form.inline input, form.inline select { font: inherit; padding: .3rem; border: 1px solid var(--muted); border-radius: 4px; max-width: 100%; }
.notice { border: 1px solid var(--line); padding: .5rem .75rem; border-radius: 4px; margin: .75rem 0; }
.notice code { word-break: break-all; }
form.stack input, form.stack select { max-width: 100%; }
form.stack > * { min-width: 0; }
#import-mapping code { word-break: break-all; }
progress { width: min(24rem, 100%); height: 1rem; vertical-align: middle; }
.cards dd.word { font-size: 1rem; overflow-wrap: anywhere; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .9rem; margin: 1rem 0; }
.answers { font-size: .85rem; word-break: break-all; max-width: 28rem; }
.spark .ok { fill: var(--ok); } .spark .fail { fill: var(--bad); }
form.stack { display: grid; gap: .4rem; max-width: 40rem; }
form.stack textarea { font: inherit; padding: .35rem; border: 1px solid var(--muted); border-radius: 4px; }
textarea.mono { font-family: monospace; font-size: .9rem; }
form.stack input, form.stack select { font: inherit; padding: .35rem; border: 1px solid var(--muted); border-radius: 4px; }
fieldset { border: 1px solid var(--line); border-radius: 4px; margin: 0 0 1rem; min-width: 0; }
fieldset.stack { display: grid; gap: .4rem; max-width: 40rem; }
fieldset.stack input, fieldset.stack select, fieldset.stack textarea { font: inherit; padding: .35rem; border: 1px solid var(--muted); border-radius: 4px; }
label.check { display: flex; gap: .4rem; align-items: center; }
.boxes { display: grid; grid-template-columns: repeat(auto-fill, minmax(17rem, 1fr)); gap: .2rem .8rem; font-size: .9rem; }
.boxes label { display: flex; gap: .4rem; align-items: baseline; min-width: 0; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; }
pre { overflow-x: auto; background: var(--code-bg); padding: .6rem; border-radius: 4px; font-size: .85rem; max-height: 32rem; }
dl.headers { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .8rem; font-family: monospace; font-size: .85rem; }
dl.headers dd { margin: 0; overflow-wrap: anywhere; }
ol.attempts { padding-left: 1.2rem; }
ul.columns { columns: 16rem; column-gap: 1.5rem; }
th.url { overflow-wrap: anywhere; min-width: 12rem; font-weight: 400; }
h1, h2, h3 { overflow-wrap: anywhere; }
pre { max-width: 100%; }
@media (max-width: 600px) {
  main { padding: .75rem; } header.top { padding: .6rem .75rem; }
  table { font-size: .875rem; } th, td { padding: .3rem .3rem; }
}
`;

type Asset = { type: string; body: () => Promise<string> };

const require = createRequire(import.meta.url);
const fromPackage = (specifier: string) => () => readFile(require.resolve(specifier), 'utf8');

/** Every file under `ASSETS_PATH`, by name. htmx and uPlot are the pinned npm packages' own builds. */
const ASSETS: Record<string, Asset> = {
  'htmx.min.js': { type: 'text/javascript', body: fromPackage('htmx.org/dist/htmx.min.js') },
  'uplot.min.js': { type: 'text/javascript', body: fromPackage('uplot/dist/uPlot.iife.min.js') },
  'uplot.min.css': { type: 'text/css', body: fromPackage('uplot/dist/uPlot.min.css') },
  'console.js': { type: 'text/javascript', body: async () => CONSOLE_JS },
  'console.css': { type: 'text/css', body: async () => CONSOLE_CSS },
};

const loaded = new Map<string, Promise<string>>();

/** A console asset's type and text (read once per process), or null for a name it does not have. */
export async function consoleAsset(name: string): Promise<{ type: string; body: string } | null> {
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!asset) return null;
  let body = loaded.get(name);
  if (!body) {
    body = asset.body();
    loaded.set(name, body);
  }
  return { type: `${asset.type}; charset=utf-8`, body: await body };
}
