// The dashboard: hash routes over the coordinator's JSON endpoints (the API's messages in
// proto3 JSON). Everything a job or a person wrote is set as text, never as markup.
const main = document.getElementById('main');
let csrf = '';

async function api(path, options = {}) {
  const res = await fetch(path, {credentials: 'same-origin', ...options});
  const token = res.headers.get('X-CSRF-Token');
  if (token) csrf = token;
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw Object.assign(new Error(body.message || res.statusText), {status: res.status});
  return body;
}

function el(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function table(columns, rows) {
  const t = el('table');
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

async function overview() {
  const [nodes, list] = await Promise.all([api('/api/v1/nodes'), api('/api/v1/jobs')]);
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
  const down = (nodes.nodes || []).filter(n => state(n.state) !== 'ready' || n.drain);
  frag.appendChild(el('h2', 'Nodes not ready or drained'));
  frag.appendChild(table(['Node', 'State', 'Drained by', 'Reason'],
                         down.map(n => [n.name, state(n.state), n.drain ? n.drain.by : '',
                                        n.drain ? n.drain.reason : ''])));
  main.replaceChildren(frag);
}

async function queue() {
  const list = await api('/api/v1/jobs');
  let place = 0;  // among the waiting jobs, in the order they will start
  const rows = (list.jobs || []).map(j => {
    const waits = ['pending', 'cooldown'].includes(state(j.state));
    if (waits) place++;
    return [jobLink(j.id), j.spec.name, j.user, j.spec.tenant, j.spec.priorityClass,
            state(j.state), waits ? place : '', waits ? ago(j.submittedMs) : '',
            Object.assign(el('span', j.message), {className: 'reason'})];
  });
  main.replaceChildren(el('h2', 'Queue (in the order jobs will start)'),
                       table(['ID', 'Name', 'User', 'Tenant', 'Class', 'State', 'Place',
                              'Waiting', 'Reason'], rows));
}

async function job(id) {
  const j = await api(`/api/v1/jobs/${encodeURIComponent(id)}`);
  const frag = document.createDocumentFragment();
  frag.appendChild(el('h2', `Job ${j.id} — ${j.spec.name}`));
  frag.appendChild(table(['State', 'User', 'Tenant', 'Class', 'Message'],
                         [[state(j.state), j.user, j.spec.tenant, j.spec.priorityClass, j.message]]));
  frag.appendChild(el('h2', 'Attempts'));
  frag.appendChild(table(['#', 'Nodes', 'Started', 'Ended', 'End', 'Evicted for', 'Lost GPU-s',
                          'Checkpoint step'],
      (j.attempts || []).map(a => [a.number, (a.placement || []).map(p => p.node).join(' '),
                                   ago(a.startedMs), ago(a.endedMs), a.endReason || '',
                                   a.evictedFor ? jobLink(a.evictedFor) : '',
                                   a.lostGpuSeconds ? a.lostGpuSeconds.toFixed(0) : '',
                                   a.checkpointStep ?? ''])));
  frag.appendChild(el('h2', 'Events'));
  frag.appendChild(table(['When', 'Change', 'By', 'Reason'],
      (j.events || []).map(e => [ago(e.timeMs), `${state(e.from)} → ${state(e.to)}`, e.actor,
                                 e.reason])));
  if (!['succeeded', 'failed', 'cancelled'].includes(state(j.state))) {
    const cancel = el('button', 'Cancel this job', {type: 'button'});
    cancel.addEventListener('click', async () => {
      try {
        await api(`/api/v1/jobs/${j.id}/cancel`, {method: 'POST', headers: {'X-CSRF-Token': csrf}});
        route();
      } catch (e) { alert(e.message); }
    });
    frag.appendChild(cancel);
  }
  main.replaceChildren(frag);
}

async function nodes() {
  const list = await api('/api/v1/nodes');
  main.replaceChildren(el('h2', 'Nodes'), table(
      ['Node', 'Pool', 'State', 'GPUs', 'Allocated', 'Jobs', 'Drained'],
      (list.nodes || []).map(n => [n.name, n.pool || 'default', state(n.state),
                                   ((n.inventory && n.inventory.gpus) || []).length,
                                   n.allocatedGpus || 0, (n.runningJobs || []).join(' '),
                                   n.drain ? `${n.drain.by}: ${n.drain.reason}` : ''])));
}

async function tenants() {
  const s = await api('/api/v1/shares');
  const pct = x => `${Math.round((x || 0) * 100)}%`;
  main.replaceChildren(el('h2', 'Fair share'), table(
      ['Tenant', 'Weight share', 'Usage share', 'GPUs running', 'GPUs pending', 'Quota GPUs'],
      (s.tenants || []).map(t => [t.tenant, pct(t.weightShare), pct(t.usageShare),
                                  t.runningGpus || 0, t.pendingGpus || 0,
                                  t.hasQuota ? t.quotaGpus || 0 : '-'])));
}

async function route() {
  const parts = window.location.hash.replace(/^#\/?/, '').split('/');
  try {
    if (parts[0] === 'queue') await queue();
    else if (parts[0] === 'job' && parts[1]) await job(parts[1]);
    else if (parts[0] === 'nodes') await nodes();
    else if (parts[0] === 'tenants') await tenants();
    else await overview();
  } catch (e) {
    main.replaceChildren(el('p', e.status === 401 ? `${e.message}` : `Error: ${e.message}`,
                            {class: 'bad'}));
  }
}

async function start() {
  try {
    const me = await api('/api/v1/whoami');
    document.getElementById('who').textContent = `${me.user}${me.admin ? ' (admin)' : ''}`;
    const out = document.getElementById('logout');
    out.hidden = false;
    out.addEventListener('click', async () => {
      await api('/api/logout', {method: 'POST', headers: {'X-CSRF-Token': csrf}}).catch(() => {});
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
