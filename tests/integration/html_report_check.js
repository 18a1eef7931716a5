// SPDX-License-Identifier: Apache-2.0
// Renders a shootdown report.html in headless Chromium (Debian's
// /usr/bin/chromium driven by playwright-core; no browser download) and
// checks it by DOM/SVG structure. Used by html_report.sh and
// scripts/screenshot.sh.
//
// usage: node html_report_check.js REPORT.html OUT.png [--clip HEIGHT] [--from SEL --to SEL] [--no-checks]
//   --clip H        screenshot only the top H pixels (default: the full page)
//   --from/--to     screenshot from the top of element SEL to the top of SEL
// Prints TAP-like "ok"/"not ok" lines; exits 1 when a check failed.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const args = process.argv.slice(2);
const report = path.resolve(args[0]);
const png = path.resolve(args[1]);
const clipAt = args.indexOf('--clip');
const clipHeight = clipAt >= 0 ? Number(args[clipAt + 1]) : 0;
const checks = !args.includes('--no-checks');
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const fromSel = opt('--from'), toSel = opt('--to');
const pw = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');

let n = 0, failed = 0;
function check(cond, what, detail) {
  n++;
  if (cond) console.log(`ok ${n} - ${what}`);
  else { failed++; console.log(`not ok ${n} - ${what}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`); }
}

(async () => {
  const userData = fs.mkdtempSync(path.join(os.tmpdir(), 'shootdown-chromium-'));
  const ctx = await pw.chromium.launchPersistentContext(userData, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1040, height: 900 },
    offline: true,
  });
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    const errors = [], requests = [];
    const url = 'file://' + report;
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') errors.push(`${m.type()}: ${m.text()}`); });
    page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
    page.on('request', (r) => { if (r.url() !== url) requests.push(r.url()); });
    page.on('requestfailed', (r) => { if (r.url() !== url) requests.push('failed: ' + r.url()); });
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForTimeout(300);

    if (checks) {
      const s = await page.evaluate(() => {
        const q = (sel, root = document) => Array.from(root.querySelectorAll(sel));
        const body = document.body.dataset;
        const chart = (svg) => ({
          victim: svg.dataset.victim, release: svg.dataset.release, scale: svg.dataset.scale,
          series: q('path.series', svg).map((p) => p.dataset.series),
          emptySeries: q('path.series', svg).filter((p) => p.getAttribute('d').length < 2).length,
          before: q('line.marker[data-kind="before"]', svg).length,
          after: q('line.marker[data-kind="after"]', svg).length,
          bands: q('rect.band', svg).length,
          ticks: Object.fromEntries(q('path.ticks', svg).map((t) => [t.dataset.kind, Number(t.dataset.count)])),
          bars: q('rect.bar', svg).map((b) => b.dataset.kind),
          zoom: svg.dataset.zoom, attributed: svg.dataset.attributed, coverage: svg.dataset.coverage,
          bucketNs: Number(svg.dataset.bucketNs), buckets: Number(svg.dataset.buckets),
          releaseBands: q('rect.band[data-kind="release"]', svg).length,
          stacks: Object.fromEntries(q('path.stack', svg).map((p) => [p.dataset.kind, Number(p.dataset.total)])),
          notes: q('text.note', svg).map((t) => t.textContent),
          visible: svg.getBoundingClientRect().width > 0,
        });
        const bad = q('svg *').filter((e) => Array.from(e.attributes).some((a) => /NaN|Infinity|undefined/.test(a.value))).length;
        return {
          releases: Number(body.releases), victims: Number(body.victims), evidence: body.kernelEvidence,
          timeseries: q('svg[data-chart="timeseries"]').map(chart),
          raw: q('svg[data-chart="raw"]').map(chart),
          distribution: q('svg[data-chart="distribution"]').map(chart),
          stalls: q('svg[data-chart="stalls"]').map(chart),
          stallTimeline: q('svg[data-chart="stall-timeline"]').map(chart),
          phaseTables: q('table.phases').length,
          phaseRows: q('tr.phase-row').map((r) => r.dataset.phase),
          counterRows: q('tr.counter-row').length,
          meaning: (document.querySelector('#summary .meaning') || {}).textContent || '',
          externals: q('script[src],link[rel=stylesheet],img,iframe,object,embed').length,
          badAttrs: bad,
        };
      });
      const R = s.releases, V = s.victims;
      check(errors.length === 0, 'no console errors or warnings', errors);
      check(requests.length === 0, 'no network requests besides the file itself', requests);
      check(s.externals === 0, 'no external scripts, styles, images or frames', s.externals);
      check(s.badAttrs === 0, 'no NaN/Infinity/undefined in SVG attributes', s.badAttrs);
      check(R >= 1 && V >= 1, `report has ${R} release(s) and ${V} victim(s)`, { R, V });
      check(s.meaning.length > 80, '"what this means" paragraph generated', s.meaning);
      console.log('# ' + s.meaning);
      // Phase tables: per batch and per page for each victim, 3 phases each.
      check(s.phaseTables === 2 * V, 'two phase tables per victim', s.phaseTables);
      check(s.phaseRows.length === 6 * V && ['baseline', 'release', 'after'].every((p) => s.phaseRows.includes(p)),
            'phase rows baseline/release/after', s.phaseRows);
      check(s.counterRows >= 2, '/proc/interrupts rows for culprit and victim', s.counterRows);
      // Chart 1: log and linear per victim; all releases marked.
      check(s.timeseries.length === 2 * V, 'chart 1: a log and a linear time series per victim', s.timeseries.length);
      for (const c of s.timeseries) {
        const tag = `chart 1 cpu${c.victim} ${c.scale}`;
        check(['p50', 'p90', 'p99', 'max'].every((x) => c.series.includes(x)) && c.emptySeries === 0, `${tag}: series p50/p90/p99/max drawn`, c.series);
        check(c.before === R && c.after === R && c.before + c.after === 2 * R, `${tag}: markers == releases x 2 (${2 * R})`, c);
        check(c.bands === R, `${tag}: one shaded window per release`, c.bands);
      }
      check(s.timeseries.filter((c) => c.visible).length === V, 'chart 1: one scale visible per victim (log by default)');
      for (const c of s.timeseries) {
        const n = c.buckets;
        check(c.bucketNs >= 1e5 && n >= 1 && n <= 1500, `chart 1 cpu${c.victim} ${c.scale}: ${n} time buckets of ${c.bucketNs / 1e6} ms`, c);
      }
      // Chart 2: stall time per time bucket stacked by cause, release windows shaded.
      const shown = s.stallTimeline.filter((c) => c.visible);
      check(shown.length === V, 'chart 2: one stall timeline visible per victim', s.stallTimeline.map((c) => [c.victim, c.zoom, c.visible]));
      for (const c of shown) {
        const tag = `chart 2 cpu${c.victim} (${c.zoom === 'kernel' ? 'zoomed' : 'full scale'})`;
        check(c.releaseBands === R, `${tag}: every release window shaded (${R})`, c.releaseBands);
        check(c.before === R && c.after === R, `${tag}: before/after markers per release`, c);
        check(Object.keys(c.stacks).length > 0 && c.buckets > 0, `${tag}: stacked layers over ${c.buckets} buckets of ${c.bucketNs / 1e6} ms`, c.stacks);
        if (process.env.READ_BACK === '1')
          check(c.coverage === 'raw-windows' && c.notes.some((t) => /kept around the releases/.test(t)),
                `${tag}: read back from result.json, says it covers only the kept raw windows`, c);
        else
          check(c.coverage === 'all-samples', `${tag}: covers all samples (a fresh run)`, c.coverage);
        console.log(`# ${tag} stall ns by layer ${JSON.stringify(c.stacks)}`);
        if (s.evidence === 'yes')
          check(c.attributed === 'yes' && ['tlb-shootdown', 'other-ipi', 'resched', 'irq', 'timer', 'preempted', 'unexplained'].every((k) => k in c.stacks),
                `${tag}: stacked by cause (7 layers)`, c.stacks);
        else
          check(c.attributed === 'no' && 'unattributed' in c.stacks && c.notes.length > 0, `${tag}: one unattributed layer and a note`, c);
      }
      if (s.evidence === 'yes' && process.env.EXPECT_SHOOTDOWNS === '1')
        check(shown.some((c) => c.stacks['tlb-shootdown'] > 0 && c.releaseBands > 0),
              'chart 2: stacked stall chart with a shaded release window and a nonzero tlb-shootdown series',
              shown.map((c) => c.stacks));
      // Chart 3: raw samples around each release, kernel events as ticks.
      check(s.raw.length === V * Math.min(R, 6), 'chart 3: one raw chart per victim and release (max 6)', s.raw.length);
      for (const c of s.raw) {
        const tag = `chart 3 cpu${c.victim} release ${c.release}`;
        check(c.series.includes('latency') && c.emptySeries === 0, `${tag}: latency series drawn`, c.series);
        check(c.before === 1 && c.after === 1 && c.bands === 1, `${tag}: before/after markers and window`, c);
        if (s.evidence === 'yes') {
          check(['tlb-shootdown', 'other-ipi', 'timer', 'irq'].every((k) => k in c.ticks), `${tag}: tick rows by type`, c.ticks);
          console.log(`# ${tag} ticks ${JSON.stringify(c.ticks)}`);
        } else {
          check(c.notes.some((t) => /no kernel (evidence|events)/.test(t)), `${tag}: says kernel evidence is missing`, c.notes);
        }
      }
      if (s.evidence === 'yes' && process.env.EXPECT_SHOOTDOWNS === '1')
        check(s.raw.some((c) => (c.ticks['tlb-shootdown'] || 0) > 0), 'chart 3: TLB shootdown ticks inside a release window');
      // Chart 4: distribution per phase.
      check(s.distribution.length === V, 'chart 4: one distribution chart per victim', s.distribution.length);
      for (const c of s.distribution)
        check(c.series.includes('baseline') && c.series.includes('release') && c.emptySeries === 0,
              `chart 4 cpu${c.victim}: baseline and release-window curves`, c.series);
      // Chart 5: stall time by cause.
      check(s.stalls.length === V, 'chart 5: one stall chart per victim', s.stalls.length);
      for (const c of s.stalls) {
        if (s.evidence === 'yes')
          check(['tlb-shootdown', 'timer', 'unexplained'].every((k) => c.bars.includes(k)), `chart 5 cpu${c.victim}: bars per cause`, c.bars);
        else
          check(c.bars.includes('unattributed') && c.notes.length > 0, `chart 5 cpu${c.victim}: unattributed bar and a note`, c);
      }
      // Hover readout: the inline script runs and maps pixels to values.
      const frame = page.locator('svg[data-chart="timeseries"][data-scale="log"] rect.frame').first();
      await frame.scrollIntoViewIfNeeded();
      const box = await frame.boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      const readout = await page.locator('svg[data-chart="timeseries"][data-scale="log"] text.readout').first();
      const rtext = await readout.textContent();
      check((await readout.getAttribute('visibility')) === 'visible' && /(ns|µs|ms|s)\s+→\s+[\d.]+\s*(ns|µs|ms|s)/.test(rtext),
            'hover shows time and latency under the cursor', rtext);
      await page.mouse.move(0, 0);
      // Log/linear toggle.
      await page.locator('input.logtoggle').first().uncheck();
      const linVisible = await page.locator('svg[data-chart="timeseries"][data-scale="linear"]').first().isVisible();
      const logHidden = !(await page.locator('svg[data-chart="timeseries"][data-scale="log"]').first().isVisible());
      check(linVisible && logHidden, 'log-scale checkbox switches chart 1 to linear');
      await page.locator('input.logtoggle').first().check();
      // Chart 2's zoom checkbox (present when preemption towers over the shootdowns).
      if (await page.locator('input.zoomtoggle').count() > 0) {
        await page.locator('input.zoomtoggle').first().uncheck();
        const full = await page.locator('svg[data-chart="stall-timeline"][data-zoom="full"]').first().isVisible();
        const zoomedHidden = !(await page.locator('svg[data-chart="stall-timeline"][data-zoom="kernel"]').first().isVisible());
        check(full && zoomedHidden, 'zoom checkbox switches chart 2 to full scale');
        await page.locator('input.zoomtoggle').first().check();
      }
      check(errors.length === 0, 'still no console errors after interaction', errors);

      // The screen sizes people take screenshots at: nothing wider than the
      // window, every chart kind shown for every victim, each chart drawn at
      // a readable size and no chart text (legend, labels, notes) outside
      // its chart.
      for (const [w, h] of [[1280, 800], [1920, 1080]]) {
        await page.setViewportSize({ width: w, height: h });
        await page.waitForTimeout(100);
        const v = await page.evaluate(() => {
          const vw = document.documentElement.clientWidth;
          const charts = Array.from(document.querySelectorAll('svg.chart')).filter((svg) => svg.getBoundingClientRect().width > 0);
          const out = { vw, scrollW: document.documentElement.scrollWidth, kinds: {}, small: [], outside: [], textOut: [] };
          for (const svg of charts) {
            const r = svg.getBoundingClientRect();
            const k = svg.dataset.chart;
            out.kinds[k] = (out.kinds[k] || 0) + 1;
            if (r.width < 600 || r.height < 100) out.small.push([k, svg.dataset.victim, Math.round(r.width), Math.round(r.height)]);
            if (r.left < -0.5 || r.right > vw + 0.5) out.outside.push([k, Math.round(r.left), Math.round(r.right)]);
            for (const t of svg.querySelectorAll('text')) {
              if (t.getAttribute('visibility') === 'hidden' || !t.textContent) continue;
              const b = t.getBoundingClientRect();
              if (b.width > 0 && (b.left < r.left - 1 || b.right > r.right + 1))
                out.textOut.push([k, t.getAttribute('class'), t.textContent.slice(0, 40), Math.round(b.right - r.right)]);
            }
          }
          return out;
        });
        const tag = `${w}x${h}`;
        check(v.scrollW <= v.vw, `${tag}: no horizontal overflow (page ${v.scrollW} px, window ${v.vw} px)`, v);
        const want = { timeseries: V, 'stall-timeline': V, raw: V * Math.min(R, 6), distribution: V, stalls: V };
        check(Object.entries(want).every(([k, n]) => v.kinds[k] === n), `${tag}: every chart shown (${JSON.stringify(v.kinds)})`, want);
        check(v.small.length === 0, `${tag}: every chart at least 600x100 px`, v.small);
        check(v.outside.length === 0, `${tag}: every chart inside the window`, v.outside);
        check(v.textOut.length === 0, `${tag}: no chart text outside its chart`, v.textOut.slice(0, 5));
      }
      await page.setViewportSize({ width: 1040, height: 900 });
    }

    const shot = { path: png, fullPage: clipHeight === 0 };
    if (clipHeight > 0) shot.clip = { x: 0, y: 0, width: 1040, height: clipHeight };
    if (fromSel && toSel) {
      const [y0, y1] = await page.evaluate(([a, b]) => [a, b].map((sel) =>
        document.querySelector(sel).getBoundingClientRect().top + window.scrollY), [fromSel, toSel]);
      shot.fullPage = true;
      shot.clip = { x: 0, y: Math.max(0, y0 - 8), width: 1040, height: y1 - y0 };
    }
    await page.screenshot(shot);
    console.log(`# screenshot: ${png} (${fs.statSync(png).size} bytes)`);
  } finally {
    await ctx.close();
    fs.rmSync(userData, { recursive: true, force: true });
  }
  if (checks) console.log(`1..${n}`);
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.log('not ok - ' + (e && e.stack || e)); process.exit(1); });
