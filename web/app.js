// The fulcrum dashboard: polls the agent's read-only /v1 API (docs/API.md) every 2 s and draws
// one panel per GPU (uPlot charts over 15 min / 1 h / 24 h), the host, alerts, jobs and the idle
// countdown. No token is sent; every request goes to the page's own origin. Unknown values
// (JSON null) are shown as "n/a", never as 0.
'use strict';

(() => {
  const POLL_MS = 2000;
  const REQUEST_TIMEOUT_MS = 5000;
  // since/step are /v1/series parameters (seconds); refresh_ms is how often the charts refetch.
  const WINDOWS = {
    '15m': { since: 900, step: 0, refresh_ms: 2000 },
    '1h': { since: 3600, step: 5, refresh_ms: 5000 },
    '24h': { since: 86400, step: 60, refresh_ms: 30000 },
  };
  const GIB = 1024 ** 3;
  // One chart per metric in each GPU panel. `max` gives the y range's top from the latest sample.
  const CHARTS = [
    { key: 'util', metric: 'gpu_utilization_ratio', title: 'Utilization', unit: '%',
      color: '#4ea1ff', scale: (v) => v * 100, max: () => 100, digits: 0 },
    { key: 'mem', metric: 'gpu_memory_used_bytes', title: 'Memory', unit: 'GiB',
      color: '#b07cff', scale: (v) => v / GIB,
      max: (g) => (g && g.memory_total_bytes != null ? g.memory_total_bytes / GIB : null), digits: 1 },
    { key: 'power', metric: 'gpu_power_watts', title: 'Power', unit: 'W',
      color: '#ffb347', scale: (v) => v, max: (g) => (g ? g.power_limit_watts : null), digits: 0 },
    { key: 'temp', metric: 'gpu_temperature_celsius', title: 'Temperature', unit: '°C',
      color: '#ff6b6b', scale: (v) => v, max: () => 100, digits: 0 },
  ];
  const MAX_RESOLVED_SHOWN = 10;
  const MIN_CHART_SPAN_SECONDS = 20;
  const SPARSE_POINTS = 30;
  // A running job silent this long is flagged (the agent's idle detector default: 120 s).
  const HEARTBEAT_STALE_SECONDS = 120;
  // An incremental series fetch reaches this far behind the newest point already drawn.
  const SERIES_OVERLAP_SECONDS = 10;
  // Browser and agent clocks may differ (a laptop looking through an SSH tunnel): beyond this,
  // the page puts "now" at the agent's latest sample time.
  const CLOCK_SKEW_TOLERANCE_SECONDS = 5;
  const SEVERITY_RANK = { critical: 0, error: 1, warning: 2, info: 3 };
  const STATUS_RANK = { firing: 0, pending: 1, resolved: 2 };

  const state = {
    window: windowFromHash(),
    gpus: new Map(),        // index -> {panel, charts: {key: chartView}, latest}
    alerts: [],
    seriesFetchedAt: 0,
    seriesWindow: null,     // the window the charts hold; null forces a full fetch
    seriesUntil: null,      // time of the newest point drawn (agent clock)
    lastOk: 0,
    failingSince: 0,
    missing: new Set(),     // endpoints this agent answers 404 to: not polled again
    idle: null,
    idleFetchedAt: 0,
    clockSkewSeconds: 0,    // agent clock minus browser clock, when beyond the tolerance
    intervalSeconds: 1,
  };

  // ---- small helpers --------------------------------------------------------------------------
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null) continue;
      if (k === 'class') node.className = v;
      else if (k === 'title') node.title = v;
      else node.setAttribute(k, v);
    }
    for (const c of children) {
      if (c == null) continue;
      node.append(c instanceof Node ? c : String(c));
    }
    return node;
  }

  function fmtNum(v, digits) {
    if (v == null || !Number.isFinite(v)) return 'n/a';
    return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }

  // Whole numbers as such (XID 79, 95 °C), others with one decimal.
  function fmtValue(v) {
    return fmtNum(v, v != null && Number.isInteger(v) ? 0 : 1);
  }

  function fmtBytes(v) {
    if (v == null) return 'n/a';
    if (v >= 1024 ** 4) return fmtNum(v / 1024 ** 4, 2) + ' TiB';
    if (v >= GIB) return fmtNum(v / GIB, 1) + ' GiB';
    return fmtNum(v / 1024 ** 2, 0) + ' MiB';
  }

  function fmtDuration(seconds) {
    if (seconds == null || !Number.isFinite(seconds)) return 'n/a';
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return s + ' s';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + String(s % 60).padStart(2, '0') + 's';
    const h = Math.floor(m / 60);
    if (h < 48) return h + 'h ' + String(m % 60).padStart(2, '0') + 'm';
    return Math.floor(h / 24) + 'd ' + (h % 24) + 'h';
  }

  function fmtClock(unixSeconds) {
    if (unixSeconds == null) return 'n/a';
    const d = new Date(unixSeconds * 1000);
    return d.toLocaleTimeString('en-GB', { hour12: false });
  }

  // HH:MM, or HH:MM:SS when the axis ticks are less than a minute apart.
  function fmtAxisTime(unixSeconds, tickSeconds) {
    const d = new Date(unixSeconds * 1000);
    const two = (n) => String(n).padStart(2, '0');
    const hm = two(d.getHours()) + ':' + two(d.getMinutes());
    return tickSeconds < 60 ? hm + ':' + two(d.getSeconds()) : hm;
  }

  function fmtUsd(v) {
    return v == null ? 'n/a' : '$' + fmtNum(v, 2);
  }

  function pct(part, whole) {
    return part != null && whole ? (100 * part) / whole : null;
  }

  function setBar(id, percent, warnAt, badAt) {
    const bar = $(id);
    const p = percent == null ? 0 : Math.min(100, Math.max(0, percent));
    bar.style.width = p + '%';
    bar.className = percent != null && percent >= badAt ? 'bad' : percent != null && percent >= warnAt ? 'warn' : '';
  }

  // "Now" on the agent's clock (Unix seconds).
  function nowSeconds() {
    return Date.now() / 1000 + state.clockSkewSeconds;
  }

  function windowFromHash() {
    const m = /w=(15m|1h|24h)/.exec(location.hash);
    return m ? m[1] : '15m';
  }

  // ---- fetching -------------------------------------------------------------------------------
  // Resolves to the parsed body, to null when the agent does not serve `path` (404), or throws.
  async function getJson(path) {
    const endpoint = path.split('?')[0];
    if (state.missing.has(endpoint)) return null;
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(), REQUEST_TIMEOUT_MS);
    try {
      const res = await fetch(path, { signal: ctrl.signal, cache: 'no-store' });
      if (res.status === 404) {
        state.missing.add(endpoint);
        return null;
      }
      if (!res.ok) throw new Error(endpoint + ': HTTP ' + res.status);
      return await res.json();
    } finally {
      clearTimeout(timer);
    }
  }

  // ---- header, host, idle ---------------------------------------------------------------------
  function renderHealth(h) {
    if (!h) return;
    if (h.interval_seconds) state.intervalSeconds = h.interval_seconds;
    $('hostname').textContent = (h.hostname || 'unknown host') + ' · ' + (h.source || '?') + ' source';
    document.title = 'fulcrum · ' + (h.hostname || 'agent');
    $('footer').textContent = 'fulcrum ' + (h.version || '') + ' · agent up ' + fmtDuration(h.uptime_seconds) +
      ' · sampling every ' + fmtNum(h.interval_seconds, h.interval_seconds < 1 ? 1 : 0) + ' s';
  }

  function renderHost(h) {
    if (!h) {
      $('host-cpu').textContent = 'n/a';
      return;
    }
    $('host-cpu').textContent = h.cpu_utilization_pct == null ? 'n/a' : fmtNum(h.cpu_utilization_pct, 0) + ' %';
    setBar('host-cpu-bar', h.cpu_utilization_pct, 80, 95);
    const ramPct = pct(h.memory_used_bytes, h.memory_total_bytes);
    $('host-ram').textContent = fmtBytes(h.memory_used_bytes) + ' / ' + fmtBytes(h.memory_total_bytes);
    setBar('host-ram-bar', ramPct, 80, 95);
    const usedPct = pct(h.disk_total_bytes != null && h.disk_free_bytes != null ? h.disk_total_bytes - h.disk_free_bytes : null,
      h.disk_total_bytes);
    $('host-disk').textContent = fmtBytes(h.disk_free_bytes) + (h.disk_total_bytes ? ' of ' + fmtBytes(h.disk_total_bytes) : '');
    const diskPath = h.disk_path || '';
    $('host-disk-path').textContent = diskPath.length > 28 ? 'in …' + diskPath.slice(-26) : diskPath ? 'in ' + diskPath : '';
    $('host-disk-path').title = diskPath;
    setBar('host-disk-bar', usedPct, 85, 95);
  }

  function renderIdle() {
    const i = state.idle;
    const value = $('idle');
    const sub = $('idle-sub');
    value.className = 'value';
    if (!i) {
      value.textContent = state.missing.has('/v1/idle') ? 'not served' : 'n/a';
      sub.textContent = '';
      return;
    }
    if (!i.enabled) {
      value.textContent = 'off';
      sub.textContent = 'not armed';
      return;
    }
    const dry = i.dry_run ? ' (dry run)' : '';
    if (i.idle && i.release_in_seconds != null) {
      const left = i.release_in_seconds - (nowSeconds() - state.idleFetchedAt);
      value.textContent = 'release in ' + fmtDuration(left);
      value.classList.add('warn-text');
      sub.textContent = 'idle for ' + fmtDuration(i.idle_seconds) + dry;
    } else {
      value.textContent = i.idle ? 'idle' : 'busy';
      sub.textContent = 'armed: releases after ' + fmtDuration(i.threshold_seconds) + ' idle' + dry;
    }
  }

  // ---- alerts ---------------------------------------------------------------------------------
  function sortAlerts(alerts) {
    return alerts.slice().sort((a, b) =>
      (STATUS_RANK[a.status] ?? 3) - (STATUS_RANK[b.status] ?? 3) ||
      (SEVERITY_RANK[a.severity] ?? 9) - (SEVERITY_RANK[b.severity] ?? 9) ||
      (b.status === 'resolved' ? (b.resolved_at || 0) - (a.resolved_at || 0) : (a.started_at || 0) - (b.started_at || 0)));
  }

  function alertSince(a) {
    if (a.status === 'resolved') {
      return fmtClock(a.started_at) + ' → ' + fmtClock(a.resolved_at) +
        ' (' + fmtDuration((a.resolved_at || 0) - (a.started_at || 0)) + ')';
    }
    return 'since ' + fmtClock(a.started_at) + ' (' + fmtDuration(nowSeconds() - a.started_at) + ')';
  }

  function renderAlerts(alerts) {
    state.alerts = alerts || [];
    const tbody = $('alerts').tBodies[0];
    const sorted = sortAlerts(state.alerts);
    const active = sorted.filter((a) => a.status !== 'resolved');
    const resolved = sorted.filter((a) => a.status === 'resolved');
    const shown = active.concat(resolved.slice(0, MAX_RESOLVED_SHOWN));
    const rows = shown.map((a) => el('tr', { class: 'alert-' + a.status, 'data-status': a.status, 'data-rule': a.name },
      el('td', {}, el('span', { class: 'badge status-' + a.status }, a.status)),
      el('td', { class: 'rule' }, a.name),
      el('td', {}, a.gpu == null ? 'host' : 'GPU ' + a.gpu),
      el('td', {}, el('span', { class: 'badge sev-' + (a.severity || 'none') }, a.severity || 'n/a')),
      el('td', { class: 'num' }, fmtValue(a.value) + (a.threshold != null ? ' (threshold ' + fmtValue(a.threshold) + ')' : '')),
      el('td', { class: 'since' }, alertSince(a)),
      el('td', { class: 'summary' }, a.summary || '')));
    if (resolved.length > MAX_RESOLVED_SHOWN) {
      rows.push(el('tr', { class: 'alert-resolved' }, el('td', { colspan: 7, class: 'muted' },
        '… and ' + (resolved.length - MAX_RESOLVED_SHOWN) + ' more resolved in the last 24 h')));
    }
    tbody.replaceChildren(...rows);
    const firing = state.alerts.filter((a) => a.status === 'firing').length;
    const pending = state.alerts.filter((a) => a.status === 'pending').length;
    $('alerts-count').textContent = firing + ' firing' + (pending ? ', ' + pending + ' pending' : '');
    $('alerts-count').className = 'count' + (firing ? ' bad' : '');
    $('alerts').hidden = rows.length === 0;
    $('alerts-empty').hidden = rows.length !== 0;
    $('alerts-empty').textContent = 'No alerts firing, pending or resolved in the last 24 h.';
    $('health-dot').className = 'dot ' + (firing ? 'bad' : pending ? 'warn' : 'ok');
  }

  // ---- jobs -----------------------------------------------------------------------------------
  function spendCell(j) {
    const p = pct(j.spend_usd, j.budget_usd);
    const bar = el('div', { class: 'bar' }, el('span', { class: p >= 100 ? 'bad' : p >= 80 ? 'warn' : '' }));
    bar.firstChild.style.width = Math.min(100, p || 0) + '%';
    return el('td', { class: 'spend' }, fmtUsd(j.spend_usd) + ' / ' + fmtUsd(j.budget_usd) +
      (p != null ? ' (' + fmtNum(p, 0) + ' %)' : ''), j.budget_usd ? bar : null);
  }

  // The newest supervisor alert of the job (crash_loop, budget, stall; /v1/jobs "alerts", newest
  // first, last 24 h), the summary on hover.
  function jobAlertCell(a) {
    if (!a) return el('td', { class: 'job-alert muted' }, 'none');
    return el('td', { class: 'job-alert', title: a.summary || '', 'data-alert': a.name },
      el('span', { class: 'badge sev-' + (a.severity || 'none') }, a.name),
      ' ' + fmtDuration(nowSeconds() - a.at) + ' ago');
  }

  function renderJobs(body) {
    const jobs = (body && body.jobs) || [];
    const newestAlert = {};
    for (const a of (body && body.alerts) || []) {
      if (!newestAlert[a.job]) newestAlert[a.job] = a;
    }
    const rows = jobs.map((j) => el('tr', { 'data-state': j.state },
      el('td', { class: 'rule' }, j.name || String(j.id)),
      el('td', {}, el('span', { class: 'badge job-' + j.state }, j.state || 'n/a')),
      el('td', {}, (j.gpus || []).join(', ') || '–'),
      el('td', { class: 'num' }, j.step == null ? 'n/a' : fmtNum(j.step, 0)),
      el('td', { class: 'num' + (j.restarts ? ' warn-text' : '') }, j.restarts == null ? 'n/a' : j.restarts),
      el('td', {}, j.last_checkpoint_age_seconds == null ? 'none' : fmtDuration(j.last_checkpoint_age_seconds) + ' ago'),
      el('td', { class: j.state === 'running' && j.heartbeat_age_seconds > HEARTBEAT_STALE_SECONDS ? 'warn-text' : '' },
        j.heartbeat_age_seconds == null ? 'n/a' : fmtDuration(j.heartbeat_age_seconds) + ' ago'),
      spendCell(j),
      jobAlertCell(newestAlert[j.id])));
    $('jobs').tBodies[0].replaceChildren(...rows);
    $('jobs-count').textContent = body ? String(jobs.length) : '';
    $('jobs').hidden = rows.length === 0;
    $('jobs-empty').hidden = rows.length !== 0;
    $('jobs-empty').textContent = body ? 'No supervised jobs.' : 'This agent does not serve /v1/jobs.';
  }

  // ---- GPU panels -----------------------------------------------------------------------------
  function makeChart(container, spec, gpuIndex) {
    const view = { spec, plot: null, data: [[], []], yMax: null, hoverIdx: null };
    const head = el('div', { class: 'chart-head' }, el('span', { class: 'chart-title' }, spec.title),
      el('span', { class: 'chart-value' }, 'n/a'));
    const body = el('div', { class: 'chart-body' });
    const box = el('div', { class: 'chart', 'data-metric': spec.metric, 'data-gpu': gpuIndex, 'data-points': '0', 'data-color': spec.color },
      head, body);
    container.append(box);
    view.box = box;
    view.valueEl = head.lastChild;
    const opts = {
      width: Math.max(120, body.clientWidth || 260),
      height: 110,
      legend: { show: false },
      cursor: { y: false, points: { size: 6 } },
      padding: [6, 14, 0, 0],
      scales: {
        // The window, or only the span that has data when the agent is younger than the window
        // (at least MIN_CHART_SPAN_SECONDS), so a fresh agent's charts are not a sliver.
        x: { time: true, range: (u) => {
          const now = nowSeconds();
          const first = u.data[0].length ? u.data[0][0] : now;
          return [Math.max(now - WINDOWS[state.window].since, Math.min(first, now - MIN_CHART_SPAN_SECONDS)), now];
        } },
        y: { range: (u, min, max) => [0, Math.max(view.yMax || 0, (max || 0) * 1.05, 1)] },
      },
      axes: [
        { stroke: '#8b949e', grid: { stroke: '#30363d', width: 1 }, ticks: { show: false }, size: 20,
          font: '10px system-ui', space: 60, values: (u, splits) => splits.map((t) => fmtAxisTime(t, splits[1] - splits[0])) },
        { stroke: '#8b949e', grid: { stroke: '#30363d', width: 1 }, ticks: { show: false }, size: 34,
          font: '10px system-ui', space: 24 },
      ],
      // Dots only where the line alone would be hard to see: a young agent's long window has
      // a handful of 1-minute buckets.
      series: [{}, { stroke: spec.color, width: 1.5, fill: spec.color + '22',
        points: { show: (u) => u.data[0].length <= SPARSE_POINTS, size: 7, fill: spec.color, stroke: spec.color } }],
      hooks: {
        setCursor: [(u) => { view.hoverIdx = u.cursor.idx; updateChartValue(view); }],
      },
    };
    view.plot = new uPlot(opts, view.data, body);
    new ResizeObserver(() => {
      const w = body.clientWidth;
      if (w > 0 && Math.abs(w - view.plot.width) > 1) view.plot.setSize({ width: w, height: 110 });
    }).observe(body);
    return view;
  }

  function updateChartValue(view) {
    const { spec } = view;
    const idx = view.hoverIdx;
    const xs = view.data[0];
    const ys = view.data[1];
    if (idx != null && idx >= 0 && idx < xs.length && ys[idx] != null) {
      view.valueEl.textContent = fmtNum(ys[idx], spec.digits) + ' ' + spec.unit + ' at ' + fmtClock(xs[idx]);
      return;
    }
    const last = ys.length ? ys[ys.length - 1] : null;
    const lastT = xs.length ? xs[xs.length - 1] : null;
    // A series that stopped (a GPU fallen off the bus) shows its last value with its time.
    const stale = lastT != null && nowSeconds() - lastT > Math.max(5, 3 * state.intervalSeconds);
    view.valueEl.textContent = last == null ? 'n/a' :
      fmtNum(last, spec.digits) + ' ' + spec.unit + (stale ? ' at ' + fmtClock(lastT) : '');
    view.valueEl.classList.toggle('muted', stale);
  }

  // Replaces the chart's points, or with `append` adds those newer than its last one; then drops
  // what fell out of the window.
  function setChartData(view, points, append) {
    const xs = append ? view.data[0].slice() : [];
    const ys = append ? view.data[1].slice() : [];
    const lastT = xs.length ? xs[xs.length - 1] : -Infinity;
    for (const [t, v] of points || []) {
      if (append && t <= lastT) continue;
      xs.push(t);
      ys.push(v == null ? null : view.spec.scale(v));
    }
    const from = nowSeconds() - WINDOWS[state.window].since;
    let drop = 0;
    while (drop < xs.length && xs[drop] < from) drop++;
    view.data = [xs.slice(drop), ys.slice(drop)];
    view.plot.setData(view.data);
    view.box.setAttribute('data-points', String(view.data[0].length));
    updateChartValue(view);
  }

  function ensurePanel(g) {
    let entry = state.gpus.get(g.index);
    if (entry) return entry;
    const title = el('div', { class: 'gpu-title' }, el('strong', {}, 'GPU ' + g.index), el('span', { class: 'gpu-name' }, ''));
    const uuid = el('div', { class: 'gpu-uuid muted' }, '');
    const stats = el('div', { class: 'stats' });
    const flags = el('div', { class: 'flags' });
    const charts = el('div', { class: 'charts' });
    const panel = el('article', { class: 'gpu', 'data-gpu': g.index, id: 'gpu-' + g.index }, title, uuid, stats, flags, charts);
    // Keep panels ordered by index.
    const after = [...$('gpus').children].find((p) => Number(p.dataset.gpu) > g.index);
    $('gpus').insertBefore(panel, after || null);
    entry = { panel, title, uuid, stats, flags, charts: {}, latest: g };
    for (const spec of CHARTS) entry.charts[spec.key] = makeChart(charts, spec, g.index);
    state.gpus.set(g.index, entry);
    state.seriesWindow = null;  // a new panel needs the whole window
    state.seriesFetchedAt = 0;
    return entry;
  }

  function stat(label, value, cls) {
    return el('div', { class: 'stat' + (cls ? ' ' + cls : '') }, el('div', { class: 'label' }, label), el('div', { class: 'value' }, value));
  }

  function renderGpu(g) {
    const entry = ensurePanel(g);
    entry.latest = g;
    entry.title.lastChild.textContent = g.name || 'unknown model';
    entry.uuid.textContent = g.uuid || '';
    const memPct = pct(g.memory_used_bytes, g.memory_total_bytes);
    const temp = g.temperature_celsius;
    entry.stats.replaceChildren(
      stat('Util', g.utilization_gpu_pct == null ? 'n/a' : fmtNum(g.utilization_gpu_pct, 0) + ' %'),
      stat('Memory', g.memory_used_bytes == null && g.memory_total_bytes == null ? 'n/a' :
        fmtBytes(g.memory_used_bytes) + ' / ' + fmtBytes(g.memory_total_bytes), memPct >= 90 ? 'warn' : ''),
      stat('Power', (g.power_watts == null ? 'n/a' : fmtNum(g.power_watts, 0) + ' W') +
        (g.power_limit_watts != null ? ' / ' + fmtNum(g.power_limit_watts, 0) + ' W' : '')),
      stat('Temp', temp == null ? 'n/a' : fmtNum(temp, 0) + ' °C', temp >= 85 ? 'bad' : temp >= 80 ? 'warn' : ''),
      stat('Clocks SM / mem', g.sm_clock_mhz == null && g.memory_clock_mhz == null ? 'n/a' :
        (g.sm_clock_mhz == null ? 'n/a' : fmtNum(g.sm_clock_mhz, 0)) + ' / ' +
        (g.memory_clock_mhz == null ? 'n/a' : fmtNum(g.memory_clock_mhz, 0)) + ' MHz'),
      stat('Processes', g.processes == null ? 'n/a' : String(g.processes.length)));
    const reasons = g.clock_event_reasons;
    const flags = [];
    if (reasons == null) flags.push(el('span', { class: 'badge muted' }, 'throttle: n/a'));
    else if (reasons.length === 0) flags.push(el('span', { class: 'badge ok' }, 'no throttling'));
    else for (const r of reasons) flags.push(el('span', { class: 'badge ' + (/thermal|hw_slowdown|power_brake/.test(r) ? 'bad' : 'warn') }, r.replaceAll('_', ' ')));
    if (g.ecc_uncorrected == null && g.ecc_corrected == null) flags.push(el('span', { class: 'badge muted' }, 'ECC n/a'));
    else flags.push(el('span', { class: 'badge ' + (g.ecc_uncorrected ? 'bad' : g.ecc_corrected ? 'warn' : 'ok') },
      'ECC ' + (g.ecc_corrected ?? 'n/a') + ' corrected · ' + (g.ecc_uncorrected ?? 'n/a') + ' uncorrected'));
    const age = g.timestamp == null ? null : nowSeconds() - g.timestamp;
    if (age != null && age > Math.max(5, 3 * state.intervalSeconds)) {
      flags.unshift(el('span', { class: 'badge bad' }, 'no sample for ' + fmtDuration(age)));
    }
    if (g.last_xid == null) flags.push(el('span', { class: 'badge muted' }, 'XID n/a'));
    else flags.push(el('span', { class: 'badge ' + (g.last_xid ? 'bad' : 'ok') }, g.last_xid ? 'XID ' + g.last_xid : 'no XID'));
    entry.flags.replaceChildren(...flags);
    const firing = state.alerts.some((a) => a.gpu === g.index && a.status === 'firing');
    const pending = state.alerts.some((a) => a.gpu === g.index && a.status === 'pending');
    entry.panel.classList.toggle('firing', firing);
    entry.panel.classList.toggle('pending', !firing && pending);
    for (const view of Object.values(entry.charts)) {
      view.yMax = view.spec.max(g);
    }
  }

  function renderGpus(body) {
    const gpus = (body && body.gpus) || [];
    const newest = Math.max(...gpus.map((g) => g.timestamp || 0));
    if (newest > 0) {
      const skew = newest - Date.now() / 1000;
      state.clockSkewSeconds = Math.abs(skew) > CLOCK_SKEW_TOLERANCE_SECONDS ? skew : 0;
    }
    for (const g of gpus) renderGpu(g);
    $('gpus-count').textContent = String(gpus.length);
  }

  // Fetches the window's series for every GPU, one request per metric. In the raw 15 min window,
  // after the first full fetch only the last few seconds are asked for and appended.
  async function refreshSeries() {
    const name = state.window;
    const w = WINDOWS[name];
    const append = w.step === 0 && state.seriesWindow === name && state.seriesUntil != null;
    const since = append ? Math.min(w.since, Math.ceil(nowSeconds() - state.seriesUntil) + SERIES_OVERLAP_SECONDS) : w.since;
    const stepParam = w.step ? '&step=' + w.step : '';
    const bodies = await Promise.all(CHARTS.map((spec) =>
      getJson('/v1/series?metric=' + spec.metric + '&since=' + since + stepParam).catch(() => undefined)));
    if (state.window !== name) return;  // switched while fetching: that switch refetches
    let until = append ? state.seriesUntil : null;
    CHARTS.forEach((spec, i) => {
      if (bodies[i] === undefined) return;  // failed: keep what the chart shows
      const byGpu = new Map(((bodies[i] && bodies[i].series) || []).map((s) => [s.gpu, s.points]));
      for (const [index, entry] of state.gpus) {
        const points = byGpu.get(index) || [];
        setChartData(entry.charts[spec.key], points, append);
        if (points.length) until = Math.max(until ?? -Infinity, points[points.length - 1][0]);
      }
    });
    state.seriesWindow = name;
    state.seriesUntil = until;
    state.seriesFetchedAt = Date.now();
  }

  // ---- the poll loop --------------------------------------------------------------------------
  function renderConnection() {
    const conn = $('conn');
    if (state.failingSince) {
      conn.textContent = 'agent unreachable since ' + fmtClock(state.failingSince / 1000) + ' — retrying';
      conn.className = 'conn bad';
    } else if (state.lastOk) {
      conn.textContent = 'live · updated ' + fmtClock(state.lastOk / 1000);
      conn.className = 'conn ok';
    }
  }

  async function poll() {
    try {
      const [health, gpus, alerts, host, jobs, idle] = await Promise.all([
        getJson('/v1/health'), getJson('/v1/gpus'), getJson('/v1/alerts'),
        getJson('/v1/host'), getJson('/v1/jobs'), getJson('/v1/idle')]);
      renderHealth(health);
      renderAlerts(alerts ? alerts.alerts : []);
      renderGpus(gpus);
      renderHost(host);
      renderJobs(jobs);
      state.idle = idle;
      state.idleFetchedAt = nowSeconds();
      renderIdle();
      if (Date.now() - state.seriesFetchedAt >= WINDOWS[state.window].refresh_ms) await refreshSeries();
      state.lastOk = Date.now();
      state.failingSince = 0;
    } catch (err) {
      if (!state.failingSince) state.failingSince = Date.now();
    }
    renderConnection();
    setTimeout(poll, POLL_MS);
  }

  function selectWindow(name) {
    state.window = name;
    for (const b of $('windows').querySelectorAll('button')) b.classList.toggle('active', b.dataset.window === name);
    history.replaceState(null, '', '#w=' + name);
    state.seriesFetchedAt = 0;
    state.seriesWindow = null;
    refreshSeries().catch(() => {});
  }

  $('windows').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-window]');
    if (b) selectWindow(b.dataset.window);
  });
  for (const b of $('windows').querySelectorAll('button')) b.classList.toggle('active', b.dataset.window === state.window);
  // The idle countdown ticks every second between polls.
  setInterval(renderIdle, 1000);
  poll();
})();
