'use strict';
(() => {
  const page = document.body.dataset.page;
  const app = document.getElementById('app');
  const params = new URLSearchParams(location.search);
  let session = null;

  // Identifiers (rule ids, file:line, attempt decisions, hashes) wrap only at their own word
  // boundaries: after . _ / , and a colon before a long word (a <wbr> there), never inside a word
  // (nor between a file and its line); a word longer than its box
  // is cut with an ellipsis (console.css), the full text on hover (title).
  function breakable(text) {
    const fragment = document.createDocumentFragment();
    String(text).split(/(?<=[_/,]|\.(?!(?:rules|list|cases)\b)|:(?=[^:]{12}))/).forEach((part, index) => {
      if (index > 0) fragment.append(document.createElement('wbr'));
      fragment.append(part);
    });
    return fragment;
  }
  function el(tag, attrs, ...children) {
    const svg = ['svg', 'rect', 'line', 'text', 'polyline', 'g', 'title'].includes(tag);
    const node = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
    const wraps = !svg && /(^| )(mono|value)( |$)/.test((attrs && attrs.cls) || '');
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'text' && wraps) {
        node.append(breakable(value));
        if (!attrs.title) node.title = String(value);
      } else if (key === 'text') node.textContent = String(value);
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key === 'cls' ? 'class' : key, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const badge = (text, kind) => el('span', { cls: 'badge ' + (kind || text), text });
  const fmt = (n) => Number(n).toLocaleString('en-US');
  // Times in the console's time zone (ISSUERD_CONSOLE_TIME_ZONE, from the session), always
  // with its offset: 2025-03-01 18:30:00 +09:00.
  const zone = () => (session && session.timeZone) || 'UTC';
  function when(iso) {
    if (!iso) return '–';
    const date = new Date(iso);
    const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', { timeZone: zone(), hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'longOffset' }).formatToParts(date).map((p) => [p.type, p.value]));
    const offset = parts.timeZoneName === 'GMT' ? '+00:00' : parts.timeZoneName.replace('GMT', '');
    return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${offset}`;
  }
  // An hour's label on the chart's axis, in the same time zone.
  function hourLabel(iso, withDay) {
    const text = when(iso);
    return withDay ? text.slice(5, 10) + ' ' + text.slice(11, 13) + 'h' : text.slice(11, 16);
  }
  // A step-up message's delivery: its state as a badge, the provider and its message id, and
  // why it is undeliverable.
  function delivery(d) {
    if (!d) return '–';
    const kind = d.state === 'delivered' ? 'green' : (d.state === 'undeliverable' ? 'orange' : 'yellow');
    const via = [d.provider, d.messageId].filter((x) => x).join(' ');
    return el('span', {}, badge(d.state, kind), via ? ' ' + via : '', d.detail ? el('div', { cls: 'muted', text: d.detail }) : null);
  }
  const pct = (n, total) => total ? (100 * n / total).toFixed(1) + ' %' : '–';
  const tile = (label, value, cls, small) => el('div', { cls: 'tile ' + (cls || '') }, el('div', { cls: 'label', text: label }), el('div', { cls: 'value' + (small ? ' small' : ''), text: value }));
  function table(headers, rows, id) {
    return el('table', { id }, el('thead', {}, el('tr', {}, headers.map((h) => el('th', { cls: h.endsWith('#') ? 'num' : '', text: h.replace(/#$/, '') })))),
      el('tbody', {}, rows));
  }
  const td = (content, cls) => el('td', { cls }, content);
  function show(...nodes) { app.replaceChildren(...nodes); }
  function fail(message, extra) { return el('div', { cls: 'error', role: 'alert' }, message, extra || null); }

  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (method !== 'GET' && session) headers['X-CSRF-Token'] = session.csrfToken;
    const response = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
    let json = null;
    try { json = await response.json(); } catch (_) { json = null; }
    if (response.status === 401 && page !== 'sign-in') {
      const expired = json && json.error && json.error.code === 'session_expired';
      location.assign('/console/sign-in?reason=' + (expired ? 'expired' : 'invalid') + '&next=' + encodeURIComponent(location.pathname + location.search));
      throw new Error('signed out');
    }
    return { status: response.status, ok: response.ok, json };
  }
  const errorText = (result) => (result.json && result.json.error) ? result.json.error.message + ' (' + result.json.error.code + ')' : 'HTTP ' + result.status;

  // Periods: explicit since/until (RFC 3339) or a range relative to now.
  const ranges = { '24h': 24, '48h': 48, '7d': 168, '30d': 720, '90d': 2160 };
  // A since alone runs until now; an until alone goes back the chosen range from it.
  function resolvePeriod(since, until, range) {
    const hours = ranges[range] || 24;
    const end = until ? new Date(until) : new Date();
    const start = since ? new Date(since) : new Date(end.getTime() - hours * 3600e3);
    if (isNaN(end.getTime()) || isNaN(start.getTime())) throw new Error('since and until are RFC 3339 times, e.g. 2025-03-01T00:00:00Z');
    return { since: since || start.toISOString(), until: until || end.toISOString() };
  }
  function period() {
    try { return resolvePeriod(params.get('since'), params.get('until'), params.get('range')); }
    catch (_) { return { since: params.get('since'), until: params.get('until') }; }  // as given: the server names the bad value
  }
  function periodFields() {
    // since → until when a since is given, or an until without a range (an until with a
    // range goes back that range from it). Choosing a range clears since and until;
    // typing a since selects since → until.
    const custom = !!(params.get('since') || (params.get('until') && !ranges[params.get('range')]));
    const since = el('input', { name: 'since', size: 22, value: params.get('since') || '', placeholder: '2025-03-01T00:00:00Z', oninput: () => typed() });
    const until = el('input', { name: 'until', size: 22, value: params.get('until') || '', placeholder: '2025-03-08T00:00:00Z', oninput: () => typed() });
    const range = el('select', { name: 'range', onchange: () => { if (range.value) { since.value = ''; until.value = ''; } } },
      el('option', { value: '', selected: custom, text: 'since → until' }),
      Object.keys(ranges).map((r) => el('option', { value: r, selected: !custom && (params.get('range') || '24h') === r, text: 'last ' + r })));
    function typed() { if (since.value.trim()) range.value = ''; }
    return [el('label', {}, 'Period', range), el('label', {}, 'or since (RFC 3339)', since), el('label', {}, 'until', until)];
  }
  // A GET filter form sends only the fields that hold something, so a shared link reads
  // ?range=7d, not ?range=7d&since=&until= (the fields themselves are left as they are).
  function sendingOnlyFilled(form) {
    form.addEventListener('formdata', (event) => {
      for (const [name, value] of [...event.formData]) if (!String(value).trim()) event.formData.delete(name);
    });
    return form;
  }
  function query(object) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(object)) if (v) q.set(k, v);
    return q.toString();
  }

  function chrome() {
    const links = [['rules', 'Ruleset'], ['decisions', 'Decisions'], ['rule-hits', 'Rule hits'], ['attempts', 'Attempts'], ['cases', 'Review queue'], ['backtest', 'Backtest'], ['changes', 'Changes'], ['audit', 'Audit']];
    document.getElementById('nav').replaceChildren(...links.map(([name, title]) =>
      el('a', { href: '/console/' + name, cls: (page === name || (page === 'attempt' && name === 'attempts') || (page === 'case' && name === 'cases') || (page === 'change' && name === 'changes')) ? 'active' : '', text: title })));
    const out = el('button', { id: 'sign-out', type: 'button', text: 'Sign out', onclick: async () => {
      const result = await api('DELETE', '/console/session');
      if (result.ok) location.assign('/console/sign-in?reason=signed-out');
    } });
    document.getElementById('who').replaceChildren(el('span', { id: 'user', text: session.name + ' · ' + session.role }), out);
    readsBadge().catch(() => {});
  }

  // Where the pages read: on a read replica (ISSUERD_READ_DATABASE_URL), how far behind the
  // primary it is; nothing is shown when they read on the primary.
  async function readsBadge() {
    const result = await api('GET', '/v1/admin/reads');
    if (!result.ok || !result.json || result.json.source !== 'replica') return;
    const r = result.json;
    const lag = r.lagSeconds;
    const behind = lag === null || lag === undefined ? '' : lag < 10 ? lag.toFixed(1) + ' s' : lag < 120 ? Math.round(lag) + ' s' : Math.round(lag / 60) + ' min';
    const text = !r.reachable ? 'replica unreachable' : r.standby === false ? 'reads on the primary (the read database is not a standby)'
      : 'replica ' + (r.replayPaused ? 'paused, ' : '') + behind + ' behind';
    const late = !r.reachable || r.replayPaused || lag >= 60;
    document.getElementById('who').prepend(el('span', { id: 'reads', cls: late ? 'reads late' : 'reads', text,
      title: 'Pages, backtests and exports read on the read replica; what happened since is not in them yet.' }));
  }

  // ---- Sign-in ----------------------------------------------------------------
  function signIn() {
    document.getElementById('nav').replaceChildren();
    const reasons = { expired: 'Your session has expired. Sign in again.', 'signed-out': 'You are signed out.', invalid: 'Your session is not valid. Sign in again.' };
    const message = el('div', { id: 'message' });
    if (reasons[params.get('reason')]) message.append(el('div', { cls: 'notice', text: reasons[params.get('reason')] }));
    const key = el('input', { id: 'key', type: 'password', autocomplete: 'off', placeholder: 'isk_…', required: true });
    const submit = el('button', { id: 'sign-in', type: 'submit', text: 'Sign in' });
    const form = el('form', { onsubmit: async (event) => {
      event.preventDefault();
      submit.disabled = true;
      const result = await api('POST', '/console/session', { key: key.value.trim() });
      submit.disabled = false;
      if (!result.ok) { message.replaceChildren(fail(errorText(result))); return; }
      const next = params.get('next') || '';
      location.assign(/^\/console\/[A-Za-z0-9\-\/]*(\?.*)?$/.test(next) && !next.startsWith('//') ? next : '/console/rules');
    } }, el('label', {}, 'Analyst or admin API key', key), submit);
    show(el('div', { cls: 'signin panel' }, el('h1', { text: 'Sign in' }),
      el('p', { cls: 'sub', text: 'Use an analyst or admin key (issuerd apikey create --role analyst). The key is exchanged for a session; it is not stored in the browser.' }),
      message, form));
  }

  // ---- Ruleset -----------------------------------------------------------------
  async function rules() {
    const result = await api('GET', '/v1/admin/rules');
    if (!result.ok) return show(fail(errorText(result)));
    const r = result.json;
    const failure = r.lastFailedReload, last = r.lastReload;
    const by = last ? ' by ' + last.by : '';
    const reload = failure
      ? el('div', { cls: 'panel', id: 'reload-failure' }, el('h2', {}, 'Last reload ', badge('failed', 'orange'), el('span', { cls: 'muted', text: ' at ' + when(failure.at) + by + ' — the version below keeps serving' })),
          table(['Where', 'Error'], failure.diagnostics.map((d) => el('tr', {}, td(el('span', { cls: 'mono', text: d.file + ':' + d.line + ':' + d.column })), td([d.message, d.suggestion ? el('div', { cls: 'muted', text: d.suggestion }) : null])))),
          el('pre', { cls: 'diag', text: failure.message }))
      : last
        ? el('div', { cls: 'panel', id: 'reload-ok' }, el('h2', {}, 'Last reload ', badge(last.result, 'green'), el('span', { cls: 'muted', text: ' at ' + when(last.at) + by })),
            el('div', { cls: 'muted', text: last.result === 'replaced' ? 'It compiled; the version below replaced the one before.' : 'It compiled to the version already serving.' }))
        : el('div', { cls: 'panel', id: 'reload-ok' }, el('h2', {}, 'Last reload ', badge('none', 'green')),
            el('div', { cls: 'muted', text: 'No reload on this instance since it started; the version below was loaded at start-up.' }));
    const rows = r.rules.map((rule) => el('tr', { 'data-rule': rule.id },
      td([el('div', { cls: 'mono', text: rule.id }), el('div', { cls: 'muted', text: rule.title })]),
      td(badge(rule.mode)), td(badge(rule.outcome)), td(rule.outcome !== 'yellow' ? '—' : rule.stepUp ? rule.stepUp.join(', ') : 'any'),
      td(rule.owner), td(el('span', { cls: 'mono', text: rule.location })), td(fmt(rule.hits), 'num'), td(fmt(rule.hitsLast24h), 'num')));
    show(el('h1', { text: 'Ruleset' }), el('div', { cls: 'sub', text: 'The version serving decisions on this instance. Rules change only through the rule files in git.' }),
      el('div', { cls: 'tiles' },
        el('div', { cls: 'tile wide' }, el('div', { cls: 'label', text: 'Version (content hash)' }), el('div', { cls: 'value small mono', id: 'version', title: r.version, text: r.version })),
        tile('Loaded', when(r.loadedAt), '', true), tile('Loaded by', r.loadedBy, '', true),
        tile('Rules', fmt(r.rules.length) + ' (' + r.rules.filter((x) => x.mode === 'shadow').length + ' shadow)'), tile('Files', fmt(r.files.length))),
      reload,
      el('div', { cls: 'panel' }, el('h2', { text: 'Rules' }),
        table(['Rule', 'Mode', 'Outcome', 'Step-up', 'Owner', 'Where', 'Hits since load#', 'Hits 24\u00a0h#'], rows, 'rules-table')));
  }

  // ---- Decisions ---------------------------------------------------------------
  // The flow mix per hour as stacked bars, drawn at the panel's own width (text stays its size on
  // a narrow screen). Bars stay readable whatever the period: hours are summed into buckets of
  // several hours when there are more than one per 12 px, and a period whose first quarter or
  // more holds no attempt starts at the hour before its first attempt (at least 12 hours shown),
  // so new data is not one sliver at the right edge; the note says so.
  function chart(hours, listOf) {
    const width = Math.max(320, Math.round(app.getBoundingClientRect().width - 90)), height = 280, left = 48, bottom = 28, top = 10;
    const total = (h) => h.green + h.yellow + h.orange;
    const firstWithData = hours.findIndex((h) => total(h) > 0);
    const start = firstWithData >= hours.length / 4 ? Math.max(0, Math.min(firstWithData - 1, hours.length - 12)) : 0;
    const shown = hours.slice(start);
    const per = Math.max(1, Math.ceil(shown.length / Math.floor((width - left) / 12)));
    const buckets = [];
    for (let i = 0; i < shown.length; i += per) {
      const group = shown.slice(i, i + per);
      buckets.push({ hour: group[0].hour, hours: group.length, green: group.reduce((n, h) => n + h.green, 0),
        yellow: group.reduce((n, h) => n + h.yellow, 0), orange: group.reduce((n, h) => n + h.orange, 0) });
    }
    const max = Math.max(1, ...buckets.map(total));
    const step = (width - left) / Math.max(1, buckets.length);
    const scale = (height - bottom - top) / max;
    const svg = el('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': 'decisions per hour', id: 'chart' });
    for (let i = 0; i <= 4; i++) {
      const y = height - bottom - (i / 4) * (height - bottom - top);
      svg.append(el('line', { cls: 'grid', x1: left, x2: width, y1: y, y2: y }), el('text', { cls: 'axis', x: left - 6, y: y + 4, 'text-anchor': 'end', text: fmt(Math.round(max * i / 4)) }));
    }
    const span = buckets.length * per;
    const labelEvery = Math.max(1, Math.ceil(buckets.length / Math.max(2, Math.floor((width - left) / 90))));
    buckets.forEach((h, i) => {
      let y = height - bottom;
      const x = left + i * step + step * 0.1;
      const range = h.hours > 1 ? `${when(h.hour)} + ${h.hours} h` : when(h.hour);
      const g = el('g', { cls: 'hour', 'data-hour': h.hour, 'data-hours': h.hours, 'data-green': h.green, 'data-yellow': h.yellow, 'data-orange': h.orange },
        el('title', { text: `${range}: ${h.green} green, ${h.yellow} yellow, ${h.orange} orange` }));
      for (const flow of ['green', 'yellow', 'orange']) {
        const bar = h[flow] * scale;
        if (bar > 0) {
          y -= bar;
          // A bar opens the attempts it counts (its hours, its flow).
          const href = listOf(flow, h.hour, new Date(new Date(h.hour).getTime() + h.hours * 3600e3).toISOString().replace('.000Z', 'Z'));
          g.append(el('rect', { cls: 'bar ' + flow, x, y, width: Math.max(1, step * 0.8), height: bar, 'data-href': href, onclick: () => location.assign(href) }));
        }
      }
      svg.append(g);
      if (i % labelEvery === 0) {
        const label = hourLabel(h.hour, span > 48);
        svg.append(el('text', { cls: 'axis', x: x + step * 0.4, y: height - 8, 'text-anchor': 'middle', text: label }));
      }
    });
    const notes = [];
    if (start > 0) notes.push(`No attempt from ${when(hours[0].hour)} to ${when(hours[firstWithData].hour)}: the chart starts an hour before the first (the totals above cover the whole period).`);
    if (per > 1) notes.push(`Each bar sums ${per} hours.`);
    return el('div', { cls: 'chart' }, notes.length ? el('p', { cls: 'note', id: 'chart-note', text: notes.join(' ') }) : null, svg,
      el('div', { cls: 'legend' }, ['green', 'yellow', 'orange'].map((f) => el('span', {}, el('i', { cls: f }), f))));
  }
  async function decisions() {
    const p = period();
    const result = await api('GET', '/v1/admin/decisions?' + query({ since: p.since, until: p.until, channel: params.get('channel'), network: params.get('network') }));
    const channelNames = { in_app: 'in-app', wallet_extension: 'Wallet extension', tsp: 'TSP', mdes: 'MDES', google_pay: 'Google Pay', samsung_pay: 'Samsung Pay' };
    const channel = el('select', { name: 'channel' }, el('option', { value: '', text: 'all channels' }),
      ['in_app', 'wallet_extension', 'tsp', 'mdes', 'google_pay', 'samsung_pay'].map((c) => el('option', { value: c, selected: params.get('channel') === c, text: channelNames[c] })));
    const network = el('select', { name: 'network' }, el('option', { value: '', text: 'all networks' }),
      ['visa', 'mastercard', 'amex', 'discover', 'jcb', 'unionpay', 'other', 'unknown'].map((n) => el('option', { value: n, selected: params.get('network') === n, text: n })));
    const form = sendingOnlyFilled(el('form', { cls: 'filters panel', method: 'get', action: '/console/decisions' }, periodFields(), el('label', {}, 'Channel', channel), el('label', {}, 'Network', network), el('button', { type: 'submit', text: 'Apply' })));
    if (!result.ok) return show(el('h1', { text: 'Decisions' }), form, fail(errorText(result)));
    const d = result.json;
    const total = d.totals.green + d.totals.yellow + d.totals.orange;
    // The attempts behind a number: the Attempts page with its flow, channel and period.
    const listOf = (flow, since, until) => '/console/attempts?' + query({ flow, channel: d.channel, since, until });
    const flowTile = (flow, label) => el('a', { cls: 'tile ' + flow, 'data-flow': flow, 'data-count': d.totals[flow], href: listOf(flow, d.since, d.until) },
      el('div', { cls: 'label', text: label }), el('div', { cls: 'value', text: fmt(d.totals[flow]) }), el('div', { cls: 'muted', text: pct(d.totals[flow], total) }));
    show(el('h1', { text: 'Decisions' }), el('div', { cls: 'sub', text: `${when(d.since)} → ${when(d.until)}` }), form,
      el('div', { cls: 'tiles', id: 'totals' }, tile('Attempts', fmt(total)),
        flowTile('green', 'Green · activate'), flowTile('yellow', 'Yellow · step-up'), flowTile('orange', 'Orange · decline')),
      el('div', { cls: 'panel' }, el('h2', { id: 'chart-heading', text: `Mix per hour (${zone()}, ${when(d.since).slice(20)})` }), chart(d.hours, listOf)),
      d.network ? el('p', { cls: 'muted', text: 'The attempts list has no network filter: its links list every network of the channel and period.' }) : null);
  }

  // ---- Rule hits ---------------------------------------------------------------
  function spark(series, shadow) {
    const width = 140, height = 28, max = Math.max(1, ...series);
    const points = series.map((v, i) => `${(i / Math.max(1, series.length - 1)) * width},${height - 2 - (v / max) * (height - 4)}`).join(' ');
    return el('svg', { viewBox: `0 0 ${width} ${height}`, width, height }, el('polyline', { cls: 'spark' + (shadow ? ' shadow' : ''), points }));
  }
  async function ruleHits() {
    const p = period();
    const [result, measured] = await Promise.all([api('GET', '/v1/admin/rule-hits?' + query({ since: p.since, until: p.until })),
      api('GET', '/v1/admin/rules/performance?' + query({ since: p.since, until: p.until }))]);
    const form = sendingOnlyFilled(el('form', { cls: 'filters panel', method: 'get', action: '/console/rule-hits' }, periodFields(), el('button', { type: 'submit', text: 'Apply' })));
    if (!result.ok) return show(el('h1', { text: 'Rule hits' }), form, fail(errorText(result)));
    const d = result.json;
    const live = d.rules.filter((r) => r.mode !== 'shadow').sort((a, b) => b.hits - a.hits);
    const shadow = d.rules.filter((r) => r.mode === 'shadow');
    // Each rule's attempts over the same period: the Attempts page filtered by the rule.
    const hitsOf = (r) => el('a', { cls: 'mono rule-attempts', href: '/console/attempts?' + query({ rule: r.id, since: d.since, until: d.until }), text: r.id });
    const liveRows = live.map((r) => el('tr', { 'data-rule': r.id, 'data-hits': r.hits, 'data-changed': r.changedFlow },
      td([hitsOf(r), el('div', { cls: 'muted', text: r.title })]), td(badge(r.mode)), td(badge(r.outcome)),
      td(el('a', { href: '/console/attempts?' + query({ rule: r.id, since: d.since, until: d.until }), text: fmt(r.hits) }), 'num'), td(fmt(r.changedFlow), 'num'), td(spark(r.series, false))));
    const shadowRows = shadow.map((r) => el('tr', { 'data-rule': r.id, 'data-hits': r.hits, 'data-would': r.wouldChange },
      td([hitsOf(r), el('div', { cls: 'muted', text: r.title })]), td(badge(r.outcome)), td(el('a', { href: '/console/attempts?' + query({ rule: r.id, since: d.since, until: d.until }), text: fmt(r.hits) }), 'num'),
      td(Object.entries(r.flowsHit).map(([flow, n]) => el('div', {}, badge(flow), el('span', { cls: 'arrow', text: '→' }), badge(r.outcome), ' ', fmt(n)))),
      td(fmt(r.wouldChange), 'num'), td(spark(r.series, true))));
    show(el('h1', { text: 'Rule hits' }), el('div', { cls: 'sub', text: `${when(d.since)} → ${when(d.until)} · sparkline buckets of ${d.bucketSeconds / 3600} h` }), form,
      el('div', { cls: 'panel' }, el('h2', { text: 'Live rules and built-in checks' }),
        table(['Rule', 'Mode', 'Outcome', 'Hits#', 'Changed final flow#', 'Over the period'], liveRows, 'live-hits'),
        el('p', { cls: 'muted', text: '"Changed final flow": the rule was the only live hit with the decided outcome, so without it the decision would have been milder.' })),
      el('div', { cls: 'panel' }, el('h2', { text: 'Shadow rules: what they would have done' }),
        shadow.length ? table(['Rule', 'Would decide', 'Hits#', 'Actual flow → shadow outcome', 'Would change flow#', 'Over the period'], shadowRows, 'shadow-hits')
          : el('div', { cls: 'muted', text: 'No shadow rules in the serving ruleset.' })),
      measured.ok ? performancePanel(measured.json) : el('div', { cls: 'panel' }, fail(errorText(measured))));
  }
  const ratio = (value) => value === null || value === undefined ? '–' : (100 * value).toFixed(1) + ' %';
  const won = (amount) => '₩' + fmt(amount);
  // Each rule against the attempts' outcomes (GET /v1/admin/rules/performance).
  function performancePanel(d) {
    const t = d.totals;
    const rows = d.rules.filter((r) => r.hits > 0).sort((a, b) => b.fraud - a.fraud || b.hits - a.hits).map((r) =>
      el('tr', { 'data-rule': r.ruleId, 'data-mode': r.mode, 'data-fraud': r.fraud, 'data-legitimate': r.legitimate },
        td(el('span', { cls: 'mono', text: r.ruleId })), td(badge(r.mode)), td(fmt(r.decided), 'num'), td(fmt(r.fraud), 'num'),
        td(fmt(r.legitimate), 'num'), td(fmt(r.unlabelled), 'num'), td(ratio(r.precision), 'num'), td(ratio(r.recall), 'num'),
        td(fmt(r.missedFraud), 'num'), td(won(r.fraudAmount), 'num'),
        td(r.stepUpsStarted ? `${fmt(r.stepUpsCompleted)} of ${fmt(r.stepUpsStarted)} completed` : '–')));
    return el('div', { cls: 'panel', id: 'performance' }, el('h2', { text: 'Against outcomes: which decisions were right' }),
      el('div', { cls: 'tiles' }, tile('Attempts', fmt(t.attempts)), tile('Confirmed fraud', fmt(t.fraud), 'orange'),
        tile('Legitimate', fmt(t.legitimate), 'green'), tile('Fraud passed green', `${fmt(t.fraudPassedGreen)} (${won(t.fraudPassedGreenAmount)})`, 'orange', true),
        tile('Label maturity', ratio(t.labelMaturity) + ` older than ${t.labelMaturityDays}d`, '', true)),
      rows.length ? table(['Rule', 'Mode', 'Decided#', 'Fraud#', 'Legitimate#', 'Unlabelled#', 'Precision#', 'Recall#', 'Missed fraud#', 'Lost to its fraud#', 'Step-ups'], rows, 'performance-table')
        : el('div', { cls: 'muted', text: 'No rule hit in the period.' }),
      el('p', { cls: 'muted', text: 'Decided: the hit was at least as severe as the decision (for a shadow rule: would have been). Precision: fraud among its labelled decisions; recall: its share of all confirmed fraud in the period. A young period has few outcomes yet: read the label maturity first.' }));
  }

  // ---- Attempts ----------------------------------------------------------------
  // Whether a search holds a card number: a run of 12 or more decimal digits (of any script)
  // that separators may interrupt but letters do not continue; an attempt id (a UUID) is never
  // one. The server's rule (AnalystRoutes.containsCardNumber).
  function containsCardNumber(text) {
    if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(text)) return false;
    let run = 0;
    for (const ch of text) {
      if (/\p{Nd}/u.test(ch)) run += 1;
      else if (/[\p{L}\p{N}]/u.test(ch)) run = 0;
      if (run >= 12) return true;
    }
    return false;
  }

  async function attempts() {
    const panRefusal = 'Search by the last four digits: a full card number is never searched or sent.';
    const refused = el('span', { cls: 'muted', id: 'pan-refused' });
    let q = params.get('q') || '';
    // A card number that arrived in the link is neither shown nor searched, and leaves the
    // address bar: nothing of it reaches the page.
    if (containsCardNumber(q)) {
      q = '';
      params.delete('q');
      history.replaceState(null, '', location.pathname + (params.toString() ? '?' + params.toString() : ''));
      refused.textContent = panRefusal;
    }
    const input = el('input', { name: 'q', id: 'q', size: 40, value: q, placeholder: 'attempt id, card id, last four, customer or device id' });
    const channelNames = { in_app: 'in-app', wallet_extension: 'Wallet extension', tsp: 'TSP', mdes: 'MDES', google_pay: 'Google Pay', samsung_pay: 'Samsung Pay' };
    const flow = el('select', { name: 'flow', id: 'filter-flow' }, el('option', { value: '', text: 'any flow' }),
      ['green', 'yellow', 'orange'].map((f) => el('option', { value: f, selected: params.get('flow') === f, text: f })));
    const channel = el('select', { name: 'channel', id: 'filter-channel' }, el('option', { value: '', text: 'all channels' }),
      Object.keys(channelNames).map((c) => el('option', { value: c, selected: params.get('channel') === c, text: channelNames[c] })));
    const field = (name, label, size, placeholder) => el('label', {}, label, el('input', { name, id: 'filter-' + name, size, value: params.get(name) || '', placeholder }));
    const form = sendingOnlyFilled(el('form', { cls: 'filters panel', method: 'get', action: '/console/attempts' }, el('label', {}, 'Search', input),
      el('label', {}, 'Flow', flow), el('label', {}, 'Channel', channel), field('rule', 'Rule hit', 18, 'rule id'), field('decidedBy', 'Decided by', 18, 'rule id'),
      field('since', 'Since (RFC 3339)', 20, '2025-03-01T00:00:00Z'), field('until', 'until', 20, '2025-03-08T00:00:00Z'),
      field('customerId', 'Customer', 12, 'customer id'), field('deviceId', 'Device', 12, 'device id'),
      el('button', { type: 'submit', text: 'Search' }), refused));
    // A full card number typed here must not travel in a URL (history, proxy logs).
    form.addEventListener('submit', (event) => {
      if (containsCardNumber(input.value)) {  // any digits, any separator: spaces, dashes, dots…
        event.preventDefault();
        input.value = '';
        refused.textContent = panRefusal;
      }
    });
    // The list's own parameters, taken from this page's address as they are: a wrong one is the server's to name.
    const names = ['flow', 'rule', 'decidedBy', 'channel', 'since', 'until', 'customerId', 'deviceId', 'cursor', 'limit'];
    const filters = Object.fromEntries(names.filter((n) => params.get(n)).map((n) => [n, params.get(n)]));
    const result = await api('GET', '/v1/admin/attempts?' + query({ q, ...filters }));
    if (!result.ok) return show(el('h1', { text: 'Attempts' }), form, fail(errorText(result)));
    const d = result.json;
    const rows = d.attempts.map((a) => el('tr', { 'data-attempt': a.attemptId },
      td(el('a', { href: '/console/attempts/' + a.attemptId, cls: 'mono', text: a.attemptId.slice(0, 8) + '…' })), td(when(a.createdAt)),
      td(a.channel), td(a.lastFour ? '••••\u00a0' + a.lastFour : '–'), td(el('span', { cls: 'mono', text: a.cardId || '–' })), td(a.customerId || '–'),
      td(a.network), td(badge(a.flow)), td(el('span', { cls: 'mono', text: a.rules.join(', ') || '–' })), td(el('span', { cls: 'mono', text: a.decidedBy.join(', ') || '–' }))));
    const label = { recent: 'Attempts', attempt: 'Attempt id', last_four: 'Cards ending in ' + q, id: 'Card, customer or device id ' + q };
    const applied = Object.entries(d.filters).filter(([k]) => k !== 'q').map(([k, v]) => `${k} ${k === 'since' || k === 'until' ? when(v) : v}`);
    const listed = { q, ...filters };
    delete listed.cursor;
    const next = d.nextCursor ? el('a', { id: 'next-page', href: '/console/attempts?' + query({ ...listed, cursor: d.nextCursor }), text: 'Older attempts →' }) : null;
    const exportQuery = { ...listed, format: 'csv' };
    delete exportQuery.limit;
    const csv = el('a', { id: 'export-csv', href: '/v1/admin/attempts?' + query(exportQuery), download: 'attempts.csv', text: 'Export all as CSV' });
    show(el('h1', { text: 'Attempts' }), el('div', { cls: 'sub', text: 'Search an attempt, a card (id or last four), a customer or a device, or filter by flow, rule, channel and time. Card numbers are never shown, only their last four digits.' }), form,
      el('div', { cls: 'panel' }, el('h2', { id: 'attempts-heading', text: `${label[d.matchedAs]}${applied.length ? ' · ' + applied.join(' · ') : ''} · ${d.attempts.length} shown${params.get('cursor') ? ' (a later page)' : ''}` }),
        d.attempts.length ? table(['Attempt', 'Time', 'Channel', 'Card', 'Card id', 'Customer', 'Network', 'Flow', 'Live rules hit', 'Decided by'], rows, 'attempts-table')
          : el('div', { cls: 'muted', id: 'no-attempts', text: 'No attempt matches.' }),
        el('p', { cls: 'pager' }, next, next ? ' · ' : null, csv)));
  }

  async function attempt() {
    const id = decodeURIComponent(location.pathname.split('/').pop());
    const result = await api('GET', '/v1/admin/attempts/' + encodeURIComponent(id));
    if (!result.ok) return show(el('h1', { text: 'Attempt' }), fail(result.status === 404 ? 'No such attempt.' : errorText(result)));
    const a = result.json;
    const hits = (a.hits || []).map((h) => el('tr', { 'data-rule': h.rule },
      td(el('span', { cls: 'mono', text: h.rule })), td(badge(h.mode || 'live')), td(badge(h.outcome)), td(h.reason || ''),
      td((h.values || []).map((v) => el('div', { cls: 'mono', text: v.name + ' = ' + (v.text !== undefined ? v.text : JSON.stringify(v.value)) }))),
      td(h.stepUp ? h.stepUp.join(', ') : '–')));
    const challenges = (a.stepUp || []).map((c) => el('tr', {}, td(c.method), td(c.destination), td(badge(c.status, c.status === 'verified' ? 'green' : (c.status === 'pending' ? 'yellow' : 'orange'))),
      td(fmt(c.failedAttempts), 'num'), td(when(c.createdAt)), td(when(c.verifiedAt)), td(delivery(c.delivery))));
    const offered = a.allowedMethods && a.allowedMethods.length ? a.allowedMethods.join(', ') : (a.flow === 'yellow' ? 'any' : 'none (no step-up)');
    let stepUpSummary = 'No step-up was needed.';
    if (a.flow === 'yellow') {
      if (challenges.length) stepUpSummary = (a.stepUp.some((c) => c.status === 'verified') ? 'The cardholder completed a step-up.' : 'A step-up was started and not completed.');
      else stepUpSummary = 'No one-time code was requested' + (a.token ? ' (token ' + a.token.status + ').' : '.');
    }
    // A TSP attempt's inputs also hold what was checked beside the rules (docs/rules.md, "What a replay decides").
    const inputs = Object.entries(a.inputs && a.inputs.attributes ? a.inputs.attributes : (a.inputs || {})).filter(([k]) => k !== 'checks').sort(([x], [y]) => x.localeCompare(y));
    const checks = a.inputs && a.inputs.checks;
    const checkText = checks ? [checks.cardFound === false ? 'no card with this number' : 'card found',
      checks.expiryMatches === false ? 'expiry does not match' : 'expiry matches',
      checks.pendingPush ? 'a yellow push pending (' + (checks.pendingPush.methods || []).join(', ') + ')' : 'no pending push',
      checks.reachableMethods ? 'customer reachable by ' + (checks.reachableMethods.join(', ') || 'no method') : null].filter(Boolean).join(' · ') : null;
    show(el('h1', {}, 'Attempt ', el('span', { cls: 'mono', id: 'attempt-id', text: a.attemptId })),
      el('div', { cls: 'sub', text: when(a.createdAt) + ' · ' + a.channel }),
      el('div', { cls: 'tiles' }, el('div', { cls: 'tile ' + a.flow }, el('div', { cls: 'label', text: 'Flow' }), el('div', { cls: 'value', id: 'flow', text: a.flow })),
        tile('Decision', a.decision, '', true), tile('Card', a.lastFour ? '••••\u00a0' + a.lastFour : '–', '', true),
        tile('Customer', a.customerId || '–', '', true), tile('Device', a.deviceId || '–', '', true)),
      el('div', { cls: 'panel' }, el('h2', { text: 'Why: the rules that hit, with the values they read' }),
        hits.length ? table(['Rule', 'Mode', 'Outcome', 'Reason', 'Values read', 'Step-up allowed'], hits, 'hits-table') : el('div', { cls: 'muted', text: 'No rule hit: green by default.' }),
        a.unknowns && a.unknowns.length ? el('p', { cls: 'muted', text: 'Unknown values: ' + a.unknowns.join(', ') }) : null,
        checkText ? el('p', { id: 'checks' }, 'Checked beside the rules: ', el('span', { cls: 'muted', text: checkText })) : null,
        el('p', {}, 'Decided by ruleset ', el('span', { cls: 'mono', id: 'ruleset-version', text: a.rulesetVersion })),
        a.replay ? el('div', { cls: a.replay.differs ? 'error' : 'notice', id: 'replay' },
          a.replay.differs ? 'The serving rules would decide differently today: ' : 'The serving rules decide the same today: ', badge(a.replay.flow), ' ',
          el('span', { cls: 'muted', text: '(re-run with ' + a.replay.rulesetVersion.slice(0, 19) + '…, velocity as stored; rules hit: ' + (a.replay.hits.map((h) => h.rule).join(', ') || 'none') + ')' })) : null),
      el('div', { cls: 'panel', id: 'step-up' }, el('h2', { text: 'Step-up' }),
        el('div', { cls: 'kv' }, el('div', { text: 'Methods offered' }), el('div', { id: 'methods', text: offered }),
          el('div', { text: 'Token' }), el('div', { text: a.token ? a.token.tokenReference + ' (' + a.token.status + ')' : '–' }),
          el('div', { text: 'Outcome' }), el('div', { text: stepUpSummary })),
        challenges.length ? table(['Method', 'Sent to', 'Status', 'Failed tries#', 'Created', 'Verified', 'Delivery'], challenges) : null),
      el('div', { cls: 'panel' }, el('details', {}, el('summary', { text: `Request attributes (${inputs.length})` }),
        el('div', { cls: 'kv' }, inputs.map(([k, v]) => [el('div', { cls: 'mono', text: k }), el('div', { cls: 'mono', text: JSON.stringify(v) })])))));
  }

  // ---- Review queue ------------------------------------------------------------
  async function cases() {
    const queue = params.get('queue') || 'all';
    const status = params.get('status') || 'open';
    const result = await api('GET', '/v1/admin/cases?' + query({ queue, status }));
    if (!result.ok) return show(el('h1', { text: 'Review queue' }), fail(errorText(result)));
    const d = result.json;
    const link = (q, label, n) => el('a', { href: '/console/cases?' + query({ queue: q, status }), cls: 'queue' + (q === queue ? ' active' : ''), 'data-queue': q, text: label + (n === undefined ? '' : ' (' + fmt(n) + ')') });
    const queues = el('div', { cls: 'filters panel', id: 'queues' }, link('all', 'All'),
      d.queues.map((q) => link(q.queue, q.queue === 'mine' ? 'Mine' : q.queue.slice(6), q.open)),
      el('a', { href: '/console/cases?' + query({ queue, status: status === 'open' ? 'closed' : 'open' }), id: 'toggle-status', text: status === 'open' ? 'Show closed' : 'Show open' }));
    const rows = d.cases.map((c) => el('tr', { 'data-case': c.caseId, 'data-attempt': c.attemptId },
      td(el('a', { href: '/console/cases/' + c.caseId, cls: 'mono', text: '#' + c.caseId })), td(c.age, 'num'), td(badge(c.flow)),
      td(c.reason === 'orange' ? 'declined' : 'step-up not completed'), td(el('span', { cls: 'mono', text: c.owners.join(', ') })),
      td(c.lastFour ? '••••\u00a0' + c.lastFour : '–'), td(c.customerId || '–'), td(c.assignee ? (c.assignee === 'apikey:' + session.keyId ? 'me' : c.assignee) : '–'),
      td(c.outcome ? badge(c.outcome, c.outcome === 'fraud' ? 'orange' : 'green') : '–')));
    show(el('h1', { text: 'Review queue' }),
      el('div', { cls: 'sub', text: 'Declined decisions, and yellow ones whose step-up was not completed in time, queued to the owners of the rules that decided them.' }),
      queues, el('div', { cls: 'panel' }, el('h2', { text: `${status === 'open' ? 'Open' : 'Closed'} cases · ${d.cases.length} shown, oldest first` }),
        d.cases.length ? table(['Case', 'Age#', 'Flow', 'Why', 'Owners', 'Card', 'Customer', 'Held by', 'Outcome'], rows, 'cases-table')
          : el('div', { cls: 'muted', id: 'no-cases', text: 'No case in this queue.' })));
  }

  async function reviewCase() {
    const id = decodeURIComponent(location.pathname.split('/').pop());
    const result = await api('GET', '/v1/admin/cases/' + encodeURIComponent(id));
    if (!result.ok) return show(el('h1', { text: 'Case' }), fail(result.status === 404 ? 'No such case.' : errorText(result)));
    const { case: c, attempt: a } = result.json;
    const message = el('div', { id: 'case-message', role: 'status' });
    const act = async (path, body, done) => {
      const answer = await api('POST', '/v1/admin/cases/' + encodeURIComponent(id) + path, body);
      if (!answer.ok) return message.replaceChildren(fail(errorText(answer)));
      message.replaceChildren(el('div', { cls: 'notice', text: done(answer.json) }));
      setTimeout(() => location.reload(), 600);
    };
    const hits = (a.hits || []).map((h) => el('tr', { 'data-rule': h.rule },
      td(el('span', { cls: 'mono', text: h.rule })), td(badge(h.mode || 'live')), td(badge(h.outcome)),
      td((h.values || []).map((v) => el('div', { cls: 'mono', text: v.name + ' = ' + (v.text !== undefined ? v.text : JSON.stringify(v.value)) })))));
    const others = (list, tableID) => list.length ? table(['Attempt', 'Time', 'Channel', 'Flow', 'Outcome'], list.map((o) => el('tr', {},
      td(el('a', { href: '/console/attempts/' + o.attemptId, cls: 'mono', text: o.attemptId.slice(0, 8) + '…' })), td(when(o.createdAt)), td(o.channel), td(badge(o.flow)),
      td(o.outcome ? badge(o.outcome, o.outcome === 'fraud' ? 'orange' : 'green') : '–'))), tableID) : el('div', { cls: 'muted', text: 'None.' });
    const tokens = result.json.tokens.length ? table(['Token', 'Status', 'Wallet'], result.json.tokens.map((t) => el('tr', { 'data-token': t.tokenReference },
      td(el('span', { cls: 'mono', text: t.tokenReference })), td(t.status), td(t.tokenRequestorId || t.wallet || '–'))), 'tokens-table') : el('div', { cls: 'muted', text: 'No token.' });
    const reissues = (result.json.reissues || []).length ? el('div', { id: 'reissues' }, ...result.json.reissues.map((r) => el('div', { cls: 'reissue', 'data-reissue': r.reissueId },
      el('div', { cls: 'sub' }, `${r.reason} · ${r.oldCardId} → ${r.newCardId} · `, badge(r.status, r.status === 'failed' ? 'orange' : r.status === 'completed' ? 'green' : 'yellow')),
      (r.tokens || []).length ? table(['Token', 'Network', 'Action', 'State', 'Error'], r.tokens.map((t) => el('tr', { 'data-token': t.tokenReference },
        td(el('span', { cls: 'mono', text: t.tokenReference })), td(t.network), td(t.action), td(badge(t.state, t.state === 'failed' ? 'orange' : t.state === 'confirmed' ? 'green' : 'yellow')), td(t.error || '–'))), 'reissue-tokens')
        : el('div', { cls: 'muted', text: 'No token moves yet (waiting for the new card\u2019s activation, or the card had none).' })))) : el('div', { cls: 'muted', text: 'Not reissued.' });
    const note = el('input', { id: 'note', name: 'note', size: 50, placeholder: 'what you found (no card numbers)' });
    const open = c.status === 'open';
    const mine = c.assignee === 'apikey:' + session.keyId;
    const actions = open ? el('div', { cls: 'filters' },
      mine ? el('span', { cls: 'muted', text: 'You hold this case.' }) : el('button', { id: 'take', type: 'button', text: c.assignee ? 'Held by ' + c.assignee : 'Take it', disabled: !!c.assignee,
        onclick: () => act('/assign', {}, () => 'The case is yours.') }),
      el('label', {}, 'Note', note),
      el('button', { id: 'close-fraud', type: 'button', text: 'Close: fraud', onclick: () => act('/close', { outcome: 'fraud', note: note.value }, () => 'Closed as fraud.') }),
      el('button', { id: 'close-legitimate', type: 'button', text: 'Close: legitimate', onclick: () => act('/close', { outcome: 'legitimate', note: note.value }, () => 'Closed as legitimate.') }),
      el('button', { id: 'suspend-tokens', type: 'button', text: "Suspend the card's tokens", onclick: () => {
        if (confirm("Mark the card stolen and suspend its tokens at the token service?")) act('/suspend-tokens', {}, (r) => `${r.tokensAffected} token(s) suspended.`);
      } })) : el('div', { cls: 'kv' }, el('div', { text: 'Closed' }), el('div', { text: when(c.closedAt) + ' by ' + c.closedBy }),
        el('div', { text: 'Outcome' }), el('div', { id: 'case-outcome', text: c.outcome }), el('div', { text: 'Note' }), el('div', { text: c.note || '–' }));
    show(el('h1', {}, 'Case ', el('span', { cls: 'mono', id: 'case-id', text: '#' + c.caseId })),
      el('div', { cls: 'sub', text: `${c.reason === 'orange' ? 'Declined' : 'Step-up not completed'} · opened ${when(c.openedAt)} · ${c.age} old · owners ${c.owners.join(', ')}` }),
      el('div', { cls: 'tiles' }, el('div', { cls: 'tile ' + a.flow }, el('div', { cls: 'label', text: 'Flow' }), el('div', { cls: 'value', text: a.flow })),
        tile('Status', c.status, '', true), tile('Held by', c.assignee || '–', '', true), tile('Card', a.lastFour ? '••••\u00a0' + a.lastFour : '–', '', true),
        tile('Customer', a.customerId || '–', '', true)),
      el('div', { cls: 'panel', id: 'case-actions' }, el('h2', { text: 'Decide' }), actions, message),
      el('div', { cls: 'panel' }, el('h2', {}, 'The attempt: ', el('a', { href: '/console/attempts/' + a.attemptId, cls: 'mono', text: a.attemptId })),
        hits.length ? table(['Rule', 'Mode', 'Outcome', 'Values read'], hits, 'case-hits') : el('div', { cls: 'muted', text: 'No rule hit.' })),
      el('div', { cls: 'panel' }, el('h2', { text: "The card's tokens" }), tokens),
      el('div', { cls: 'panel' }, el('h2', { text: "The card's reissues" }), reissues),
      el('div', { cls: 'panel' }, el('h2', { text: "The card's other attempts" }), others(result.json.cardAttempts, 'card-attempts')),
      el('div', { cls: 'panel' }, el('h2', { text: "The customer's other attempts" }), others(result.json.customerAttempts, 'customer-attempts')));
  }

  // ---- Rule changes (maker-checker) -------------------------------------------
  const short = (version) => version ? version.replace(/^sha256:/, '').slice(0, 12) : '–';
  const changeKind = { added: 'green', removed: 'orange', changed: 'yellow' };
  function diffTable(diff, id) {
    if (!diff.length) return el('div', { cls: 'muted', id, text: 'No rule changes (lists or examples only).' });
    return table(['Rule', 'Change', 'Before', 'After'], diff.map((d) => el('tr', { 'data-rule': d.ruleId },
      td(el('span', { cls: 'mono', text: d.ruleId })), td(badge(d.change, changeKind[d.change])),
      td(d.before ? el('span', { cls: 'mono', text: d.before }) : '–'), td(d.after ? el('span', { cls: 'mono', text: d.after }) : '–'))), id);
  }
  async function changes() {
    const status = params.get('status') || '';
    const result = await api('GET', '/v1/admin/rules/changes?' + query({ status }));
    if (!result.ok) return show(el('h1', { text: 'Rule changes' }), fail(errorText(result)));
    const d = result.json;
    const filter = el('div', { cls: 'filters panel', id: 'change-filters' },
      ['', 'proposed', 'approved', 'rejected', 'superseded', 'failed'].map((s) => el('a', { href: '/console/changes' + (s ? '?status=' + s : ''), cls: 'queue' + (s === status ? ' active' : ''), text: s || 'all' })));
    const rows = d.changes.map((c) => el('tr', { 'data-change': c.changeId, 'data-status': c.status },
      td(el('a', { href: '/console/changes/' + c.changeId, cls: 'mono', text: short(c.version) })), td(badge(c.status, c.status === 'approved' ? 'green' : c.status === 'proposed' ? 'yellow' : 'orange')),
      td(c.proposedBy), td(when(c.proposedAt)), td(c.decidedBy || '–'), td(fmt(c.diff.length), 'num'), td(`${fmt(c.tests.passed)} / ${fmt(c.tests.failed)}`, 'num')));
    show(el('h1', { text: 'Rule changes' }),
      el('div', { cls: 'sub', text: d.approvalRequired
        ? 'A new version of the rules is proposed, reviewed, and serves only once someone other than its proposer approves it.'
        : 'Approval is off here (ISSUERD_RULES_APPROVAL): a version that compiles and passes its examples serves on reload.' }),
      filter, el('div', { cls: 'panel' }, el('h2', { text: 'Changes, newest first' }),
        rows.length ? table(['Version', 'Status', 'Proposed by', 'Proposed', 'Decided by', 'Rules changed#', 'Examples passed / failed#'], rows, 'changes-table')
          : el('div', { cls: 'muted', id: 'no-changes', text: 'No change.' })));
  }
  async function change() {
    const id = decodeURIComponent(location.pathname.split('/').pop());
    const result = await api('GET', '/v1/admin/rules/changes/' + encodeURIComponent(id));
    if (!result.ok) return show(el('h1', { text: 'Rule change' }), fail(result.status === 404 ? 'No such change.' : errorText(result)));
    const c = result.json, b = c.backtest;
    const message = el('div', { id: 'change-message', role: 'status' });
    const note = el('input', { id: 'note', name: 'note', size: 50, placeholder: 'why (kept in the audit log; no card numbers)' });
    const decide = async (verb) => {
      const answer = await api('POST', '/v1/admin/rules/changes/' + encodeURIComponent(id) + '/' + verb, { note: note.value });
      if (!answer.ok) return message.replaceChildren(fail(errorText(answer)));
      message.replaceChildren(el('div', { cls: 'notice', id: 'decided', text: verb === 'approve' ? 'Approved: every instance now serves this version.' : 'Rejected: the serving version stays.' }));
      setTimeout(() => location.reload(), 600);
    };
    const mine = c.proposedBy.trim().toLowerCase() === session.name.trim().toLowerCase();
    const actions = c.status === 'proposed'
      ? el('div', { cls: 'filters' }, el('label', {}, 'Note', note),
          el('button', { id: 'approve', type: 'button', text: 'Approve', disabled: mine, title: mine ? 'You proposed it: someone else approves it.' : null, onclick: () => decide('approve') }),
          el('button', { id: 'reject', type: 'button', cls: 'secondary', text: 'Reject', onclick: () => decide('reject') }),
          mine ? el('span', { cls: 'muted', text: 'You proposed this change; another analyst approves it.' }) : null)
      : el('div', { cls: 'kv' }, el('div', { text: 'Decided' }), el('div', { id: 'decision', text: c.decidedAt ? c.status + ' ' + when(c.decidedAt) + (c.decidedBy ? ' by ' + c.decidedBy : '') : c.status }),
          el('div', { text: 'Note' }), el('div', { text: c.note || '–' }));
    const flows = (f) => f ? `${fmt(f.green)} / ${fmt(f.yellow)} / ${fmt(f.orange)}` : '–';
    const backtestPanel = !b ? el('div', { cls: 'panel muted', id: 'change-backtest', text: c.status === 'proposed' ? 'No backtest now (another one is running on this instance); reload the page in a moment.' : 'Backtests are shown while a change is proposed.' })
      : b.skipped ? el('div', { cls: 'panel muted', id: 'change-backtest', text: b.skipped })
        : el('div', { cls: 'panel', id: 'change-backtest' }, el('h2', { text: 'Backtest: the last 7 days, serving → this version' }),
            el('div', { cls: 'tiles' }, tile('Attempts replayed', fmt(b.attemptsEvaluated)), tile('Change flow', fmt(b.changed), b.changed ? 'yellow' : 'green'),
              tile('Serving green / yellow / orange', flows(b.serving), '', true), tile('Proposed green / yellow / orange', flows(b.candidate), '', true)),
            b.performance ? backtestPerformance(b.performance) : el('div', { cls: 'muted', text: 'No attempt of the period has an outcome yet: nothing to measure precision against.' }));
    const tests = c.tests;
    show(el('h1', {}, 'Rule change ', el('span', { cls: 'mono', id: 'change-version', text: short(c.version) })),
      el('div', { cls: 'sub', text: `Proposed by ${c.proposedBy} · ${when(c.proposedAt)}${c.gitCommit ? ' · git commit ' + c.gitCommit.slice(0, 12) : ''}` }),
      el('div', { cls: 'tiles' }, tile('Status', c.status, c.status === 'approved' ? 'green' : c.status === 'proposed' ? 'yellow' : 'orange', true),
        el('div', { cls: 'tile wide' }, el('div', { cls: 'label', text: 'Version' }), el('div', { cls: 'value small mono', text: c.version })),
        el('div', { cls: 'tile wide' }, el('div', { cls: 'label', text: 'Replaces' }), el('div', { cls: 'value small mono', text: c.previousVersion || '–' }))),
      el('div', { cls: 'panel', id: 'change-actions' }, el('h2', { text: 'Decide' }), actions, message),
      el('div', { cls: 'panel' }, el('h2', { text: 'Rules changed' }), diffTable(c.diff, 'diff-table')),
      el('div', { cls: 'panel', id: 'change-tests' }, el('h2', { text: 'Examples' }),
        el('div', { text: `${fmt(tests.passed)} passed, ${fmt(tests.failed)} failed` + (tests.uncoveredRules && tests.uncoveredRules.length ? ` · no example makes these rules hit: ${tests.uncoveredRules.join(', ')}` : '') }),
        tests.errors ? el('pre', { cls: 'diag', text: tests.errors.join('\n') }) : null),
      backtestPanel);
  }

  // ---- Audit log ---------------------------------------------------------------
  async function audit() {
    const kind = params.has('kind') ? params.get('kind') : 'rules';
    const result = await api('GET', '/v1/admin/audit?' + query({ kind, since: params.get('since'), before: params.get('before') }));
    const form = sendingOnlyFilled(el('form', { cls: 'filters panel', method: 'GET', action: '/console/audit' },
      el('label', {}, 'Kind', el('select', { name: 'kind' }, ['', 'rules', 'card', 'customer', 'apikey', 'token', 'case', 'keys', 'outcome', 'console'].map((k) => el('option', { value: k, selected: k === kind, text: k || 'all' })))),
      el('label', {}, 'since (RFC 3339)', el('input', { name: 'since', size: 22, value: params.get('since') || '', placeholder: '2025-03-01T00:00:00Z' })),
      el('button', { type: 'submit', text: 'Show' })));
    if (!result.ok) return show(el('h1', { text: 'Audit log' }), form, fail(errorText(result)));
    const d = result.json;
    const summary = (e) => {
      const x = e.details || {};
      const parts = [];
      if (x.previousVersion || x.version) parts.push(el('div', { cls: 'mono', text: short(x.previousVersion) + ' → ' + short(x.version) }));
      if (x.gitCommit) parts.push(el('div', { cls: 'muted', text: 'git ' + x.gitCommit.slice(0, 12) }));
      if (Array.isArray(x.diff) && x.diff.length) parts.push(el('div', {}, x.diff.map((c) => el('div', {}, badge(c.change, changeKind[c.change]), ' ', el('span', { cls: 'mono', text: c.ruleId })))));
      if (x.error) parts.push(el('div', { cls: 'mono', text: x.error }));
      if (x.note) parts.push(el('div', { text: '“' + x.note + '”' }));
      if (!parts.length) parts.push(el('span', { cls: 'mono', text: JSON.stringify(x) }));
      return parts;
    };
    const rows = d.entries.map((e) => el('tr', { 'data-action': e.action },
      td(when(e.at)), td(el('span', { cls: 'mono', text: e.action })), td((e.details && e.details.person) || e.actor), td(el('span', { cls: 'mono', text: e.actor })), td(summary(e))));
    const older = d.nextBefore ? el('a', { id: 'older', href: '/console/audit?' + query({ kind, since: params.get('since'), before: String(d.nextBefore) }), text: 'Older entries →' }) : null;
    show(el('h1', { text: 'Audit log' }),
      el('div', { cls: 'sub', text: 'Every change to rules, cards, customers and keys, newest first; the entries are hash-chained (issuerd audit verify).' }),
      form, el('div', { cls: 'panel' }, rows.length ? table(['Time', 'Action', 'Person', 'Actor', 'What'], rows, 'audit-table') : el('div', { cls: 'muted', id: 'no-entries', text: 'No entry.' }), older));
  }

  // ---- Backtest ----------------------------------------------------------------
  function backtest() {
    const files = el('div', { id: 'files' });
    function addFile(path, text) {
      const box = el('div', { cls: 'file' },
        el('div', { cls: 'row' }, el('input', { cls: 'path', placeholder: 'policy/candidate.rules (path in the rules directory)', value: path || '' }),
          el('button', { type: 'button', cls: 'secondary', text: 'Remove', onclick: () => box.remove() })),
        el('textarea', { cls: 'text', spellcheck: 'false', placeholder: 'rule text…' }));
      box.querySelector('textarea').value = text || '';
      files.append(box);
    }
    addFile('', '');
    const upload = el('input', { type: 'file', multiple: true, accept: '.rules,.list', id: 'upload', onchange: async (event) => {
      for (const file of event.target.files) addFile(file.name, await file.text());
      const first = files.querySelector('.file');
      if (first && !first.querySelector('.path').value && !first.querySelector('textarea').value) first.remove();
    } });
    const replace = el('input', { type: 'checkbox', id: 'replace', checked: true });
    const output = el('div', { id: 'result' });
    const run = el('button', { type: 'submit', id: 'run', text: 'Run backtest' });
    const form = el('form', { cls: 'panel', onsubmit: async (event) => {
      event.preventDefault();
      const entries = [...files.querySelectorAll('.file')].map((f) => [f.querySelector('.path').value.trim(), f.querySelector('textarea').value]).filter(([, t]) => t.trim());
      if (!entries.length) { output.replaceChildren(fail('Paste or upload at least one rule file.')); return; }
      let rulesBody;
      if (replace.checked && entries.length === 1) rulesBody = entries[0][1];
      else rulesBody = Object.fromEntries(entries.map(([p, t], i) => [p || `candidate-${i + 1}.rules`, t]));
      let start, end;
      try { ({ since: start, until: end } = chosenPeriod()); } catch (error) { output.replaceChildren(fail(error.message)); return; }
      clearTimeout(pending);  // the run reads the period itself
      run.disabled = true;
      output.replaceChildren(el('div', { cls: 'notice', text: 'Starting the backtest…' }));
      const body = { rules: rulesBody, since: start, until: end };
      // A background job (POST …/backtest/jobs): polled for its progress, cancellable, its
      // changed attempts downloadable as CSV once done.
      let result = await api('POST', '/v1/admin/rules/backtest/jobs', body);
      // One backtest at a time per server (429 backtest_busy): wait as asked and try again, a few times.
      for (let tries = 0; result.status === 429 && tries < 10; tries += 1) {
        output.replaceChildren(el('div', { cls: 'notice', text: 'Another backtest is running on this server; waiting…' }));
        await new Promise((resolve) => setTimeout(resolve, 1000));  // the answer's Retry-After: 1
        result = await api('POST', '/v1/admin/rules/backtest/jobs', body);
      }
      if (result.status !== 202) {
        run.disabled = false;
        output.replaceChildren(renderBacktest(result));
        return;
      }
      const job = await followJob(result.json, output);
      run.disabled = false;
      if (job.state === 'done') {
        const csv = job.changedCsv;
        output.replaceChildren(renderBacktest({ ok: true, status: 200, json: job.report }),
          el('div', { cls: 'panel', id: 'changed-export' }, el('h2', { text: 'Changed attempts' }),
            el('a', { href: csv.href, id: 'changed-csv', download: 'backtest-changed.csv', text: 'Download the ' + fmt(csv.rows) + ' changed attempts (CSV)' }),
            el('div', { cls: 'muted', text: csv.truncated ? 'Only the first ' + fmt(csv.rows) + ' of ' + fmt(job.report.changed) + ' are in the file; narrow the period, or run issuerd rules backtest --changed-csv for all of them.'
              : 'Attempt id, time, channel, card\u2019s last four, flow before and after, and the rules that made the difference.' })));
      } else if (job.state === 'cancelled') {
        output.replaceChildren(el('div', { cls: 'notice', id: 'backtest-cancelled', text: 'Backtest cancelled after ' + fmt(job.progress.replayed) + ' attempts; nothing was changed.' }));
      } else {
        output.replaceChildren(fail(job.error ? job.error.message + ' (' + job.error.code + ')' : 'The backtest failed.'));
      }
      output.scrollIntoView({ block: 'start' });
    } },
      el('h2', { text: 'Candidate rule files' }),
      el('p', { cls: 'muted', text: 'Paste a rule file, or upload .rules / .list files. One file with "replace" ticked replaces every current .rules file (lists stay); otherwise each path replaces or adds that file in the current rules directory.' }),
      files, el('div', { cls: 'filters' }, el('button', { type: 'button', cls: 'secondary', text: 'Add a file', onclick: () => addFile('', '') }),
        el('label', {}, 'Upload files', upload), el('label', {}, el('span', {}, replace, ' replace every current .rules file'))),
      el('h2', { text: 'Period' }), el('div', { cls: 'filters' }, periodFields(), run));
    const chosenPeriod = () => resolvePeriod(...['since', 'until', 'range'].map((n) => form.querySelector('[name=' + n + ']').value.trim()));
    // The server reads the period ahead while the candidate is written, so the first run
    // takes its complete hours from memory (POST /v1/admin/rules/backtest/prepare): when
    // the page opens and shortly after the period changes, unless a run starts first.
    let prepared = null, pending = null;
    const periodKey = () => ['range', 'since', 'until'].map((n) => form.querySelector('[name=' + n + ']').value.trim()).join(' ');
    function prepare() {
      if (periodKey() === prepared) return;
      prepared = periodKey();
      let start, end;
      try { ({ since: start, until: end } = chosenPeriod()); } catch (_) { return; }  // a time still being typed
      // Not api(): an expired session must not leave the page (and the pasted candidate) from here.
      fetch('/v1/admin/rules/backtest/prepare', { method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-CSRF-Token': session.csrfToken },
        body: JSON.stringify({ since: start, until: end }) }).catch(() => {});
    }
    form.addEventListener('change', () => { clearTimeout(pending); pending = setTimeout(prepare, 400); });
    show(el('h1', { text: 'Backtest' }), el('div', { cls: 'sub', text: 'Replays stored attempts with the serving rules and with the candidate, velocity as of each attempt. Nothing is changed.' }), form, output);
    prepare();
  }
  // Polls a backtest job until it ends, showing its progress and a Cancel button.
  async function followJob(job, output) {
    const bar = el('progress', { id: 'backtest-progress', max: '1', value: '0' });
    const text = el('span', { cls: 'muted', id: 'backtest-progress-text', text: 'Replaying stored attempts…' });
    const cancel = el('button', { type: 'button', cls: 'secondary', id: 'cancel-backtest', text: 'Cancel', onclick: async () => {
      cancel.disabled = true;
      text.textContent = 'Cancelling…';
      await api('DELETE', '/v1/admin/rules/backtest/jobs/' + encodeURIComponent(job.id));
    } });
    output.replaceChildren(el('div', { cls: 'panel', id: 'backtest-running' }, el('h2', { text: 'Backtest running' }), bar, el('div', { cls: 'filters' }, text, cancel)));
    while (job.state === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const polled = await api('GET', '/v1/admin/rules/backtest/jobs/' + encodeURIComponent(job.id));
      if (!polled.ok) return { state: 'failed', error: polled.json && polled.json.error, progress: job.progress };
      job = polled.json;
      bar.value = job.progress.fraction;
      if (!cancel.disabled) {
        text.textContent = fmt(job.progress.replayed) + ' attempts replayed' + (job.progress.through ? ', through ' + when(job.progress.through) : '') + ' (' + Math.floor(job.progress.fraction * 100) + ' %)';
      }
    }
    return job;
  }
  function renderBacktest(result) {
    if (result.status === 422 && result.json && result.json.error && result.json.error.code === 'ruleset_invalid') {
      const e = result.json.error;
      return el('div', { id: 'diagnostics' }, fail(e.message),
        el('div', { cls: 'panel' }, el('h2', { text: 'Errors in the candidate' }),
          table(['Where', 'Error'], (e.diagnostics || []).map((d) => el('tr', { cls: 'diagnostic' },
            td(el('span', { cls: 'mono', text: `${d.file}:${d.line}:${d.column}` })),
            td([d.message, d.expected ? el('div', { cls: 'muted', text: 'expected ' + d.expected }) : null, d.suggestion ? el('div', { cls: 'muted', text: d.suggestion }) : null])))),
          el('pre', { cls: 'diag', text: (e.diagnostics || []).map((d) => d.text).join('\n') })));
    }
    if (!result.ok) return fail(errorText(result));
    const r = result.json;
    const flows = ['green', 'yellow', 'orange'];
    const mixRows = flows.map((f) => {
      const before = r.current.flows[f], after = r.candidate.flows[f], delta = after - before;
      return el('tr', { 'data-flow': f }, td(badge(f)), td(fmt(before), 'num'), td(fmt(after), 'num'),
        td(el('span', { cls: 'delta ' + (delta > 0 ? 'up' : (delta < 0 ? 'down' : '')), text: (delta > 0 ? '+' : '') + fmt(delta) }), 'num'));
    });
    const transitions = [];
    for (const [before, targets] of Object.entries(r.transitions)) for (const [after, n] of Object.entries(targets)) transitions.push([before, after, n]);
    const transitionRows = transitions.sort((x, y) => y[2] - x[2]).map(([b, a, n]) => el('tr', { 'data-transition': b + '>' + a, 'data-count': n },
      td([badge(b), el('span', { cls: 'arrow', text: '→' }), badge(a)], 'nowrap'), td(fmt(n), 'num')));
    const hitNames = (hits) => hits.map((h) => h.rule + (h.mode === 'shadow' ? ' (shadow)' : '')).join(', ') || '–';
    const examples = r.changedAttempts.map((c) => el('tr', { 'data-attempt': c.attemptId, 'data-after': c.after },
      td(el('a', { href: '/console/attempts/' + c.attemptId, cls: 'mono', text: c.attemptId.slice(0, 8) + '…' })),
      td([badge(c.before), el('span', { cls: 'arrow', text: '→' }), badge(c.after)], 'nowrap'),
      td(el('span', { cls: 'mono', text: hitNames(c.beforeHits) })), td(el('span', { cls: 'mono', text: hitNames(c.afterHits) }))));
    return el('div', { id: 'backtest-report' },
      el('div', { cls: 'tiles' }, el('div', { cls: 'tile', id: 'replayed', 'data-count': r.attemptsEvaluated }, el('div', { cls: 'label', text: 'Attempts replayed' }), el('div', { cls: 'value', text: fmt(r.attemptsEvaluated) })), el('div', { cls: 'tile', id: 'changed', 'data-count': r.changed }, el('div', { cls: 'label', text: 'Flow changed' }), el('div', { cls: 'value', text: fmt(r.changed) }), el('div', { cls: 'muted', text: pct(r.changed, r.attemptsEvaluated) })),
        tile('Window', when(r.window.since) + ' → ' + when(r.window.until), '', true), tile('Candidate version', r.candidate.version.slice(0, 19) + '…', '', true)),
      el('div', { cls: 'two' },
        el('div', { cls: 'panel' }, el('h2', { text: 'Flows before → after' }), table(['Flow', 'Serving#', 'Candidate#', 'Change#'], mixRows, 'flows-table')),
        el('div', { cls: 'panel' }, el('h2', { text: 'Flow changes' }), transitionRows.length ? table(['Change', 'Attempts#'], transitionRows, 'transitions-table') : el('div', { cls: 'muted', text: 'No attempt changes flow.' }))),
      r.performance ? backtestPerformance(r.performance) : el('div', { cls: 'panel muted', id: 'backtest-performance', text: 'No attempt of the period has an outcome yet: nothing to measure precision against.' }),
      el('div', { cls: 'panel' }, el('h2', { text: 'Example attempts that change' }),
        examples.length ? table(['Attempt', 'Flow', 'Rules hit now', 'Rules hit with the candidate'], examples, 'examples-table') : el('div', { cls: 'muted', text: 'None.' })));
  }
  // Serving against candidate over the attempts with an outcome.
  function backtestPerformance(p) {
    const keys = [...new Set([...p.serving.rules, ...p.candidate.rules].map((r) => r.mode + ' ' + r.ruleId))].sort();
    const find = (side, key) => side.rules.find((r) => r.mode + ' ' + r.ruleId === key);
    const cell = (r) => r ? `${fmt(r.fraud)} / ${fmt(r.legitimate)} · ${ratio(r.precision)}` : '–';
    const rows = keys.map((key) => el('tr', { 'data-rule': key }, td(el('span', { cls: 'mono', text: key.split(' ')[1] + (key.startsWith('shadow') ? ' (shadow)' : '') })),
      td(cell(find(p.serving, key))), td(cell(find(p.candidate, key)))));
    return el('div', { cls: 'panel', id: 'backtest-performance' }, el('h2', { text: 'Against outcomes' }),
      el('p', { id: 'performance-summary', text: 'The candidate ' + p.summary + '.' }),
      el('div', { cls: 'tiles' }, tile('Confirmed fraud', fmt(p.serving.fraud), 'orange'), tile('Legitimate', fmt(p.serving.legitimate), 'green'),
        tile('Fraud passed green', `${fmt(p.serving.fraudPassedGreen)} → ${fmt(p.candidate.fraudPassedGreen)}`, 'orange', true),
        tile('Legitimate stepped up', `${fmt(p.serving.legitimateSteppedUp)} → ${fmt(p.candidate.legitimateSteppedUp)}`, '', true)),
      rows.length ? table(['Rule', 'Serving: fraud / legitimate · precision', 'Candidate'], rows, 'backtest-performance-table') : null);
  }

  async function start() {
    if (page === 'sign-in') return signIn();
    const result = await api('GET', '/console/session');
    if (!result.ok) return;
    session = result.json;
    chrome();
    const pages = { rules, decisions, 'rule-hits': ruleHits, attempts, attempt, cases, case: reviewCase, backtest, changes, change, audit };
    try { await pages[page](); } catch (error) { if (error.message !== 'signed out') show(fail('The page could not be loaded: ' + error.message)); }
  }
  document.addEventListener('DOMContentLoaded', start);
})();
