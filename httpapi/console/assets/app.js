// bas console: a small front end with no build step. Every record field is
// put into the page as text (textContent via h()), never as markup. The
// API token lives in an HttpOnly cookie this script cannot read; calls go
// through /console/proxy/v1/..., which adds it.
'use strict';

const S = { me: null, perms: new Set(), devLogin: false, timer: null, inbox: null, page: '' };

// ---------- DOM ----------
function h(tag, attrs, ...kids) {
  const svg = tag.startsWith('svg:');
  const el = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', v);
    else if (k === 'value' && !svg) el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}
const $ = (sel, root) => (root || document).querySelector(sel);
function mount(...kids) { const m = $('#main'); m.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false)); }
function pill(text, cls) { return h('span', { class: 'pill ' + (cls || text || '') }, text); }
function flash(text, bad) {
  const f = $('#flash');
  const m = h('div', { class: 'msg' + (bad ? ' err' : ''), 'data-test': bad ? 'error' : 'notice' }, text);
  f.replaceChildren(m);
  setTimeout(() => m.remove(), bad ? 8000 : 4000);
}
function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return d.toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
}
function money(cents) { return typeof cents === 'number' ? (cents / 100).toFixed(2) : String(cents); }
function can(p) { return S.perms.has(p); }

// ---------- API ----------
class ApiError extends Error {
  constructor(status, body) {
    let msg;
    const d = body && body.detail;
    if (Array.isArray(d)) msg = d.map((v) => (v.loc || []).slice(1).join('.') + ': ' + v.msg).join('; ');
    else msg = d || ('HTTP ' + status);
    if (status === 403) msg = 'Not allowed: ' + msg;
    super(msg);
    this.status = status;
    this.body = body;
  }
}
// randomKey is a fresh idempotency key; crypto.randomUUID exists only in
// secure contexts, getRandomValues everywhere.
function randomKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return 'console-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
async function call(method, url, body) {
  const init = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin' };
  if (method !== 'GET') {
    init.headers['X-Console'] = '1';
    init.headers['Idempotency-Key'] = randomKey();
  }
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(url, init);
  let data = null;
  const text = await r.text();
  if (text) { try { data = JSON.parse(text); } catch (e) { data = { detail: text }; } }
  if (r.status === 401 && url.startsWith('/console/proxy/')) {
    S.me = null;
    go('/signin');
    throw new ApiError(401, data);
  }
  if (!r.ok) throw new ApiError(r.status, data);
  return { data, next: r.headers.get('X-Next-Cursor') };
}
const api = (method, path, body) => call(method, '/console/proxy/v1' + path, body).then((r) => r.data);
// PAGE is the page size of every list (the API's limit, 1..200). A person
// may lower it in localStorage ("bas.console.page_size") to page sooner.
const PAGE = Math.min(200, Math.max(1, Number(localStorage.getItem('bas.console.page_size')) || 100));
// listPage fetches one page of a list: {data, next}, next being the cursor of
// the page after it (the API's X-Next-Cursor) or null.
function listPage(path, cursor) {
  const sep = path.includes('?') ? '&' : '?';
  return call('GET', '/console/proxy/v1' + path + sep + 'limit=' + PAGE + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
}
// listPages fetches the first n pages of a list: {data, next}.
async function listPages(path, n) {
  let data = [];
  let next = null;
  for (let i = 0; i < n; i++) {
    const r = await listPage(path, next);
    data = data.concat(r.data);
    next = r.next;
    if (!next) break;
  }
  return { data, next };
}
// allPages reads every page of a list a select or a lookup needs whole
// (processes, members, versions), 200 at a time.
async function allPages(path) {
  const sep = path.includes('?') ? '&' : '?';
  let out = [];
  let cursor = null;
  for (let i = 0; i < 50; i++) {
    const r = await call('GET', '/console/proxy/v1' + path + sep + 'limit=200' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    out = out.concat(r.data);
    cursor = r.next;
    if (!cursor) break;
  }
  return out;
}
// moreButton is a "Load more" button that runs load (which appends the
// next page and returns its cursor) and hides itself when none is left.
function moreButton(next, load) {
  let cursor = next;
  const b = h('button', { class: 'more', 'data-test': 'load-more', hidden: !cursor || null, onclick: async () => {
    b.disabled = true;
    const r = await guard(() => load(cursor));
    b.disabled = false;
    if (r !== undefined) cursor = r;
    b.hidden = !cursor;
  } }, 'Load more');
  return b;
}
// pagedRows is a list's rows and its "Load more" button: the first page
// of path drawn with row into container, the next ones appended.
async function pagedRows(path, container, row) {
  const first = await listPage(path);
  container.append(...first.data.map(row));
  const more = moreButton(first.next, async (cursor) => {
    const r = await listPage(path, cursor);
    container.append(...r.data.map(row));
    return r.next;
  });
  return { first: first.data, more };
}

// ---------- live updates ----------
// One EventSource on the API's /v1/stream while signed in. Pages register
// a handler with live(); while the stream is open they do not poll, and
// when it fails (no EventSource, a refused or broken stream) they poll.
const LIVE = { es: null, ok: false, fns: new Set(), retry: null };
const LIVE_NAMES = ['task.created', 'task.completed', 'task.assigned', 'approval.requested', 'approval.decided',
  'process.run.started', 'process.run.completed', 'process.run.failed', 'process.run.rejected', 'process.run.cancelled',
  'process.run.paused', 'process.run.resumed', 'process.run.overdue',
  'docs.document.received', 'docs.document.extracted', 'docs.document.validated', 'docs.document.approved', 'docs.document.rejected'];
function liveState(ok) {
  LIVE.ok = ok;
  document.documentElement.dataset.live = ok ? 'on' : 'off';
}
function liveFire(ev) { for (const fn of LIVE.fns) { try { fn(ev); } catch (e) { /* a page's handler never stops the others */ } } }
function liveStart() {
  if (LIVE.es || !S.me || typeof EventSource === 'undefined') return;
  const es = new EventSource('/console/proxy/v1/stream?names=' + encodeURIComponent('task.*,approval.*,process.run.*,docs.document.*'));
  LIVE.es = es;
  // open: the subscription exists, so a read of the state now misses
  // nothing; every page reloads what it shows.
  es.addEventListener('open', () => { liveState(true); liveFire({ name: 'open' }); });
  es.addEventListener('error', () => {
    liveState(false);
    if (es.readyState === EventSource.CLOSED) {
      // A refused stream (401, 403) is not retried by the browser: try
      // again later, polling meanwhile.
      LIVE.es = null;
      clearTimeout(LIVE.retry);
      LIVE.retry = setTimeout(liveStart, 30000);
    }
  });
  const on = (e) => { let ev = null; try { ev = JSON.parse(e.data); } catch (x) { ev = null; } liveFire(ev || { name: e.type }); };
  for (const n of LIVE_NAMES) es.addEventListener(n, on);
  es.addEventListener('missed', () => liveFire({ name: 'missed' }));
}
function liveStop() {
  clearTimeout(LIVE.retry);
  if (LIVE.es) LIVE.es.close();
  LIVE.es = null;
  LIVE.fns.clear();
  liveState(false);
}
// A page that goes away (a navigation, a tab kept in the back-forward
// cache) lets its stream go at once: over HTTP/1.1 a browser holds at most
// six connections to the server, and a stream holds one.
window.addEventListener('pagehide', () => {
  clearTimeout(LIVE.retry);
  if (LIVE.es) LIVE.es.close();
  LIVE.es = null;
  liveState(false);
});
window.addEventListener('pageshow', (e) => { if (e.persisted) liveStart(); });
// live registers fn for every event (and 'open' and 'missed') until the
// next page is drawn.
function live(fn) { LIVE.fns.add(fn); }
async function guard(fn) {
  try { return await fn(); } catch (e) { if (e.status !== 401) flash(e.message, true); return undefined; }
}

// ---------- routing ----------
function go(path, replace) {
  if (replace) history.replaceState(null, '', path); else history.pushState(null, '', path);
  render();
}
window.addEventListener('popstate', render);
document.addEventListener('click', (ev) => {
  const a = ev.target.closest('a');
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
  const href = a.getAttribute('href');
  if (!href || !href.startsWith('/') || href.startsWith('/console/') || a.target) return;
  ev.preventDefault();
  go(href);
});

const NAV = [['/inbox', 'Inbox'], ['/runs', 'Runs'], ['/processes', 'Processes'], ['/documents', 'Documents', 'docs.read'], ['/cockpit', 'Cockpit'],
  ['/crm', 'CRM', 'crm.read'], ['/invoices', 'Invoices', 'invoicing.read'], ['/boards', 'Boards', 'boards.read']];
function chrome() {
  const path = location.pathname;
  $('#nav').replaceChildren(...(S.me ? NAV.filter((n) => !n[2] || can(n[2])).map(([href, label]) =>
    h('a', { href, class: path.startsWith(href) ? 'on' : null }, label)) : []));
  $('#who').replaceChildren(...(S.me ? [
    h('span', { 'data-test': 'who' }, S.me.name || S.me.email || S.me.user_id),
    h('a', { href: '#', onclick: (e) => { e.preventDefault(); help(); } }, '?'),
    h('button', { onclick: signOut, 'data-test': 'signout' }, 'Sign out'),
  ] : []));
}

async function render() {
  clearInterval(S.timer);
  S.timer = null;
  LIVE.fns.clear();
  S.page = location.pathname;
  if (!S.me) {
    const st = await call('GET', '/console/session').then((r) => r.data).catch(() => ({ signed_in: false }));
    S.devLogin = !!st.dev_login;
    if (st.signed_in) setMe(st.me);
  }
  const parts = location.pathname.split('/').filter(Boolean);
  if (!S.me && parts[0] !== 'signin') { go('/signin', true); return; }
  if (S.me && (parts.length === 0 || parts[0] === 'signin')) { go('/inbox', true); return; }
  chrome();
  if (S.me) liveStart();
  const pages = { signin: pageSignIn, inbox: pageInbox, runs: pageRuns, processes: pageProcesses, documents: pageDocuments, cockpit: pageCockpit, crm: pageCRM, invoices: pageInvoices, boards: pageBoards };
  const page = pages[parts[0]];
  if (!page) { mount(h('h1', null, 'Not found')); return; }
  try { await page(parts[1]); } catch (e) {
    if (e.status === 401) return;
    mount(h('h1', null, e.status === 403 ? 'Not allowed' : e.status === 404 ? 'Not found' : 'Something went wrong'),
      h('p', { class: 'err', 'data-test': 'page-error' }, e.message));
  }
  $('#main').focus({ preventScroll: true });
}
function setMe(me) {
  S.me = me;
  S.perms = new Set((me && me.permissions) || []);
}

// ---------- sign in ----------
async function signedIn(res) { setMe(res.data); flash('Signed in as ' + (res.data.email || res.data.user_id)); go('/inbox'); }
function pageSignIn() {
  const err = h('p', { class: 'err', 'data-test': 'signin-error' });
  const fail = (e) => { err.textContent = e.message; };
  const email = h('input', { type: 'email', name: 'email', id: 'in_email', autocomplete: 'email', required: true });
  const code = h('input', { name: 'code', id: 'in_code', inputmode: 'numeric', autocomplete: 'one-time-code' });
  const codeRow = h('div', { hidden: true }, h('label', { for: 'in_code' }, 'Code from the email'), code, ' ', h('button', { class: 'primary', type: 'submit' }, 'Sign in'));
  const key = h('input', { type: 'password', name: 'key', id: 'in_key', autocomplete: 'off' });
  const forms = [];
  if (S.devLogin) {
    const dev = h('input', { type: 'email', name: 'dev_email', id: 'in_dev', placeholder: 'demo@example.com' });
    forms.push(h('form', { class: 'card', method: 'post', 'data-test': 'dev-login', onsubmit: (e) => {
      e.preventDefault();
      const body = dev.value ? { email: dev.value } : {};
      call('POST', '/console/session/dev-login', body).then(signedIn, fail);
    } }, h('h2', null, 'Development login'), h('p', { class: 'muted' }, 'This server allows development login.'),
    h('label', { for: 'in_dev' }, 'Email (optional)'), dev, ' ', h('button', { class: 'primary', type: 'submit' }, 'Sign in')));
  }
  forms.push(h('form', { class: 'card', method: 'post', 'data-test': 'email-login', onsubmit: (e) => {
    e.preventDefault();
    if (codeRow.hidden) {
      call('POST', '/console/session/email', { email: email.value }).then(() => { codeRow.hidden = false; code.focus(); err.textContent = ''; }, fail);
    } else {
      call('POST', '/console/session/code', { email: email.value, code: code.value.trim() }).then(signedIn, fail);
    }
  } }, h('h2', null, 'Email'), h('label', { for: 'in_email' }, 'Email'), email, ' ', h('button', { type: 'submit' }, 'Send code'), codeRow));
  forms.push(h('form', { class: 'card', method: 'post', 'data-test': 'key-login', onsubmit: (e) => {
    e.preventDefault();
    call('POST', '/console/session/key', { key: key.value }).then(signedIn, fail);
  } }, h('h2', null, 'API key'), h('label', { for: 'in_key' }, 'Paste an API key'), key, ' ', h('button', { type: 'submit' }, 'Sign in')));
  mount(h('div', { class: 'signin' }, h('h1', null, 'Sign in'), err, forms));
}
async function signOut() {
  await call('POST', '/console/session/logout').catch(() => {});
  setMe(null);
  S.inbox = null;
  S.people = null;
  S.names = null;
  S.filters = null;
  liveStop();
  go('/signin');
}

// ---------- inbox ----------
const PRIO = { urgent: 0, high: 1, normal: 2, low: 3 };
function filterKey() { return 'bas.console.filters.' + (S.me.tenant_id || '') + '.' + S.me.user_id; }
function localFilters() { try { return JSON.parse(localStorage.getItem(filterKey())) || []; } catch (e) { return []; } }
// Saved filters live on the server, per person (GET and PUT
// /v1/me/inbox-filters), so they follow the person to any browser; a
// caller the API refuses them keeps them in this browser instead. Filters
// an earlier console kept in the browser move to the server once.
async function loadFilters() {
  if (S.filters) return;
  try {
    const r = await api('GET', '/me/inbox-filters');
    S.filters = r.filters;
    S.filtersRemote = true;
    const old = localFilters();
    if (!S.filters.length && old.length) {
      S.filters = (await api('PUT', '/me/inbox-filters', { filters: old.slice(-20).map(cleanFilter) })).filters;
    }
    if (old.length) localStorage.removeItem(filterKey());
  } catch (e) {
    if (e.status === 401) throw e;
    S.filters = localFilters();
    S.filtersRemote = false;
  }
}
function savedFilters() { return (S.filters || []).slice(); }
// cleanFilter keeps the fields the API takes, set.
function cleanFilter(sf) {
  const f = {};
  for (const k of ['kind', 'process', 'function', 'queue', 'assignee', 'risk']) if (sf.filter && sf.filter[k]) f[k] = sf.filter[k];
  for (const k of ['mine', 'unassigned']) if (sf.filter && sf.filter[k]) f[k] = true;
  return { name: sf.name, filter: f };
}
async function storeFilters(list) {
  list = list.slice(-20).map(cleanFilter);
  if (S.filtersRemote) S.filters = (await api('PUT', '/me/inbox-filters', { filters: list })).filters;
  else { S.filters = list; localStorage.setItem(filterKey(), JSON.stringify(list)); }
}
function mine(it) { return it.assignee && (it.assignee === S.me.user_id || it.assignee === S.me.email); }

// loadInbox reads the first n pages of each source: open tasks ("assigned
// to me" and "unassigned" are asked of the API, which serves them from
// its assignee index), pending approvals, documents waiting for review.
async function loadInbox(f, n) {
  // A source the person may not read (a key limited to some apps) leaves
  // a note instead of failing the whole inbox.
  const notes = new Set();
  const none = { data: [], next: null };
  const soft = (p) => p.catch((e) => { if (e.status !== 403) throw e; notes.add(e.message); return none; });
  const who = f.mine ? '&assignee=me' : f.unassigned ? '&assignee=' + encodeURIComponent('*') : '';
  const people = f.mine || f.unassigned; // approvals and documents have no assignee
  const [tasksP, approvalsP, procs, reviewP, validP] = await Promise.all([
    soft(listPages('/tasks?status=open' + who, n)),
    people ? none : soft(listPages('/approvals?status=pending', n)),
    allPages('/processes').catch(() => []),
    can('docs.read') && !people ? soft(listPages('/docs/documents?status=needs_review', n)) : none,
    can('docs.read') && !people ? soft(listPages('/docs/documents?status=validated', n)) : none,
  ]);
  const more = !!(tasksP.next || approvalsP.next || reviewP.next || validP.next);
  const [tasks, approvals, docsReview, docsValid] = [tasksP.data, approvalsP.data, reviewP.data, validP.data];
  const fn = Object.fromEntries(procs.map((p) => [p.id, p.function || '']));
  const now = Date.now();
  const items = [];
  for (const t of tasks) {
    items.push({ kind: 'task', id: t.id, title: t.title, due: t.due_at, process_id: t.process_id, process: t.process_name,
      function: fn[t.process_id] || '', assignee: t.assignee || '', priority: t.priority || 'normal', rec: t });
  }
  for (const a of approvals) {
    items.push({ kind: 'approval', id: a.id, title: a.summary || a.tool, due: a.expires_at, process_id: a.process_id || '',
      process: '', function: fn[a.process_id] || '', assignee: '', risk: a.risk, priority: a.risk === 'high' ? 'high' : 'normal', rec: a });
  }
  for (const d of [...docsReview, ...docsValid]) {
    if (!d.review || d.review.status !== 'pending') continue;
    items.push({ kind: 'document', id: d.id, title: d.title, due: d.due_at, process_id: '', process: d.type_name, function: '',
      assignee: '', queue: d.queue || (d.review && d.review.queue) || '', priority: d.priority || 'normal', rec: d });
  }
  const procName = Object.fromEntries(procs.map((p) => [p.id, p.name]));
  for (const it of items) {
    if (!it.process && it.process_id) it.process = procName[it.process_id] || it.process_id;
    it.overdue = !!(it.due && Date.parse(it.due) < now) || !!(it.rec.overdue);
  }
  items.sort((x, y) => (y.overdue - x.overdue) ||
    ((x.due ? Date.parse(x.due) : Infinity) - (y.due ? Date.parse(y.due) : Infinity)) ||
    ((PRIO[x.priority] ?? 2) - (PRIO[y.priority] ?? 2)) || x.id.localeCompare(y.id));
  return { items, procs, notes: [...notes], more };
}

function applyFilter(items, f) {
  return items.filter((it) => (!f.process || it.process_id === f.process) && (!f.function || it.function === f.function) &&
    (!f.queue || it.queue === f.queue) && (!f.risk || it.risk === f.risk) && (!f.kind || it.kind === f.kind) &&
    (!f.assignee || it.assignee === f.assignee) && (!f.mine || mine(it)) && (!f.unassigned || (it.kind === 'task' && !it.assignee)));
}

async function pageInbox() {
  const st = S.inbox || (S.inbox = { sel: 0, filter: {}, selId: null, pages: 1 });
  await Promise.all([loadPeople(), loadFilters()]);
  st.data = await loadInbox(st.filter, st.pages);
  const listEl = h('ul', { class: 'list', 'data-test': 'inbox-list', role: 'listbox', 'aria-label': 'Waiting on people' });
  const pane = h('div', { 'data-test': 'inbox-pane' });
  const filtersEl = h('div', { class: 'filters' });
  const chipsEl = h('div', { class: 'chips' });
  const count = h('span', { class: 'muted' });
  const noteEl = h('div');
  const moreBtn = h('button', { class: 'more', 'data-test': 'load-more', onclick: async () => {
    moreBtn.disabled = true;
    st.pages++;
    await guard(refresh);
    moreBtn.disabled = false;
  } }, 'Load more');
  const liveEl = h('span', { class: 'live muted', 'data-test': 'live', title: 'Updates arrive as they happen while this shows "live"' });

  let lastSig = '';
  function drawList() {
    const items = applyFilter(st.data.items, st.filter);
    st.items = items;
    if (st.selId) { const i = items.findIndex((it) => it.id === st.selId); if (i >= 0) st.sel = i; }
    if (st.sel >= items.length) st.sel = Math.max(0, items.length - 1);
    count.textContent = items.length + ' waiting' + (st.data.more ? ' (more to load)' : '');
    moreBtn.hidden = !st.data.more;
    liveEl.textContent = LIVE.ok ? '● live' : '○ polling';
    noteEl.replaceChildren(...st.data.notes.map((n) => h('p', { class: 'err', 'data-test': 'inbox-note' }, n)));
    // A list that shows the same as before is left as it is (a live
    // update then never moves what a person points at).
    const sig = JSON.stringify([st.sel, items.map((it) => [it.id, it.title, it.overdue, it.assignee, it.due, it.risk, it.process, it.queue, it.priority]), !!S.names]);
    if (sig === lastSig) return;
    lastSig = sig;
    listEl.replaceChildren(...(items.length ? items.map((it, i) => h('li', {
      class: i === st.sel ? 'sel' : null, 'data-id': it.id, role: 'option', 'aria-selected': i === st.sel ? 'true' : 'false',
      onclick: () => select(i),
    }, h('div', { class: 't' }, it.title),
    h('div', { class: 'm' }, pill(it.kind, 'kind'), it.overdue ? pill('overdue', 'overdue') : null, it.risk ? pill(it.risk) : null,
      it.kind !== 'approval' && it.priority !== 'normal' ? h('span', { class: 'pill prio', 'data-test': 'priority' }, it.priority) : null,
      it.process ? h('span', null, it.process) : null, it.assignee ? h('span', null, '@' + personName(it.assignee)) : null,
      it.queue ? h('span', null, 'queue ' + it.queue) : null, it.due ? h('span', null, 'due ' + when(it.due)) : null))) :
      [h('li', { class: 'muted', 'data-test': 'inbox-empty' }, 'Nothing waits on people.')]));
  }
  function select(i) {
    st.sel = i;
    const it = st.items[i];
    st.selId = it ? it.id : null;
    drawList();
    const sel = listEl.querySelector('li.sel');
    if (sel && sel.scrollIntoView) sel.scrollIntoView({ block: 'nearest' });
    if (!it || it.id !== shown) drawPane();
  }
  // drawPane shows the selected item; a slower earlier draw never
  // replaces a later one.
  let seq = 0;
  let shown = null;
  async function drawPane() {
    const it = st.items[st.sel];
    const my = ++seq;
    shown = it ? it.id : null;
    if (!it) { pane.replaceChildren(h('p', { class: 'muted' }, 'Select an item.')); return; }
    const done = async (msg) => { flash(msg); const before = st.selId; await refresh(); if (st.selId === before) drawPane(); };
    let view;
    try {
      if (it.kind === 'task') view = await taskView(it.id, done);
      else if (it.kind === 'approval') view = await approvalView(it.id, done, st.data.items);
      else view = await documentView(it.id, done);
    } catch (e) {
      if (e.status === 401) return;
      view = h('p', { class: 'err', 'data-test': 'pane-error' }, e.message);
    }
    if (my === seq) { pane.replaceChildren(view); delete pane.dataset.dirty; }
  }
  async function refresh() {
    const prevSel = st.selId;
    st.data = await loadInbox(st.filter, st.pages);
    drawList();
    const it = st.items[st.sel];
    if (!it || it.id !== prevSel) { st.selId = it ? it.id : null; drawPane(); }
  }
  function drawFilters() {
    const f = st.filter;
    const set = (k) => (e) => {
      f[k] = e.target.type === 'checkbox' ? e.target.checked : e.target.value;
      st.sel = 0; st.selId = null;
      if (k === 'mine' || k === 'unassigned') { st.pages = 1; guard(refresh).then(() => { drawList(); drawPane(); }); return; }
      drawList(); drawPane();
    };
    const opts = (vals, label) => [h('option', { value: '' }, label), ...[...new Set(vals.filter(Boolean))].sort().map((v) => h('option', { value: v }, v))];
    const items = st.data.items;
    const sel = (k, label, vals, names) => {
      const s = h('select', { 'aria-label': label, onchange: set(k) }, names ?
        [h('option', { value: '' }, label), ...vals.map(([v, n]) => h('option', { value: v }, n))] : opts(vals, label));
      s.value = f[k] || '';
      return s;
    };
    filtersEl.replaceChildren(
      sel('kind', 'All kinds', ['task', 'approval', 'document']),
      sel('process', 'Any process', [...new Map(items.filter((i) => i.process_id).map((i) => [i.process_id, i.process])).entries()], true),
      sel('function', 'Any function', items.map((i) => i.function)),
      sel('queue', 'Any queue', items.map((i) => i.queue)),
      sel('assignee', 'Any assignee', items.map((i) => i.assignee)),
      sel('risk', 'Any risk', items.map((i) => i.risk)),
      h('label', { class: 'inline' }, h('input', { type: 'checkbox', checked: f.mine, onchange: set('mine') }), 'Assigned to me'),
      h('label', { class: 'inline' }, h('input', { type: 'checkbox', checked: f.unassigned, onchange: set('unassigned') }), 'Unassigned'),
      h('button', { onclick: saveFilter, title: 'Save this filter', 'data-test': 'save-filter' }, 'Save filter'));
    const saved = savedFilters();
    chipsEl.replaceChildren(...saved.map((sf, i) => h('span', null,
      h('button', { class: 'chip', 'data-test': 'saved-filter', onclick: async () => { st.filter = { ...sf.filter }; st.sel = 0; st.selId = null; st.pages = 1; await guard(refresh); drawFilters(); drawList(); drawPane(); } }, sf.name),
      h('button', { class: 'chip', title: 'Forget ' + sf.name, 'aria-label': 'Forget ' + sf.name, onclick: async () => { saved.splice(i, 1); await guard(() => storeFilters(saved)); drawFilters(); } }, '×'))));
  }
  async function saveFilter() {
    const name = await ask({ title: 'Save this filter', label: 'Name', required: true, button: 'Save', test: 'filter-name' });
    if (!name) return;
    const saved = savedFilters().filter((s) => s.name !== name);
    saved.push({ name, filter: { ...st.filter } });
    await guard(() => storeFilters(saved));
    drawFilters();
  }
  S.keys = (ev) => {
    const it = st.items[st.sel];
    switch (ev.key) {
      case 'j': if (st.sel < st.items.length - 1) select(st.sel + 1); return true;
      case 'k': if (st.sel > 0) select(st.sel - 1); return true;
      case 'a': { const b = pane.querySelector('[data-key="a"]'); if (b && !b.disabled) b.click(); return true; }
      case 'r': { const b = pane.querySelector('[data-key="r"]'); if (b && !b.disabled) b.click(); return true; }
      case 'c': case 'm': case 'u': case 's': { const b = pane.querySelector('[data-key="' + ev.key + '"]'); if (b && !b.disabled) b.click(); return true; }
      case 'Enter': if (it) { const f = pane.querySelector('input,select,textarea'); if (f) f.focus(); } return true;
    }
    return false;
  };
  mount(h('div', { class: 'row' }, h('h1', null, 'Inbox'), count, liveEl), noteEl,
    filtersEl, chipsEl, h('div', { class: 'inbox' }, h('div', null, listEl, moreBtn), pane),
    h('p', { class: 'muted' }, 'Keys: ', h('kbd', null, 'j'), '/', h('kbd', null, 'k'), ' move, ', h('kbd', null, 'a'), ' approve, ',
      h('kbd', null, 'r'), ' reject, ', h('kbd', null, 'c'), ' complete, ', h('kbd', null, 'm'), ' claim, ', h('kbd', null, 'u'), ' unclaim, ',
      h('kbd', null, 's'), ' reassign, ', h('kbd', null, '?'), ' help'));
  drawFilters();
  drawList();
  select(st.sel);
  const page = S.page;
  // update reads the inbox again without replacing the form a person is
  // typing in (unless the item itself went away).
  // stale: an event told of a change to the item shown (its assignee, a
  // document validated again), which the pane then shows; a form a person
  // changed (dirty) or is typing in (busy) is never replaced, unless its
  // item went away.
  let stale = false;
  const CHANGES = new Set(['task.assigned', 'docs.document.validated', 'docs.document.extracted']);
  pane.addEventListener('input', () => { pane.dataset.dirty = '1'; });
  pane.addEventListener('change', () => { pane.dataset.dirty = '1'; });
  const update = () => {
    if (S.page !== page) return;
    const busy = pane.contains(document.activeElement) && document.activeElement.matches('input,textarea,select');
    loadInbox(st.filter, st.pages).then((d) => {
      st.data = d;
      const prev = st.selId;
      drawList();
      if (!st.items.some((i) => i.id === prev) || (!busy && !pane.dataset.dirty && (st.selId !== prev || stale))) { stale = false; drawPane(); }
    }, () => {});
  };
  // Live: each event of the stream reads the inbox again, a burst of
  // them once.
  let soon = null;
  live((ev) => {
    const d = (ev && ev.data) || {};
    if (st.selId && CHANGES.has(ev.name) && (d.task_id === st.selId || d.document_id === st.selId)) stale = true;
    clearTimeout(soon);
    soon = setTimeout(update, 150);
  });
  // Without the stream: a light poll every 5 seconds while visible.
  S.timer = setInterval(() => { if (!LIVE.ok && !document.hidden) update(); else liveEl.textContent = LIVE.ok ? '● live' : '○ polling'; }, 5000);
}

// ---------- tasks ----------
function fieldInput(f, value) {
  const name = 'f_' + f.key;
  const common = { name, id: name, required: f.required || null, 'data-field': f.key, 'data-type': f.type };
  switch (f.type) {
    case 'number': return h('input', { ...common, type: 'number', step: 'any', value: value ?? '' });
    case 'money': return h('input', { ...common, type: 'number', step: '0.01', value: value == null ? '' : money(value) });
    case 'date': return h('input', { ...common, type: 'date', value: value ?? '' });
    case 'email': return h('input', { ...common, type: 'email', value: value ?? '' });
    case 'boolean': return h('input', { ...common, type: 'checkbox', checked: !!value, required: null });
    case 'enum': return h('select', common, h('option', { value: '' }, '—'), (f.options || []).map((o) => h('option', { value: o, selected: o === value || null }, o)));
    default: return h('textarea', { ...common, rows: 2 }, value ?? '');
  }
}
function readField(el) {
  const t = el.dataset.type;
  if (t === 'boolean') return el.checked;
  if (el.value === '') return undefined;
  if (t === 'number') return Number(el.value);
  if (t === 'money') return Math.round(Number(el.value) * 100);
  return el.value;
}
function showViolations(form, err) {
  form.querySelectorAll('.fielderr').forEach((n) => n.remove());
  const d = err.body && err.body.detail;
  if (!Array.isArray(d)) return false;
  for (const v of d) {
    const key = (v.loc || [])[2];
    const el = key && form.querySelector('[data-field="' + CSS.escape(String(key)) + '"]');
    const m = h('div', { class: 'err fielderr' }, v.msg);
    if (el) el.after(m); else form.append(m);
  }
  return true;
}

async function taskView(id, done) {
  const t = await api('GET', '/tasks/' + encodeURIComponent(id));
  const form = h('form', { 'data-test': 'task-form', onsubmit: (e) => e.preventDefault() });
  for (const f of t.fields || []) form.append(h('label', { for: 'f_' + f.key }, f.label || f.key, f.required ? ' *' : ''), fieldInput(f, t.values ? t.values[f.key] : undefined));
  const open = t.status === 'open';
  const submit = async (action) => {
    const fields = {};
    form.querySelectorAll('[data-field]').forEach((el) => { const v = readField(el); if (v !== undefined) fields[el.dataset.field] = v; });
    try {
      await api('POST', '/tasks/' + encodeURIComponent(id) + '/complete', { action, fields });
      await done('Task completed: ' + action);
    } catch (e) { if (!showViolations(form, e)) flash(e.message, true); }
  };
  const acts = h('div', { class: 'actions' }, open && can('tasks.work') ? t.actions.map((a, i) =>
    h('button', { class: i === 0 ? 'primary' : null, 'data-key': i === 0 ? 'c' : null, 'data-action': a, onclick: () => submit(a) }, a)) :
    h('span', { class: 'muted' }, open ? 'You may not work tasks.' : 'This task is ' + t.status + '.'));
  // Claim, unclaim and reassign, shown only as the API allows them: any
  // task needs tasks.work; taking another person's needs processes.manage.
  const assignee = t.assignee || '';
  const mineNow = !!assignee && (assignee === S.me.user_id || assignee === S.me.email);
  const manage = can('processes.manage');
  const move = async (verb, body, msg) => {
    try { await api('POST', '/tasks/' + encodeURIComponent(id) + '/' + verb, body); await done(msg); } catch (e) { flash(e.message, true); }
  };
  const who = h('div', { class: 'actions', 'data-test': 'assign-actions' });
  if (open && can('tasks.work')) {
    if (!assignee) who.append(h('button', { 'data-key': 'm', 'data-test': 'claim', onclick: () => move('claim', undefined, 'Task claimed') }, 'Claim'));
    if (mineNow || (assignee && manage)) who.append(h('button', { 'data-key': 'u', 'data-test': 'unclaim', onclick: () => move('unclaim', undefined, 'Task unclaimed') }, 'Unclaim'));
    if (!assignee || mineNow || manage) {
      who.append(h('button', { 'data-key': 's', 'data-test': 'reassign', onclick: async () => {
        const to = await pickPerson('Assign "' + t.title + '" to', assignee);
        if (to) await move('assign', { assignee: to }, 'Task assigned');
      } }, 'Reassign…'));
    }
  }
  return h('div', { class: 'card', 'data-test': 'task', 'data-id': t.id },
    h('h2', { 'data-test': 'task-title' }, t.title),
    h('div', { class: 'row' }, pill(t.status), t.priority ? pill(t.priority, 'prio') : null, t.due_at ? h('span', { class: 'muted' }, 'due ' + when(t.due_at)) : null,
      h('span', { class: 'muted', 'data-test': 'task-assignee' }, assignee ? 'assigned to ' + (mineNow ? 'you' : personName(assignee)) : 'unassigned')),
    who.childNodes.length ? who : null,
    t.description ? h('p', null, t.description) : null,
    h('p', { class: 'muted' }, 'Run ', h('a', { href: '/runs/' + t.run_id }, t.process_name || t.run_id), ' · ', t.subject ? t.subject.label : ''),
    form, acts);
}

// ---------- people ----------
// S.people maps a member's user id to a name, read once per sign-in when
// the person may list members.
async function loadPeople() {
  if (S.people) return S.people;
  const list = await allPages('/members').catch(() => []);
  S.people = list;
  S.names = Object.fromEntries(list.map((m) => [m.user_id, m.name || m.email || m.user_id]));
  return list;
}
function personName(id) { return (S.names && S.names[id]) || id; }
// pickPerson asks for a member of the workspace; resolves with a user id
// or null when cancelled.
async function pickPerson(title, current) {
  const people = await loadPeople();
  return new Promise((resolve) => {
    const d = $('#dialog');
    const sel = h('select', { 'data-test': 'assignee', 'aria-label': 'Person', required: true },
      h('option', { value: '' }, '—'), people.map((m) => h('option', { value: m.user_id, selected: m.user_id === current || null },
        (m.name || m.email || m.user_id) + (m.email && m.name ? ' <' + m.email + '>' : ''))));
    const err = h('p', { class: 'err' });
    let answered = false;
    const answer = (v) => { if (!answered) { answered = true; d.close(); resolve(v); } };
    d.addEventListener('close', () => answer(null), { once: true });
    d.replaceChildren(h('form', { method: 'dialog', onsubmit: (e) => {
      e.preventDefault();
      if (!sel.value) { err.textContent = 'Choose a person.'; return; }
      answer(sel.value);
    } }, h('h2', null, title), people.length ? sel : h('p', { class: 'muted' }, 'You may not list the people of this workspace.'), err,
    h('div', { class: 'actions' }, h('button', { class: 'primary', type: 'submit', 'data-test': 'confirm' }, 'Assign'),
      h('button', { type: 'button', onclick: () => answer(null) }, 'Cancel'))));
    d.showModal();
    sel.focus();
  });
}

// ---------- approvals ----------
function argInput(k, v) {
  const common = { 'data-arg': k, id: 'arg_' + k };
  if (typeof v === 'string') return v.length > 80 || v.includes('\n') ? h('textarea', { ...common, 'data-kind': 'string' }, v) : h('input', { ...common, 'data-kind': 'string', value: v });
  if (typeof v === 'number') return h('input', { ...common, 'data-kind': 'number', type: 'number', step: 'any', value: v });
  if (typeof v === 'boolean') return h('input', { ...common, 'data-kind': 'boolean', type: 'checkbox', checked: v });
  return h('textarea', { ...common, 'data-kind': 'json' }, JSON.stringify(v, null, 2));
}
function readArgs(form) {
  const out = {};
  for (const el of form.querySelectorAll('[data-arg]')) {
    const k = el.dataset.arg;
    switch (el.dataset.kind) {
      case 'number': out[k] = Number(el.value); break;
      case 'boolean': out[k] = el.checked; break;
      case 'json': out[k] = JSON.parse(el.value); break;
      default: out[k] = el.value;
    }
  }
  return out;
}
// ask shows the console's dialog (no window.prompt or confirm, which block
// the page): a text box when label is set, and resolves with the text, true
// for a plain confirmation, or null when cancelled.
function ask({ title, label, required, button, danger, test }) {
  return new Promise((resolve) => {
    const d = $('#dialog');
    const ta = label ? h('textarea', { name: 'reason', 'data-test': test || 'reason', required: required || null, maxlength: 2000 }) : null;
    const err = h('p', { class: 'err' });
    let answered = false;
    const answer = (v) => { if (!answered) { answered = true; d.close(); resolve(v); } };
    d.addEventListener('close', () => answer(null), { once: true });
    d.replaceChildren(h('form', { method: 'dialog', onsubmit: (e) => {
      e.preventDefault();
      if (ta && required && !ta.value.trim()) { err.textContent = label + ' is required.'; return; }
      answer(ta ? ta.value.trim() : true);
    } }, h('h2', null, title), ta ? [h('label', null, label + (required ? ' (required)' : '')), ta] : null, err,
    h('div', { class: 'actions' }, h('button', { class: danger ? 'danger' : 'primary', type: 'submit', 'data-test': 'confirm' }, button),
      h('button', { type: 'button', onclick: () => answer(null) }, 'Cancel'))));
    d.showModal();
    if (ta) ta.focus();
  });
}
const askReason = (title) => ask({ title, label: 'Reason', required: true, button: 'Reject', danger: true });

async function evidenceFor(a) {
  // The evidence behind an approval: the document its run read, with the
  // extracted fields (page and text) and the validation issues.
  if (!a.run_id || !can('docs.read')) return null;
  const run = await api('GET', '/process-runs/' + encodeURIComponent(a.run_id)).catch(() => null);
  if (!run) return null;
  let docId = (a.args && a.args.document_id) || (run.trigger && run.trigger.data && run.trigger.data.document_id);
  for (const s of run.steps || []) if (!docId && s.output && s.output.document_id) docId = s.output.document_id;
  if (typeof docId !== 'string') return h('p', { class: 'muted' }, 'Run ', h('a', { href: '/runs/' + run.id }, run.process_name), ': ', run.subject ? run.subject.label : '');
  const d = await api('GET', '/docs/documents/' + encodeURIComponent(docId)).catch(() => null);
  if (!d) return null;
  return h('div', { 'data-test': 'evidence' }, h('h2', null, 'Evidence: ', h('a', { href: '/documents/' + d.id }, d.title)), fieldsTable(d, false), issuesList(d));
}

async function approvalView(id, done, inboxItems) {
  const a = await api('GET', '/approvals/' + encodeURIComponent(id));
  const form = h('form', { 'data-test': 'approval-form', onsubmit: (e) => e.preventDefault() });
  for (const [k, v] of Object.entries(a.args || {})) form.append(h('label', { for: 'arg_' + k }, k), argInput(k, v));
  const pending = a.status === 'pending';
  const approve = async () => {
    let args;
    try { args = readArgs(form); } catch (e) { flash('An argument is not valid JSON: ' + e.message, true); return; }
    const edited = JSON.stringify(args) !== JSON.stringify(a.args || {});
    try {
      await api('POST', '/approvals/' + encodeURIComponent(id) + '/approve', edited ? { args } : {});
      await done(edited ? 'Approved with edited arguments' : 'Approved');
    } catch (e) { flash(e.message, true); }
  };
  const reject = async () => {
    const reason = await askReason('Reject: ' + (a.summary || a.tool));
    if (reason === null) return;
    try {
      await api('POST', '/approvals/' + encodeURIComponent(id) + '/reject', { reason });
      await done('Rejected');
    } catch (e) { flash(e.message, true); }
  };
  const similar = (inboxItems || []).filter((it) => it.kind === 'approval' && it.id !== a.id && it.rec.risk === 'low' && a.risk === 'low' &&
    it.rec.process_id === a.process_id && it.rec.step_key === a.step_key);
  const bulk = async (verb) => {
    const all = [a.id, ...similar.map((s) => s.id)];
    let reason;
    if (verb === 'reject') { reason = await askReason('Reject ' + all.length + ' similar approvals'); if (reason === null) return; }
    else if (!await ask({ title: 'Approve ' + all.length + ' similar approvals as proposed?', button: 'Approve all' })) return;
    let ok = 0; const errs = [];
    for (const x of all) {
      try { await api('POST', '/approvals/' + encodeURIComponent(x) + '/' + verb, verb === 'reject' ? { reason } : {}); ok++; } catch (e) { errs.push(x + ': ' + e.message); }
    }
    if (errs.length) flash(errs.join('; '), true);
    await done((verb === 'approve' ? 'Approved ' : 'Rejected ') + ok + ' of ' + all.length);
  };
  const acts = h('div', { class: 'actions' });
  if (pending && can('approvals.decide')) {
    acts.append(h('button', { class: 'primary', 'data-key': 'a', 'data-test': 'approve', onclick: approve }, 'Approve'),
      h('button', { class: 'danger', 'data-key': 'r', 'data-test': 'reject', onclick: reject }, 'Reject'));
    if (similar.length) {
      acts.append(h('button', { 'data-test': 'bulk-approve', onclick: () => bulk('approve') }, 'Approve all ' + (similar.length + 1) + ' similar'),
        h('button', { 'data-test': 'bulk-reject', onclick: () => bulk('reject') }, 'Reject all ' + (similar.length + 1) + ' similar'));
    }
  } else if (pending) acts.append(h('span', { class: 'muted', 'data-test': 'no-decide' }, 'Deciding needs the approvals.decide permission.'));
  const ev = await evidenceFor(a);
  return h('div', { class: 'card', 'data-test': 'approval', 'data-id': a.id },
    h('h2', { 'data-test': 'approval-summary' }, a.summary || a.tool),
    h('div', { class: 'row' }, pill(a.status), pill('risk ' + (a.risk || 'n/a'), a.risk), h('span', { class: 'muted' }, a.tool),
      a.args && typeof a.args.amount_cents === 'number' ? h('strong', null, 'amount ' + money(a.args.amount_cents)) : null,
      a.expires_at ? h('span', { class: 'muted' }, 'expires ' + when(a.expires_at)) : null),
    a.reason ? h('p', { class: 'muted' }, a.reason) : null,
    a.run_id ? h('p', { class: 'muted' }, 'Run ', h('a', { href: '/runs/' + a.run_id }, a.run_id), ' · step ', a.step_key) : null,
    h('h2', null, 'Arguments'), form, acts, ev);
}

// ---------- documents ----------
function fmtValue(v, f) {
  if (v === null || v === undefined) return '';
  if (f && f.type === 'money' && typeof v === 'number') return money(v);
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}
function fieldsTable(d, editable, onSave) {
  const type = d._type;
  const keys = type ? type.fields.map((f) => f.key) : Object.keys(d.extracted || {});
  const labels = type ? Object.fromEntries(type.fields.map((f) => [f.key, f.label])) : {};
  const defs = type ? Object.fromEntries(type.fields.map((f) => [f.key, f])) : {};
  const issuesBy = {};
  for (const is of (d.validation && d.validation.issues) || []) (issuesBy[is.field] = issuesBy[is.field] || []).push(is);
  const rows = keys.map((k) => {
    const x = (d.extracted || {})[k];
    const v = fmtValue(x && x.value, defs[k]);
    const cell = editable ? h('input', { 'data-doc-field': k, value: v, 'aria-label': labels[k] || k }) : h('span', null, v);
    return h('tr', { 'data-test': 'doc-field', 'data-key': k },
      h('td', null, labels[k] || k), h('td', null, cell),
      h('td', { class: 'evidence' }, x ? (x.source === 'correction' ? 'corrected by ' + (x.corrected_by || '') : ['p. ', x.page ?? '?', ': ', h('mark', null, x.text || '')]) : 'not found'),
      h('td', null, (issuesBy[k] || []).map((is) => pill(is.severity, is.severity))));
  });
  const table = h('table', null, h('thead', null, h('tr', null, h('th', null, 'Field'), h('th', null, 'Value'), h('th', null, 'From'), h('th', null, ''))), h('tbody', null, rows));
  if (!editable) return table;
  return h('form', { 'data-test': 'doc-fields', onsubmit: (e) => {
    e.preventDefault();
    const fields = {};
    try {
      e.target.querySelectorAll('[data-doc-field]').forEach((el) => {
        const k = el.dataset.docField; const x = (d.extracted || {})[k]; const f = defs[k];
        if (el.value === fmtValue(x && x.value, f)) return;
        // A repeat field takes a list: [12.5, "3,40"] as JSON.
        fields[k] = el.value === '' ? null : f && f.repeat ? JSON.parse(el.value) : el.value;
      });
    } catch (err) { flash('A list field needs a JSON list: ' + err.message, true); return; }
    onSave(fields, e.target);
  } }, table, h('div', { class: 'actions' }, h('button', { type: 'submit', 'data-test': 'save-fields' }, 'Save corrections')));
}
function issuesList(d) {
  const v = d.validation;
  if (!v) return h('p', { class: 'muted' }, 'Not validated yet.');
  const issues = v.issues || [];
  return h('div', { 'data-test': 'issues' }, h('h2', null, 'Validation ', pill(v.status)),
    issues.length ? issues.map((is) => h('div', { class: 'issue ' + is.severity, 'data-rule': is.rule_id },
      h('div', null, h('strong', null, is.rule_id), ' — ', is.message),
      is.evidence ? h('div', { class: 'evidence' }, evidenceText(is.evidence)) : null)) : h('p', { class: 'muted' }, 'No issues.'));
}
function evidenceText(e) {
  const out = [];
  if (e.text) out.push('found ', h('mark', null, e.text), e.page ? ' on page ' + e.page : '');
  if (e.searched) out.push(out.length ? '; ' : '', 'searched for ' + [].concat(e.searched).join(', '));
  if (e.values) out.push(out.length ? '; ' : '', 'values ' + JSON.stringify(e.values));
  if (e.documents) out.push(out.length ? '; ' : '', 'documents ' + [].concat(e.documents).map((x) => (x && x.id) || x).join(', '));
  return out;
}
async function documentView(id, done, full) {
  const d = await api('GET', '/docs/documents/' + encodeURIComponent(id));
  d._type = await api('GET', '/docs/types/' + encodeURIComponent(d.type_id)).catch(() => null);
  const act = Object.fromEntries((d.actions || []).map((x) => [x.name, x]));
  const allowed = (n) => can('docs.review') && act[n] && act[n].allowed;
  const reload = async (msg) => { if (done) await done(msg); };
  const save = async (fields, form) => {
    try {
      await api('POST', '/docs/documents/' + encodeURIComponent(id) + '/fields', { fields });
      await reload('Fields saved; the document was validated again');
    } catch (e) { if (!showViolations(form, e)) flash(e.message, true); }
  };
  const approve = async () => {
    try { await api('POST', '/docs/documents/' + encodeURIComponent(id) + '/approve', {}); await reload('Document approved'); } catch (e) { flash(e.message, true); }
  };
  const reject = async () => {
    const note = await askReason('Reject ' + d.title);
    if (note === null) return;
    try { await api('POST', '/docs/documents/' + encodeURIComponent(id) + '/reject', { note }); await reload('Document rejected'); } catch (e) { flash(e.message, true); }
  };
  const acts = h('div', { class: 'actions' });
  if (d.review && d.review.status === 'pending' && can('docs.review')) {
    acts.append(h('button', { class: 'primary', 'data-key': 'a', 'data-test': 'doc-approve', disabled: !allowed('approve'), title: act.approve && act.approve.reason, onclick: approve }, 'Approve'),
      h('button', { class: 'danger', 'data-key': 'r', 'data-test': 'doc-reject', disabled: !allowed('reject'), onclick: reject }, 'Reject'));
    if (act.approve && !act.approve.allowed && act.approve.reason) acts.append(h('span', { class: 'muted' }, act.approve.reason));
  }
  const head = [h('h2', { 'data-test': 'doc-title' }, d.title),
    h('div', { class: 'row' }, pill(d.status), h('span', { class: 'muted' }, d.type_name), d.priority ? pill(d.priority, 'prio') : null,
      d.due_at ? h('span', { class: 'muted' }, 'due ' + when(d.due_at)) : null,
      full ? null : h('a', { href: '/documents/' + d.id }, 'Open the review page'))];
  const side = h('div', null, fieldsTable(d, allowed('correct_fields'), save), issuesList(d), acts);
  if (!full) return h('div', { class: 'card', 'data-test': 'document', 'data-id': d.id }, head, side);
  return h('div', { 'data-test': 'document', 'data-id': d.id }, h('div', { class: 'card' }, head),
    h('div', { class: 'review' },
      h('iframe', { class: 'file', title: 'The file', src: '/console/proxy/v1/docs/documents/' + encodeURIComponent(d.id) + '/file?inline=1' }),
      h('div', { class: 'card' }, side,
        h('h2', null, 'History'), h('ul', null, (d.history || []).map((x) => h('li', null, when(x.at), ' ', x.action, x.by ? ' by ' + x.by : '', x.note ? ': ' + x.note : ''))))));
}
async function pageDocuments(id) {
  if (id) {
    const draw = async (msg) => { if (msg) flash(msg); mount(h('p', null, h('a', { href: '/documents' }, '← Review queue')), await documentView(id, draw, true)); };
    await draw();
    return;
  }
  const row = (d) => h('tr', null, h('td', null, h('a', { href: '/documents/' + d.id }, d.title)), h('td', null, pill(d.status)), h('td', null, d.type_name),
    h('td', null, d.validation ? (d.validation.errors || 0) + ' errors, ' + (d.validation.warnings || 0) + ' warnings' : ''), h('td', null, when(d.due_at)));
  const table = (body, test) => h('table', { 'data-test': test }, h('thead', null, h('tr', null, h('th', null, 'Title'), h('th', null, 'Status'), h('th', null, 'Type'), h('th', null, 'Issues'), h('th', null, 'Due'))), body);
  // The queue merges two lists (needs review, validated), sorted by due
  // time: "Load more" reads one page more of each and sorts again.
  let n = 1;
  const queueBody = h('tbody');
  const queueEl = h('div');
  const drawQueue = async () => {
    const [a, b] = await Promise.all([listPages('/docs/documents?status=needs_review', n), listPages('/docs/documents?status=validated', n)]);
    const docs = [...a.data, ...b.data].filter((d) => d.review && d.review.status === 'pending').sort((x, y) => (x.due_at || '').localeCompare(y.due_at || ''));
    queueBody.replaceChildren(...docs.map(row));
    const more = a.next || b.next ? h('button', { class: 'more', 'data-test': 'load-more', onclick: () => { n++; guard(drawQueue); } }, 'Load more') : null;
    queueEl.replaceChildren(docs.length ? table(queueBody, 'doc-queue') : h('p', { class: 'muted' }, 'No document waits for review.'), more || '');
  };
  await drawQueue();
  const recentBody = h('tbody');
  const { more } = await pagedRows('/docs/documents', recentBody, row);
  mount(h('h1', null, 'Documents'), h('h2', null, 'Review queue'), queueEl, h('h2', null, 'Recent'), table(recentBody, 'doc-recent'), more);
}

// ---------- runs ----------
async function pageRuns(id) {
  if (id) return pageRun(id);
  const q = new URLSearchParams(location.search);
  const procs = await allPages('/processes').catch(() => []);
  const params = new URLSearchParams();
  for (const k of ['process_id', 'status', 'overdue', 'q']) if (q.get(k)) params.set(k, q.get(k));
  const body = h('tbody');
  const { more } = await pagedRows('/process-runs?' + params, body, runRow);
  const upd = (k) => (e) => { const p = new URLSearchParams(location.search); const v = e.target.type === 'checkbox' ? (e.target.checked ? 'true' : '') : e.target.value; if (v) p.set(k, v); else p.delete(k); go('/runs' + (p.toString() ? '?' + p : '')); };
  const procSel = h('select', { 'aria-label': 'Process', onchange: upd('process_id') }, h('option', { value: '' }, 'Any process'), procs.map((p) => h('option', { value: p.id }, p.name)));
  procSel.value = q.get('process_id') || '';
  const stSel = h('select', { 'aria-label': 'Status', onchange: upd('status') }, h('option', { value: '' }, 'Any status'), ['running', 'waiting', 'completed', 'failed', 'rejected', 'cancelled'].map((s) => h('option', { value: s }, s)));
  stSel.value = q.get('status') || '';
  mount(h('h1', null, 'Runs'),
    h('div', { class: 'filters' }, procSel, stSel,
      h('label', { class: 'inline' }, h('input', { type: 'checkbox', checked: q.get('overdue') === 'true', onchange: upd('overdue') }), 'Overdue'),
      h('input', { type: 'search', placeholder: 'Subject text', 'aria-label': 'Subject text', value: q.get('q') || '', onchange: upd('q') })),
    runsTable(body), more);
}
function runRow(r) {
  return h('tr', null,
    h('td', null, h('a', { href: '/runs/' + r.id }, (r.subject && r.subject.label) || r.id)),
    h('td', null, pill(r.status), r.overdue ? [' ', pill('overdue', 'overdue')] : null),
    h('td', null, r.process_name, ' v', r.process_version), h('td', null, r.current_step || ''), h('td', null, when(r.started_at)));
}
// runsTable is a table of runs: a list of them, or a tbody to fill.
function runsTable(runs) {
  return h('table', { 'data-test': 'runs' }, h('thead', null, h('tr', null, h('th', null, 'Subject'), h('th', null, 'Status'), h('th', null, 'Process'), h('th', null, 'Step'), h('th', null, 'Started'))),
    runs instanceof Node ? runs : h('tbody', null, runs.map(runRow)));
}
async function pageRun(id) {
  const draw = async () => {
    const r = await api('GET', '/process-runs/' + encodeURIComponent(id));
    const details = await Promise.all(r.steps.map(async (s) => {
      if (s.task_id) return api('GET', '/tasks/' + encodeURIComponent(s.task_id)).catch(() => null);
      if (s.approval_id) return api('GET', '/approvals/' + encodeURIComponent(s.approval_id)).catch(() => null);
      return null;
    }));
    const finished = ['completed', 'failed', 'rejected', 'cancelled'].includes(r.status);
    // The runs its events started (GET /v1/process-runs/{id}/runs), paged.
    const kidsBody = h('tbody');
    const kids = await pagedRows('/process-runs/' + encodeURIComponent(id) + '/runs', kidsBody, runRow).catch(() => ({ first: [], more: null }));
    const cancel = async () => {
      if (!await ask({ title: 'Cancel this run?', button: 'Cancel the run', danger: true })) return;
      try { await api('POST', '/process-runs/' + encodeURIComponent(id) + '/cancel'); flash('Run cancelled'); await draw(); } catch (e) { flash(e.message, true); }
    };
    const links = [];
    if (r.rerun_of) links.push(h('span', null, 'rerun of ', h('a', { href: '/runs/' + r.rerun_of }, r.rerun_of)));
    const parent = (r.trigger && r.trigger.cause && r.trigger.cause.run_id) || (r.trigger && r.trigger.data && typeof r.trigger.data.run_id === 'string' && r.trigger.data.run_id);
    if (parent) links.push(h('span', { 'data-test': 'started-by' }, 'started by run ', h('a', { href: '/runs/' + parent }, parent)));
    mount(h('p', null, h('a', { href: '/runs' }, '← Runs')),
      h('div', { class: 'card', 'data-test': 'run', 'data-status': r.status },
        h('h1', null, (r.subject && r.subject.label) || r.id),
        h('div', { class: 'row' }, pill(r.status), r.overdue ? pill('overdue', 'overdue') : null,
          h('a', { href: '/processes/' + r.process_id }, r.process_name + ' v' + r.process_version),
          h('span', { class: 'muted' }, 'trigger ' + ((r.trigger && (r.trigger.event || r.trigger.type)) || '')), links),
        h('dl', { class: 'kv' }, h('dt', null, 'started'), h('dd', null, when(r.started_at)), h('dt', null, 'completed'), h('dd', null, when(r.completed_at) || '—'),
          h('dt', null, 'minutes saved'), h('dd', null, r.minutes_saved || 0)),
        r.error ? h('p', { class: 'err' }, r.error) : null,
        r.waiting_reason ? h('p', { class: 'muted', 'data-test': 'waiting-reason' }, 'Waiting: ' + r.waiting_reason) : null,
        !finished && can('runs.start') ? h('div', { class: 'actions' }, h('button', { class: 'danger', 'data-test': 'cancel-run', onclick: cancel }, 'Cancel run')) : null),
      h('h2', null, 'Timeline'),
      h('ol', { class: 'timeline', 'data-test': 'timeline' }, r.steps.map((s, i) => stepItem(s, details[i]))),
      kids.first.length ? [h('h2', null, 'Runs it started'), runsTable(kidsBody), kids.more] : null);
    return finished;
  };
  let finished = await draw();
  const page = S.page;
  const redraw = () => { if (S.page === page && !$('#dialog').open) draw().then((f) => { finished = f; }, () => {}); };
  // Live: an event of this run (its steps' tasks and approvals carry its
  // id) redraws it while it goes on, and so does the start of a run its
  // events started; without the stream, a poll every 5 seconds.
  let soon = null;
  live((ev) => {
    const d = (ev && ev.data) || {};
    const own = ev.name === 'open' || ev.name === 'missed' || d.run_id === id;
    const child = ev.name === 'process.run.started' && ev.cause && ev.cause.run_id === id;
    if ((own && !finished) || child) { clearTimeout(soon); soon = setTimeout(redraw, 100); }
  });
  S.timer = setInterval(() => { if (!finished && !LIVE.ok && !document.hidden) redraw(); }, 5000);
}
function stepItem(s, x) {
  const kids = [h('div', null, h('strong', null, s.key), ' ', h('span', { class: 'muted' }, s.type), ' ', pill(s.status))];
  const t = [];
  if (s.started_at) t.push('started ' + when(s.started_at));
  if (s.completed_at) t.push('done ' + when(s.completed_at));
  if (s.started_at && s.completed_at) t.push(Math.round((Date.parse(s.completed_at) - Date.parse(s.started_at)) / 1000) + ' s');
  if (s.attempts) t.push(s.attempts + ' attempts');
  if (t.length) kids.push(h('div', { class: 'muted' }, t.join(' · ')));
  if (s.error) kids.push(h('div', { class: 'err' }, s.error));
  if (x && s.task_id) {
    kids.push(h('div', null, 'Task ', h('em', null, x.title), ' — ', x.status,
      x.completed_by ? ' by ' + x.completed_by : '', x.completed_at ? ' at ' + when(x.completed_at) : '', x.outcome ? ' (' + x.outcome + ')' : ''));
  }
  if (x && s.approval_id) {
    kids.push(h('div', null, 'Approval ', h('em', null, x.summary || x.tool), ' — ', x.status,
      x.decided_by ? ' by ' + x.decided_by : '', x.decided_at ? ' at ' + when(x.decided_at) : '', x.edited ? ' with edited arguments' : '', x.note ? ': ' + x.note : ''));
    if (x.edited) kids.push(h('pre', null, JSON.stringify(x.args, null, 2)));
  }
  if (s.output !== null && s.output !== undefined) kids.push(h('details', null, h('summary', null, 'output'), h('pre', null, JSON.stringify(s.output, null, 2))));
  return h('li', { class: s.status, 'data-step': s.key, 'data-status': s.status }, kids);
}

// ---------- processes ----------
async function pageProcesses(id) {
  if (id) return pageProcess(id);
  const body = h('tbody');
  const { more } = await pagedRows('/processes', body, (p) => h('tr', null, h('td', null, h('a', { href: '/processes/' + p.id }, p.name)), h('td', null, p.function || ''),
    h('td', null, p.trigger ? p.trigger.type + (p.trigger.event ? ' ' + p.trigger.event : '') + (p.trigger.cron ? ' ' + p.trigger.cron : '') : ''),
    h('td', null, 'v' + p.version), h('td', null, p.enabled ? 'yes' : 'no')));
  mount(h('h1', null, 'Processes'), h('table', { 'data-test': 'processes' },
    h('thead', null, h('tr', null, h('th', null, 'Name'), h('th', null, 'Function'), h('th', null, 'Trigger'), h('th', null, 'Version'), h('th', null, 'Enabled'))),
    body), more);
}
async function pageProcess(id) {
  const [p, versions] = await Promise.all([api('GET', '/processes/' + encodeURIComponent(id)), allPages('/processes/' + encodeURIComponent(id) + '/versions')]);
  let shown = versions.length - 1;
  const chain = h('div');
  const drawChain = () => {
    const v = versions[shown];
    chain.replaceChildren(h('ol', { class: 'timeline', 'data-test': 'step-chain' }, (v ? v.steps : p.steps).map((s) => h('li', null,
      h('strong', null, s.name || s.key), ' ', h('span', { class: 'muted' }, s.type + (s.capability ? ' · ' + s.capability : '')),
      s.config ? h('details', null, h('summary', null, 'config'), h('pre', null, JSON.stringify(s.config, null, 2))) : null))));
  };
  const vSel = h('select', { 'aria-label': 'Version', onchange: (e) => { shown = Number(e.target.value); drawChain(); } },
    versions.map((v, i) => h('option', { value: i, selected: i === shown || null }, 'v' + v.version + ' · ' + when(v.created_at))));
  const typ = h('input', { name: 'subject_type', id: 'in_stype', required: true, maxlength: 200, value: 'manual' });
  const label = h('input', { name: 'subject_label', id: 'in_slabel', required: true, maxlength: 200 });
  const start = h('form', { class: 'card', 'data-test': 'start', onsubmit: async (e) => {
    e.preventDefault();
    try {
      const run = await api('POST', '/processes/' + encodeURIComponent(id) + '/start', { subject: { type: typ.value, label: label.value } });
      flash('Run started'); go('/runs/' + run.id);
    } catch (err) { flash(err.message, true); }
  } }, h('h2', null, 'Start by hand'), h('div', { class: 'row' }, h('span', null, h('label', { for: 'in_stype' }, 'Subject type'), typ), h('span', null, h('label', { for: 'in_slabel' }, 'Subject'), label)),
  h('div', { class: 'actions' }, h('button', { class: 'primary', type: 'submit' }, 'Start')));
  mount(h('p', null, h('a', { href: '/processes' }, '← Processes')),
    h('div', { class: 'card' }, h('h1', null, p.name), p.description ? h('p', null, p.description) : null,
      h('div', { class: 'row' }, pill(p.enabled ? 'enabled' : 'disabled'), h('span', { class: 'muted' }, p.function || ''), h('a', { href: '/runs?process_id=' + p.id }, 'Runs'))),
    can('runs.start') && p.enabled ? start : null,
    h('h2', null, 'Steps ', vSel), chain);
  drawChain();
}

// ---------- cockpit ----------
function chart(daily) {
  const W = 600, H = 160, pad = 20, n = daily.length || 1;
  const max = Math.max(1, ...daily.map((d) => d.completed));
  const bw = (W - pad * 2) / n;
  const svg = h('svg:svg', { class: 'chart', viewBox: '0 0 ' + W + ' ' + (H + 20), role: 'img', 'aria-label': 'Runs completed per day, last 30 days', 'data-test': 'chart' });
  daily.forEach((d, i) => {
    const bh = (d.completed / max) * (H - pad);
    svg.append(h('svg:rect', { class: 'bar', x: pad + i * bw + 1, y: H - bh, width: Math.max(1, bw - 2), height: bh, 'data-date': d.date, 'data-count': d.completed },
      h('svg:title', null, d.date + ': ' + d.completed + ' completed, ' + d.minutes_saved + ' min saved')));
    if (i % 5 === 0 || i === n - 1) svg.append(h('svg:text', { x: pad + i * bw, y: H + 14 }, d.date.slice(5)));
  });
  svg.append(h('svg:text', { x: 2, y: pad - 6 }, String(max)));
  svg.append(h('svg:line', { x1: pad, x2: W - pad, y1: H, y2: H, stroke: '#c9d0dc' }));
  return svg;
}
async function pageCockpit() {
  const draw = async () => {
    const c = await api('GET', '/cockpit');
    const fig = (n, l, test) => h('div', { class: 'fig', 'data-test': test }, h('div', { class: 'n' }, n), h('div', { class: 'l' }, l));
    mount(h('h1', null, 'Cockpit'),
      h('div', { class: 'figs' }, fig(c.running, 'running', 'running'), fig(c.waiting_on_you, 'waiting on you', 'waiting_on_you'), fig(c.overdue, 'overdue', 'overdue'),
        fig(c.completed_30d, 'completed (30 days)', 'completed_30d'), fig(c.minutes_saved_30d, 'minutes saved (30 days)', 'minutes_saved_30d'),
        fig(c.agreement_rate === null ? '—' : Math.round(c.agreement_rate * 100) + '%', 'agreement rate', 'agreement_rate')),
      h('h2', null, 'Runs completed per day'), chart(c.daily || []),
      h('h2', null, 'By function'), h('table', { 'data-test': 'by-function' }, h('thead', null, h('tr', null, h('th', null, 'Function'), h('th', null, 'Running'), h('th', null, 'Waiting'))),
        h('tbody', null, Object.entries(c.by_function || {}).sort().map(([f, v]) => h('tr', null, h('td', null, f || '(none)'), h('td', null, v.running), h('td', null, v.waiting))))),
      h('h2', null, 'Recent runs'), runsTable(c.recent_runs || []));
  };
  await draw();
  const page = S.page;
  S.timer = setInterval(() => { if (S.page === page && !document.hidden) draw().catch(() => {}); }, 10000);
}

// ---------- apps: CRM, invoices, boards ----------
// need stops a page the person's permissions do not allow, as the API would.
function need(p) { if (!can(p)) throw new ApiError(403, { detail: 'this needs the permission ' + p }); }
const enc = encodeURIComponent;
function amount(cur, cents) { return (cur ? cur + ' ' : '') + money(cents); }
async function pageCRM() {
  need('crm.read');
  const pipes = await allPages('/crm/pipelines');
  const q = new URLSearchParams(location.search);
  const pipe = pipes.find((p) => p.id === q.get('pipeline_id')) || pipes.find((p) => p.is_default) || pipes[0];
  if (!pipe) { mount(h('h1', null, 'CRM'), h('p', { class: 'muted' }, 'No pipeline yet.')); return; }
  const draw = async (msg) => {
    if (msg) flash(msg);
    const [cols, companies] = await Promise.all([api('GET', '/crm/pipelines/' + enc(pipe.id) + '/board?limit=' + PAGE),
      api('GET', '/crm/companies?limit=200').catch(() => [])]);
    const company = Object.fromEntries(companies.map((c) => [c.id, c.name]));
    const move = (d) => async (e) => {
      try { await api('PATCH', '/crm/deals/' + enc(d.id), { stage_id: e.target.value }); await draw('Deal moved'); } catch (err) { flash(err.message, true); e.target.value = d.stage_id; }
    };
    const card = (d) => h('li', { class: 'kcard', 'data-test': 'deal', 'data-id': d.id },
      h('div', { class: 't' }, d.title),
      h('div', { class: 'm' }, h('span', null, amount(d.currency, d.amount_cents)), d.company_id ? h('span', { 'data-test': 'deal-company' }, company[d.company_id] || '') : null,
        d.expected_close ? h('span', null, 'close ' + when(d.expected_close)) : null),
      can('crm.write') ? h('select', { 'aria-label': 'Stage of ' + d.title, 'data-test': 'deal-stage', onchange: move(d) },
        pipe.stages.map((s) => h('option', { value: s.id, selected: s.id === d.stage_id || null }, s.name))) : null);
    const totals = (c) => (c.totals && c.totals.length ? c.totals : [{ currency: '', total_cents: c.total_cents, weighted_cents: c.weighted_cents }])
      .map((t) => h('div', { class: 'muted' }, amount(t.currency, t.total_cents), ' · weighted ', amount(t.currency, t.weighted_cents)));
    mount(h('h1', null, 'CRM'),
      pipes.length > 1 ? h('div', { class: 'filters' }, h('select', { 'aria-label': 'Pipeline', onchange: (e) => go('/crm?pipeline_id=' + enc(e.target.value)) },
        pipes.map((p) => h('option', { value: p.id, selected: p.id === pipe.id || null }, p.name)))) : null,
      h('h2', null, pipe.name),
      h('div', { class: 'kanban', 'data-test': 'crm-board' }, cols.map((c) => {
        // The board holds a stage's newest deals; "Load more" pages the
        // stage's deals list, leaving out those shown.
        const ul = h('ul', { class: 'kcards' }, c.deals.map(card));
        const shown = new Set(c.deals.map((d) => d.id));
        const total = c.count === undefined ? c.deals.length : c.count;
        let cursor = null;
        const more = h('button', { class: 'more', 'data-test': 'load-more', hidden: shown.size >= total || null, onclick: () => guard(async () => {
          const r = await listPage('/crm/deals?pipeline_id=' + enc(pipe.id) + '&stage_id=' + enc(c.stage.id), cursor);
          for (const d of r.data) if (!shown.has(d.id)) { shown.add(d.id); ul.append(card(d)); }
          cursor = r.next;
          more.hidden = !cursor || shown.size >= total;
        }) }, 'Load more');
        return h('section', { class: 'kcol', 'data-test': 'stage', 'data-id': c.stage.id },
          h('h3', null, c.stage.name, ' ', pill(String(total), 'count'), ' ', h('span', { class: 'muted' }, c.stage.probability + '%')),
          totals(c), ul, more);
      })));
  };
  await draw();
}

async function pageInvoices(id) {
  need('invoicing.read');
  if (id) return pageInvoice(id);
  const q = new URLSearchParams(location.search);
  const params = new URLSearchParams();
  if (q.get('status')) params.set('status', q.get('status'));
  const invBody = h('tbody');
  const { first: list, more } = await pagedRows('/invoicing/invoices?' + params, invBody, (v) => h('tr', { 'data-id': v.id },
    h('td', null, h('a', { href: '/invoices/' + v.id }, v.number || 'Draft')), h('td', null, v.customer_name || ''), h('td', null, pill(v.status)),
    h('td', null, v.collection ? pill(v.collection) : ''), h('td', null, amount(v.currency, v.total_cents)), h('td', null, amount(v.currency, v.amount_due_cents)),
    h('td', null, v.due_date || '')));
  const stSel = h('select', { 'aria-label': 'Status', onchange: (e) => go('/invoices' + (e.target.value ? '?status=' + enc(e.target.value) : '')) },
    h('option', { value: '' }, 'Any status'), ['draft', 'open', 'paid', 'void', 'uncollectible'].map((s) => h('option', { value: s, selected: s === q.get('status') || null }, s)));
  mount(h('h1', null, 'Invoices'), h('div', { class: 'filters' }, stSel),
    list.length ? h('table', { 'data-test': 'invoices' },
      h('thead', null, h('tr', null, h('th', null, 'Number'), h('th', null, 'Customer'), h('th', null, 'Status'), h('th', null, 'Collection'), h('th', null, 'Total'), h('th', null, 'Amount due'), h('th', null, 'Due'))),
      invBody) : h('p', { class: 'muted' }, 'No invoice.'), more);
}
async function pageInvoice(id) {
  const [v, events] = await Promise.all([api('GET', '/invoicing/invoices/' + enc(id)), api('GET', '/invoicing/invoices/' + enc(id) + '/events')]);
  const cur = v.currency;
  mount(h('p', null, h('a', { href: '/invoices' }, '← Invoices')),
    h('div', { class: 'card', 'data-test': 'invoice', 'data-id': v.id },
      h('h1', null, v.number || 'Draft invoice'),
      h('div', { class: 'row' }, pill(v.status), v.collection ? pill(v.collection) : null, h('span', { 'data-test': 'invoice-customer' }, v.customer_name || ''),
        v.customer_email ? h('span', { class: 'muted' }, v.customer_email) : null,
        h('a', { href: '/console/proxy/v1/invoicing/invoices/' + enc(v.id) + '/pdf', target: '_blank', rel: 'noopener', 'data-test': 'invoice-pdf' }, 'PDF')),
      v.memo ? h('p', null, v.memo) : null,
      h('dl', { class: 'kv' }, h('dt', null, 'due'), h('dd', null, v.due_date || '—'), h('dt', null, 'finalized'), h('dd', null, when(v.finalized_at) || '—'),
        h('dt', null, 'reminders sent'), h('dd', null, v.reminders_sent || 0))),
    h('h2', null, 'Lines'),
    h('table', { 'data-test': 'invoice-lines' },
      h('thead', null, h('tr', null, h('th', null, 'Description'), h('th', null, 'Quantity'), h('th', null, 'Unit'), h('th', null, 'Tax %'), h('th', null, 'Amount'))),
      h('tbody', null, (v.lines || []).map((l) => h('tr', null, h('td', null, l.description), h('td', null, l.quantity), h('td', null, money(l.unit_amount_cents)),
        h('td', null, l.tax_rate_percent), h('td', null, money(l.amount_cents)))))),
    h('dl', { class: 'kv totals', 'data-test': 'invoice-totals' },
      h('dt', null, 'subtotal'), h('dd', null, amount(cur, v.subtotal_cents)), h('dt', null, 'tax'), h('dd', null, amount(cur, v.tax_cents)),
      h('dt', null, 'total'), h('dd', null, amount(cur, v.total_cents)), h('dt', null, 'paid'), h('dd', null, amount(cur, v.amount_paid_cents)),
      h('dt', null, 'amount due'), h('dd', { 'data-test': 'invoice-due' }, amount(cur, v.amount_due_cents))),
    h('h2', null, 'Events'),
    h('ol', { class: 'timeline', 'data-test': 'invoice-events' }, events.map((e) => h('li', { class: 'completed' }, h('strong', null, e.type), ' ', h('span', { class: 'muted' }, when(e.at)), e.note ? h('div', null, e.note) : null))));
}

async function pageBoards(id) {
  need('boards.read');
  if (id) return pageBoard(id);
  const boardBody = h('tbody');
  const { first: boards, more } = await pagedRows('/boards', boardBody, (b) => h('tr', { 'data-id': b.id }, h('td', null, h('a', { href: '/boards/' + b.id }, b.name)), h('td', null, b.key || ''),
    h('td', null, b.template || ''), h('td', null, b.description || '')));
  mount(h('h1', null, 'Boards'), boards.length ? h('table', { 'data-test': 'boards' },
    h('thead', null, h('tr', null, h('th', null, 'Name'), h('th', null, 'Key'), h('th', null, 'Template'), h('th', null, 'Description'))),
    boardBody) : h('p', { class: 'muted' }, 'No board yet.'), more);
}
async function pageBoard(id) {
  const b = await api('GET', '/boards/' + enc(id));
  const card = (it) => h('li', { class: 'kcard', 'data-test': 'item', 'data-id': it.id },
    h('div', { class: 'm' }, h('span', null, it.key || '')), h('div', { class: 't' }, it.title),
    it.completed_at ? h('div', { class: 'muted' }, 'done ' + when(it.completed_at)) : null);
  // Each column pages on its own: its first page, then "Load more".
  const cols = await Promise.all((b.statuses || []).map(async (st) => {
    const ul = h('ul', { class: 'kcards' });
    const { first, more } = await pagedRows('/boards/' + enc(id) + '/items?status_id=' + enc(st.id), ul, card);
    return h('section', { class: 'kcol', 'data-test': 'status', 'data-id': st.id },
      h('h3', null, st.name, ' ', pill(String(st.item_count === undefined ? first.length : st.item_count), 'count'), ' ', h('span', { class: 'muted' }, st.category)),
      ul, more);
  }));
  mount(h('p', null, h('a', { href: '/boards' }, '← Boards')),
    h('h1', null, b.name), b.description ? h('p', { class: 'muted' }, b.description) : null,
    h('div', { class: 'kanban', 'data-test': 'board' }, cols));
}

// ---------- keys ----------
function help() {
  const d = $('#dialog');
  const row = (k, t) => h('tr', null, h('td', null, h('kbd', null, k)), h('td', null, t));
  d.replaceChildren(h('h2', null, 'Keyboard'), h('table', { 'data-test': 'help' }, h('tbody', null,
    row('j', 'next item'), row('k', 'previous item'), row('a', 'approve'), row('r', 'reject (asks for a reason)'), row('c', 'complete the task'),
    row('m', 'claim the task (assign it to me)'), row('u', 'unclaim the task'), row('s', 'reassign the task (asks for the person)'),
    row('Enter', 'go to the first field'), row('g i / g r / g p / g d / g c', 'inbox, runs, processes, documents, cockpit'), row('?', 'this list'), row('Esc', 'close'))),
  h('div', { class: 'actions' }, h('button', { onclick: () => d.close() }, 'Close')));
  d.showModal();
}
let gPending = false;
document.addEventListener('keydown', (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey || $('#dialog').open) return;
  const t = ev.target;
  if (t && t.matches && t.matches('input,textarea,select,[contenteditable]')) { if (ev.key === 'Escape') t.blur(); return; }
  if (!S.me) return;
  if (gPending) {
    gPending = false;
    const to = { i: '/inbox', r: '/runs', p: '/processes', d: '/documents', c: '/cockpit' }[ev.key];
    if (to) { ev.preventDefault(); go(to); }
    return;
  }
  if (ev.key === '?') { ev.preventDefault(); help(); return; }
  if (ev.key === 'g') { gPending = true; return; }
  if (location.pathname.startsWith('/inbox') && S.keys && S.keys(ev)) ev.preventDefault();
  else if (location.pathname.startsWith('/documents/') && (ev.key === 'a' || ev.key === 'r')) {
    const b = document.querySelector('[data-key="' + ev.key + '"]');
    if (b && !b.disabled) { ev.preventDefault(); b.click(); }
  }
});

render();
