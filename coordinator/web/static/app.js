// The dashboard: hash routes over the coordinator's JSON endpoints (the API's messages in
// proto3 JSON), kept live by server-sent events. Everything a job or a person wrote is set
// as text, never as markup.
const main = document.getElementById('main');
let csrf = '';
let me = {user: '', tenants: [], admin: false};

async function api(path, options = {}) {
  const res = await fetch(path, {credentials: 'same-origin', ...options});
  const token = res.headers.get('X-CSRF-Token');
  if (token) csrf = token;
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw Object.assign(new Error(body.message || res.statusText), {status: res.status});
  return body;
}
const post = (path, body) => api(path, {
  method: 'POST', headers: {'X-CSRF-Token': csrf, 'Content-Type': 'application/json'},
  body: JSON.stringify(body || {})});

function el(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function table(columns, rows, attrs = {}) {
  const t = el('table', null, attrs);
  const head = t.createTHead().insertRow();
  for (const c of columns) head.appendChild(el('th', c));
  const body = t.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const cell of row) {
      const td = tr.insertCell();
      if (cell instanceof Node) td.appendChild(cell); else td.textContent = cell ?? '';
    }
  }
  return t;
}

function button(text, action) {
  const b = el('button', text, {type: 'button'});
  b.addEventListener('click', async () => {
    b.disabled = true;
    try { await action(); } catch (e) { showError(e); } finally { b.disabled = false; }
  });
  return b;
}
function showError(e) {
  const p = document.getElementById('notice');
  p.textContent = e.message;
  p.hidden = false;
}

const state = s => (s || '').replace(/^(JOB|NODE)_STATE_/, '').toLowerCase();
function ago(ms) {
  const s = Math.max(0, (Date.now() - Number(ms || 0)) / 1000);
  if (!ms || Number(ms) === 0) return '-';
  if (s < 60) return `${Math.floor(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor(s % 3600 / 60)}m`;
  return `${Math.floor(s / 86400)}d`;
}
const jobLink = id => el('a', id, {href: `#/job/${id}`});
// Who may act on a job (cancel, signal): its owner, members of its tenant, admins — the
// server decides; this only leaves out buttons that would be refused.
const mayAct = j => me.admin || j.user === me.user || (me.tenants || []).includes(j.spec.tenant);
const ended = j => ['succeeded', 'failed', 'cancelled'].includes(state(j.state));
// Class names take one of eight colours, the same for a class everywhere.
function colourOf(name) {
  let h = 0;
  for (const c of String(name)) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `c${h % 8}`;
}

// Each route() takes the next number; a page drawn for an older one (its data came late,
// or a refresh was due when the person moved on) is dropped, not shown over the new one.
let routeSeq = 0;
function show(seq, ...nodes) {
  if (seq === routeSeq) main.replaceChildren(...nodes);
}

// Live views: the page's event streams (closed when another page opens) and a refresh
// that runs at most every half second however many events arrive.
let live = [];
let timers = [];
function closeLive() {
  for (const s of live) s.close();
  for (const t of timers) clearInterval(t);
  live = [];
  timers = [];
}
function follow(url, handlers) {
  const s = new EventSource(url);
  for (const [type, fn] of Object.entries(handlers)) s.addEventListener(type, fn);
  live.push(s);
  return s;
}
function debounce(fn, ms = 500) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; fn().catch(showError); }, ms);
  };
}

async function overview() {
  const seq = routeSeq;
  const [nodes, list, evictions] = await Promise.all([
    api('/api/v1/nodes'), api('/api/v1/jobs'), api('/api/v1/events?kind=eviction&tail=10')]);
  const frag = document.createDocumentFragment();
  frag.appendChild(el('h2', 'Free GPUs'));
  const free = new Map();
  for (const n of nodes.nodes || []) {
    const gpus = (n.inventory && n.inventory.gpus) || [];
    const model = gpus.length ? gpus[0].model : 'no GPU';
    const key = `${n.pool || 'default'} · ${model}`;
    const ok = state(n.state) === 'ready' && !n.drain;
    const f = free.get(key) || {free: 0, total: 0};
    f.total += gpus.length;
    if (ok) f.free += Math.max(0, gpus.length - (n.allocatedGpus || 0));
    free.set(key, f);
  }
  const cards = el('div', null, {class: 'cards'});
  for (const [key, f] of [...free].sort()) {
    const c = el('div', null, {class: 'card'});
    c.appendChild(el('div', f.free, {class: 'free'}));
    c.appendChild(el('div', `free of ${f.total} — ${key}`, {class: 'muted'}));
    cards.appendChild(c);
  }
  frag.appendChild(cards);
  const jobs = list.jobs || [];
  const byClass = new Map();
  for (const j of jobs) {
    const c = byClass.get(j.spec.priorityClass) || {running: 0, waiting: 0};
    if (['running', 'scheduled', 'preempting'].includes(state(j.state))) c.running++; else c.waiting++;
    byClass.set(j.spec.priorityClass, c);
  }
  frag.appendChild(el('h2', 'Work per class'));
  frag.appendChild(table(['Class', 'Running', 'Waiting'],
                         [...byClass].sort().map(([c, v]) => [c, v.running, v.waiting])));
  const reasons = new Map();
  for (const j of jobs) {
    if (state(j.state) !== 'pending' || !j.message) continue;
    reasons.set(j.message, (reasons.get(j.message) || 0) + 1);
  }
  frag.appendChild(el('h2', 'Top pending reasons'));
  frag.appendChild(table(['Jobs', 'Reason'],
                         [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([r, n]) => [n, r])));
  frag.appendChild(el('h2', 'Recent evictions'));
  frag.appendChild(table(['When', 'Job', 'Tenant', 'Class', 'Lost GPU-s', 'By', 'Reason'],
      (evictions.events || []).reverse().map(e => [
        ago(e.timeMs), jobLink(e.jobId), e.tenant, e.priorityClass,
        e.lostGpuSeconds !== undefined ? Number(e.lostGpuSeconds).toFixed(0) : '', e.actor,
        e.reason]), {id: 'evictions'}));
  const down = (nodes.nodes || []).filter(n => state(n.state) !== 'ready' || n.drain);
  frag.appendChild(el('h2', 'Nodes not ready or drained'));
  frag.appendChild(table(['Node', 'State', 'Drained by', 'Reason'],
                         down.map(n => [n.name, state(n.state), n.drain ? n.drain.by : '',
                                        n.drain ? n.drain.reason : ''])));
  show(seq, frag);
}

async function queue() {
  const seq = routeSeq;
  const list = await api('/api/v1/jobs');
  let place = 0;  // among the waiting jobs, in the order they will start
  const rows = (list.jobs || []).map(j => {
    const waits = ['pending', 'cooldown'].includes(state(j.state));
    if (waits) place++;
    return [jobLink(j.id), j.spec.name, j.user, j.spec.tenant, j.spec.priorityClass,
            state(j.state), waits ? place : '', waits ? ago(j.submittedMs) : '',
            Object.assign(el('span', j.message), {className: 'reason'})];
  });
  const more = list.nextPageToken ? el('p', `The first ${rows.length} jobs; baton queue lists the rest.`,
                                        {class: 'muted'}) : '';
  show(seq, el('h2', 'Queue (in the order jobs will start)'),
       table(['ID', 'Name', 'User', 'Tenant', 'Class', 'State', 'Place', 'Waiting', 'Reason'], rows),
       more);
}

// The job page: its record (rendered again on each of its events) above its log's tail.
async function jobInfo(id, into) {
  const j = await api(`/api/v1/jobs/${encodeURIComponent(id)}`);
  const frag = document.createDocumentFragment();
  frag.appendChild(el('h2', `Job ${j.id} — ${j.spec.name}`));
  frag.appendChild(table(['State', 'User', 'Tenant', 'Class', 'Message'],
                         [[state(j.state), j.user, j.spec.tenant, j.spec.priorityClass, j.message]]));
  const pairs = m => Object.entries(m || {}).map(([k, v]) => `${k}=${v}`).join(' ');
  frag.appendChild(table(['Command', 'Env', 'Node selector'],
                         [[(j.spec.command || []).join(' '), pairs(j.spec.env),
                           pairs(j.spec.nodeSelector)]], {id: 'spec'}));
  if (mayAct(j) && !ended(j)) {
    const actions = el('div', null, {class: 'actions'});
    actions.appendChild(button('Cancel this job', async () => {
      await post(`/api/v1/jobs/${j.id}/cancel`);
      await jobInfo(id, into);
    }));
    if (['running', 'preempting'].includes(state(j.state))) {
      actions.appendChild(button('Send SIGUSR1 (checkpoint now)', async () => {
        await post(`/api/v1/jobs/${j.id}/signal`, {signal: 'USR1'});
        showError(new Error(`SIGUSR1 sent to job ${j.id}`));
      }));
    }
    frag.appendChild(actions);
  }
  frag.appendChild(el('h2', 'Attempts'));
  frag.appendChild(table(['#', 'Nodes', 'Started', 'Ended', 'End', 'Evicted for', 'Lost GPU-s',
                          'Checkpoint step'],
      (j.attempts || []).map(a => [a.number, (a.placement || []).map(p => p.node).join(' '),
                                   ago(a.startedMs), ago(a.endedMs), a.endReason || '',
                                   a.evictedFor ? jobLink(a.evictedFor) : '',
                                   a.lostGpuSeconds ? a.lostGpuSeconds.toFixed(0) : '',
                                   a.checkpointStep ?? '']), {id: 'attempts'}));
  frag.appendChild(el('h2', 'Events'));
  frag.appendChild(table(['When', 'Change', 'By', 'Reason'],
      (j.events || []).map(e => [ago(e.timeMs), `${state(e.from)} → ${state(e.to)}`, e.actor,
                                 e.reason]), {id: 'events'}));
  into.replaceChildren(frag);
  return j;
}

// A job's output, following while it runs: chunks of its LogChunk messages, decoded and
// appended as text; the newest 256 KiB kept.
function jobLog(id, attempt, pre, note) {
  const decoder = new TextDecoder();
  pre.textContent = '';
  const url = `/api/v1/jobs/${encodeURIComponent(id)}/log/stream?attempt=${attempt}`;
  const s = follow(url, {
    chunk: ev => {
      const c = JSON.parse(ev.data);
      const bytes = Uint8Array.from(atob(c.data || ''), ch => ch.charCodeAt(0));
      let text = pre.textContent + decoder.decode(bytes, {stream: true});
      if (text.length > 262144) text = text.slice(text.length - 262144);
      pre.textContent = text;
      pre.scrollTop = pre.scrollHeight;
    },
    end: ev => {
      s.close();
      const e = JSON.parse(ev.data);
      note.textContent = e.ok ? `attempt ${attempt}: end of its output` : e.message;
    },
  });
  s.onerror = async () => {
    if (s.readyState !== EventSource.CLOSED) return;  // reconnecting from Last-Event-ID
    // Refused (not allowed, not started): the same request says why, in JSON.
    const abort = new AbortController();
    const res = await fetch(url, {signal: abort.signal}).catch(() => null);
    if (res && !res.ok) note.textContent = (await res.json().catch(() => ({}))).message || '';
    abort.abort();
  };
  note.textContent = `attempt ${attempt}`;
}

async function job(id) {
  const seq = routeSeq;
  const info = el('div');
  const logHead = el('h2', 'Output');
  const note = el('p', '', {class: 'muted', id: 'log-note'});
  const pre = el('pre', '', {id: 'log', tabindex: '0'});
  show(seq, info, logHead, note, pre);
  if (seq !== routeSeq) return;
  let shown = 0;  // the attempt whose output is shown
  const refresh = async () => {
    const j = await jobInfo(id, info);
    if (seq !== routeSeq) return;
    const current = (j.attempts || []).length;
    if (current > shown) {
      shown = current;
      jobLog(id, current, pre, note);
    } else if (current === 0) {
      note.textContent = 'no output yet: the job has not started';
    }
  };
  await refresh();
  if (seq !== routeSeq) return;
  follow(`/api/v1/events/stream?job=${encodeURIComponent(id)}`,
         {event: debounce(() => seq === routeSeq ? refresh() : Promise.resolve(), 100)});
}

// Every job that holds GPUs, page by page.
async function holders() {
  const out = [];
  let token = '';
  do {
    const page = await api('/api/v1/jobs?state=scheduled&state=running&state=preempting&limit=5000' +
                           (token ? `&page_token=${encodeURIComponent(token)}` : ''));
    out.push(...(page.jobs || []));
    token = page.nextPageToken || '';
  } while (token);
  return out;
}

// GPUs as a grid, each coloured by the class of the job that holds it.
async function nodes() {
  const seq = routeSeq;
  const [list, jobs] = await Promise.all([api('/api/v1/nodes'), holders()]);
  const holder = new Map();  // GPU UUID -> job
  const byId = new Map(jobs.map(j => [String(j.id), j]));
  for (const j of jobs) {
    const a = (j.attempts || [])[(j.attempts || []).length - 1];
    for (const p of (a && a.placement) || []) for (const g of p.gpuIds || []) holder.set(g, j);
  }
  const frag = document.createDocumentFragment();
  frag.appendChild(el('h2', 'GPUs'));
  const grid = el('div', null, {class: 'grid', id: 'gpu-grid'});
  for (const n of list.nodes || []) {
    const row = el('div', null, {class: 'node-row'});
    const down = state(n.state) !== 'ready' || n.drain;
    row.appendChild(el('span', `${n.name}${n.drain ? ' (drained)' : down ? ` (${state(n.state)})` : ''}`,
                       {class: down ? 'node-name bad' : 'node-name'}));
    const use = new Map((n.gpuUtilization || []).map(u => [u.uuid, u]));
    const cell = (g) => {
      const j = holder.get(g.uuid);
      const u = use.get(g.uuid);
      const pct = u && u.percent !== undefined ? Number(u.percent) : null;
      // Held but (nearly) idle: the GPUs a platform team asks about first.
      const idle = j && pct !== null && pct < 10;
      const label = `${j ? j.id : '·'} ${g.migProfile ? g.migProfile : pct === null ? '?' : pct + '%'}`;
      return el('span', label, {
        class: `gpu ${j ? colourOf(j.spec.priorityClass) : 'idle'}${idle ? ' held-idle' : ''}`,
        title: `${g.uuid}${g.model ? ' ' + g.model : ''}` +
               `${g.migProfile ? ` — MIG slice ${g.migProfile} of ${g.parentUuid}` : ''}` +
               `${j ? ` — job ${j.id} (${j.spec.priorityClass})` : ' — free'}` +
               ` — utilisation ${pct === null ? 'unknown' : pct + '%'}` +
               `${u && u.memoryUsedBytes ? `, ${(Number(u.memoryUsedBytes) / 2 ** 30).toFixed(1)} GiB in use` : ''}`});
    };
    // An MPS pool: the jobs holding shares of it, the compute they hold, coloured by the
    // first one's class; its memory and the user its server runs as in the title.
    const pools = new Map((n.mpsPools || []).map(p => [p.uuid, p]));
    const poolCell = (g) => {
      const p = pools.get(g.uuid) || {};
      const ids = (p.jobs || []).map(String);
      const used = Number(p.allocatedPercent || 0);
      const first = byId.get(ids[0]);
      const gib = (b) => (Number(b || 0) / 2 ** 30).toFixed(1);
      return el('span', `${ids.length ? ids.join(',') : '·'} MPS ${used}%`, {
        class: `gpu mps ${first ? colourOf(first.spec.priorityClass) : 'idle'}`,
        title: `${g.uuid}${g.model ? ' ' + g.model : ''} — MPS pool: ${used}% of its compute and ` +
               `${gib(p.allocatedMemoryBytes)} of ${gib(g.memoryBytes)} GiB held by ` +
               `${ids.length} share(s)${p.user ? `, its server running as ${p.user}` : ''}` +
               `${ids.length ? ` — jobs ${ids.join(', ')}` : ' — free'}`});
    };
    // MIG slices drawn inside their physical GPU, in the inventory's order.
    const mig = new Map();  // parent UUID -> its box
    for (const g of (n.inventory && n.inventory.gpus) || []) {
      if (g.mpsPool) {
        row.appendChild(poolCell(g));
        continue;
      }
      if (!g.parentUuid) {
        row.appendChild(cell(g));
        continue;
      }
      let box = mig.get(g.parentUuid);
      if (!box) {
        box = el('span', null, {class: 'mig', title: `${g.parentUuid} in MIG mode`});
        mig.set(g.parentUuid, box);
        row.appendChild(box);
      }
      box.appendChild(cell(g));
    }
    grid.appendChild(row);
  }
  frag.appendChild(grid);
  const classes = [...new Set([...holder.values()].map(j => j.spec.priorityClass))].sort();
  const legend = el('p', null, {class: 'legend muted'});
  for (const c of classes) legend.appendChild(el('span', c, {class: `gpu ${colourOf(c)}`}));
  legend.appendChild(el('span', 'held, under 10% busy', {class: 'gpu idle held-idle'}));
  legend.appendChild(el('span', 'free', {class: 'gpu idle'}));
  legend.appendChild(el('span', 'MIG slices of one GPU', {class: 'mig legend-mig'}));
  legend.appendChild(el('span', 'MPS pool: jobs, % held', {class: 'gpu idle mps'}));
  frag.appendChild(legend);
  frag.appendChild(el('h2', 'Nodes'));
  frag.appendChild(table(
      ['Node', 'Pool', 'State', 'GPUs', 'Allocated', 'Jobs', 'Drained', ''],
      (list.nodes || []).map(n => [n.name, n.pool || 'default', state(n.state), gpuCount(n),
                                   n.allocatedGpus || 0, (n.runningJobs || []).join(' '),
                                   n.drain ? `${n.drain.by}: ${n.drain.reason}` : '',
                                   me.admin ? nodeAction(n) : ''])));
  show(seq, frag);
}

// "2", or "1 (2 MIG slices)" where GPUs are in MIG mode.
function gpuCount(n) {
  const gpus = (n.inventory && n.inventory.gpus) || [];
  const slices = gpus.filter(g => g.parentUuid);
  if (!slices.length) return gpus.length;
  const physical = gpus.length - slices.length + new Set(slices.map(g => g.parentUuid)).size;
  return `${physical} (${slices.length} MIG slices)`;
}

function nodeAction(n) {
  if (n.drain) {
    return button(`Undrain ${n.name}`, async () => {
      await post(`/api/v1/nodes/${encodeURIComponent(n.name)}/undrain`);
      await nodes();
    });
  }
  return button(`Drain ${n.name}`, async () => {
    const reason = window.prompt(`Why drain ${n.name}? (it takes no new work)`);
    if (reason === null) return;
    await post(`/api/v1/nodes/${encodeURIComponent(n.name)}/drain`, {reason});
    await nodes();
  });
}

// GPU-hours per day (the usage rollup) as bars: one SVG per tenant, a bar per day.
function dailyBars(days, key) {
  const ns = 'http://www.w3.org/2000/svg';
  const values = days.map(d => ((d.lines || []).find(l => l.key === key) || {}).gpuHours || 0);
  const top = Math.max(1e-9, ...values);
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', String(values.length * 8));
  svg.setAttribute('height', '32');
  svg.setAttribute('role', 'img');
  values.forEach((v, i) => {
    const h = Math.round(30 * v / top);
    const r = document.createElementNS(ns, 'rect');
    r.setAttribute('x', String(i * 8));
    r.setAttribute('y', String(32 - Math.max(h, 1)));
    r.setAttribute('width', '6');
    r.setAttribute('height', String(Math.max(h, 1)));
    r.setAttribute('class', v > 0 ? 'bar' : 'bar none');
    const t = document.createElementNS(ns, 'title');
    t.textContent = `${new Date(Number(days[i].sinceMs)).toISOString().slice(0, 10)}: ${v.toFixed(1)} GPU-h`;
    r.appendChild(t);
    svg.appendChild(r);
  });
  return svg;
}

// The per-day usage changes by the day, not by the event: asked for once a minute at most,
// however often the page is drawn again.
let dailyUsage = {at: 0, body: null};
async function daily30() {
  if (!dailyUsage.body || Date.now() - dailyUsage.at > 60000) {
    const body = await api('/api/v1/usage/daily?days=30').catch(() => ({days: []}));
    dailyUsage = {at: Date.now(), body};
  }
  return dailyUsage.body;
}

async function tenants() {
  const seq = routeSeq;
  const [s, daily] = await Promise.all([api('/api/v1/shares'), daily30()]);
  const pct = x => `${Math.round((x || 0) * 100)}%`;
  const days = daily.days || [];
  // Members read their own tenants' usage only (as `baton usage`): others' cells stay empty.
  const readable = t => days.length > 0 && (days[0].tenants || []).includes(t);
  const total = key => days.reduce(
      (sum, d) => sum + (((d.lines || []).find(l => l.key === key) || {}).gpuHours || 0), 0);
  show(seq, el('h2', 'Fair share'), table(
      ['Tenant', 'Weight share', 'Usage share', 'GPUs running', 'GPUs pending', 'Quota GPUs',
       'GPU-hours, last 30 days', 'Per day'],
      (s.tenants || []).map(t => [t.tenant, pct(t.weightShare), pct(t.usageShare),
                                  t.runningGpus || 0, t.pendingGpus || 0,
                                  t.hasQuota ? t.quotaGpus || 0 : '-',
                                  readable(t.tenant) ? total(t.tenant).toFixed(1) : '',
                                  readable(t.tenant) ? dailyBars(days, t.tenant) : '']),
      {id: 'tenants'}));
}

async function route() {
  const seq = ++routeSeq;
  closeLive();
  document.getElementById('notice').hidden = true;
  const parts = window.location.hash.replace(/^#\/?/, '').split('/');
  try {
    if (parts[0] === 'job' && parts[1]) {
      await job(parts[1]);
      return;
    }
    const page = parts[0] === 'queue' ? queue : parts[0] === 'nodes' ? nodes
        : parts[0] === 'tenants' ? tenants : overview;
    await page();
    // Every change in the cluster is an event: draw the page again when they come.
    if (seq === routeSeq) {
      const again = debounce(() => seq === routeSeq ? page() : Promise.resolve());
      follow('/api/v1/events/stream', {event: again});
      // GPU utilisation changes without events: the nodes page also looks every 10 s.
      if (page === nodes) timers.push(setInterval(again, 10000));
    }
  } catch (e) {
    show(seq, el('p', e.status === 401 ? `${e.message}` : `Error: ${e.message}`, {class: 'bad'}));
  }
}

async function start() {
  try {
    me = await api('/api/v1/whoami');
    document.getElementById('who').textContent = `${me.user}${me.admin ? ' (admin)' : ''}`;
    const out = document.getElementById('logout');
    out.hidden = false;
    out.addEventListener('click', async () => {
      await post('/api/logout').catch(() => {});
      window.location.reload();
    });
  } catch (e) {
    main.replaceChildren(el('p', e.message, {class: 'bad'}));
    return;
  }
  window.addEventListener('hashchange', route);
  route();
}

start();
