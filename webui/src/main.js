// hearth's web chat: conversations kept in this browser, replies streamed from the server's
// OpenAI-compatible endpoint, reasoning apart from the answer, per-reply cache and speed figures,
// and a sampler panel saved with each conversation.
import * as api from './api.js';
import { renderMarkdown } from './render.js';
import { buildForm, defaultsFromProps, requestFields, showDefaults } from './samplers.js';
import * as store from './store.js';

const $ = (id) => document.getElementById(id);
const state = { conv: null, props: null, propsStatus: null, defaults: {}, abort: null, busy: false };

// ---- theme ----
function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  localStorage.setItem('hearth.theme', theme);
}
function initTheme() {
  const saved = localStorage.getItem('hearth.theme');
  const dark = window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches;
  applyTheme(saved || (dark ? 'dark' : 'light'));
  $('toggle-theme').addEventListener('click', () =>
    applyTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark'));
}

// ---- API key ----
function askKey(wrong) {
  return new Promise((resolve) => {
    const dialog = $('key-dialog');
    const input = $('key-input');
    dialog.querySelector('p').textContent = wrong ? 'That key was refused. API key:'
                                                  : 'This server needs an API key.';
    input.value = '';
    dialog.addEventListener('close', () => resolve(input.value.trim() || null), { once: true });
    dialog.showModal();
    input.focus();
  });
}

// ---- server facts ----
function showProps(p) {
  const dl = $('props');
  dl.replaceChildren();
  const add = (k, v, pre = false) => {
    if (v === undefined || v === null || v === '') return;
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    if (pre) {
      const el = document.createElement('pre');
      el.textContent = v;
      dd.append(el);
    } else {
      dd.textContent = String(v);
    }
    dl.append(dt, dd);
  };
  add('model', p.model_alias || p.model_path);
  add('context', p.n_ctx);
  add('build', p.build_info);
  add('template', p.chat_template, true);
}

// ---- conversation list ----
function renderList() {
  const ul = $('conv-list');
  ul.replaceChildren();
  for (const c of store.all()) {
    const li = document.createElement('li');
    li.dataset.id = c.id;
    if (state.conv && c.id === state.conv.id) li.className = 'current';
    const title = document.createElement('span');
    title.className = 'title';
    title.textContent = c.title;
    const rename = button('Rename', 'rename', (e) => {
      e.stopPropagation();
      const t = window.prompt('Rename conversation', c.title);
      if (t && t.trim()) {
        c.title = t.trim();
        store.touch(c);
        renderList();
        if (state.conv && state.conv.id === c.id) $('conv-title').textContent = c.title;
      }
    });
    const del = button('Delete', 'delete', (e) => {
      e.stopPropagation();
      if (!window.confirm(`Delete "${c.title}"?`)) return;
      store.remove(c.id);
      if (state.conv && state.conv.id === c.id) open(store.all()[0] || store.create());
      else renderList();
    });
    li.append(title, rename, del);
    li.addEventListener('click', () => {
      if (!state.busy) open(c);
      document.getElementById('app').classList.remove('show-sidebar');
    });
    ul.append(li);
  }
}

function open(c) {
  state.conv = c;
  store.setCurrentId(c.id);
  $('conv-title').textContent = c.title;
  buildForm($('sampler-form'), c.samplers, state.defaults, () => store.touch(c));
  renderList();
  renderMessages();
}

// ---- messages ----
// The figures line under a reply, as text nodes and <b> elements: the stats may come from an
// imported file, so none of their values is ever parsed as markup.
function statsNodes(s) {
  if (!s) return [];
  const parts = [];
  const bold = (v) => {
    const b = document.createElement('b');
    b.textContent = String(v);
    return b;
  };
  const num = (v, d = 0) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(d) : null);
  if (s.prompt_tokens !== undefined) parts.push(['prompt ', bold(s.prompt_tokens)]);
  if (s.cached_tokens !== undefined) parts.push(['cached ', bold(s.cached_tokens)]);
  if (s.prefilled_tokens !== undefined) parts.push(['prefilled ', bold(s.prefilled_tokens)]);
  if (num(s.ttft_ms) !== null) parts.push(['first token ', bold(num(s.ttft_ms)), ' ms']);
  if (num(s.tokens_per_second, 1) !== null)
    parts.push([bold(num(s.tokens_per_second, 1)), ' tokens/s']);
  if (s.completion_tokens !== undefined) parts.push([`${s.completion_tokens} generated`]);
  if (s.stopped) parts.push(['stopped']);
  return parts.flatMap((p, i) => (i ? [' · ', ...p] : p));
}

function messageView(m, index) {
  const div = document.createElement('div');
  div.className = `msg ${m.role}`;
  div.dataset.index = String(index);
  if (m.role === 'assistant' && m.reasoning) {
    const det = document.createElement('details');
    det.className = 'reasoning';
    const sum = document.createElement('summary');
    sum.textContent = 'Reasoning';
    const body = document.createElement('div');
    body.textContent = m.reasoning;
    det.append(sum, body);
    div.append(det);
  }
  const bubble = document.createElement('div');
  bubble.className = 'bubble';
  if (m.role === 'assistant') renderMarkdown(bubble, m.content, true);
  else bubble.textContent = m.content;
  div.append(bubble);
  if (m.stats) {
    const st = document.createElement('div');
    st.className = 'stats';
    st.append(...statsNodes(m.stats));
    div.append(st);
  }
  const actions = document.createElement('div');
  actions.className = 'actions';
  if (m.role === 'user') actions.append(button('Edit', 'edit', () => startEdit(div, index)));
  if (m.role === 'assistant' && index === state.conv.messages.length - 1)
    actions.append(button('Regenerate', 'regenerate', regenerate));
  if (m.role === 'assistant') actions.append(button('Copy', 'copy-reply', () =>
    navigator.clipboard.writeText(m.content).catch(() => {})));
  div.append(actions);
  return div;
}

function button(text, cls, fn) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = cls;
  b.textContent = text;
  b.addEventListener('click', fn);
  return b;  // (message actions are disabled while a reply streams by setBusy)
}

function renderMessages() {
  const box = $('messages');
  box.replaceChildren(...state.conv.messages.map(messageView));
  box.scrollTop = box.scrollHeight;
}

function startEdit(div, index) {
  if (state.busy) return;
  const m = state.conv.messages[index];
  const area = document.createElement('textarea');
  area.className = 'edit';
  area.value = m.content;
  const save = button('Send', 'edit-send', () => {
    const text = area.value.trim();
    if (!text) return;
    state.conv.messages.splice(index);  // drop this message and everything after it
    send(text);
  });
  const cancel = button('Cancel', 'edit-cancel', renderMessages);
  div.replaceChildren(area, save, cancel);
  area.focus();
}

function regenerate() {
  const msgs = state.conv.messages;
  if (state.busy || !msgs.length || msgs[msgs.length - 1].role !== 'assistant') return;
  msgs.pop();
  generate();
}

// ---- sending ----
function setBusy(busy) {
  state.busy = busy;
  $('send').disabled = busy;
  $('stop').hidden = !busy;
  for (const b of document.querySelectorAll('.msg .actions button')) b.disabled = busy;
}

function send(text) {
  const c = state.conv;
  c.messages.push({ role: 'user', content: text });
  if (c.title === 'New chat') c.title = text.slice(0, 48).replace(/\s+/g, ' ');
  store.touch(c);
  $('conv-title').textContent = c.title;
  renderList();
  generate();
}

function requestMessages(c) {
  const msgs = c.messages.map((m) => ({ role: m.role, content: m.content }));
  if (c.samplers.system) msgs.unshift({ role: 'system', content: c.samplers.system });
  return msgs;
}

async function generate() {
  const c = state.conv;
  const reply = { role: 'assistant', content: '', reasoning: '' };
  const body = { messages: requestMessages(c), ...requestFields(c.samplers) };
  c.messages.push(reply);
  renderMessages();
  const view = $('messages').lastElementChild;
  const bubble = view.querySelector('.bubble');
  bubble.classList.add('cursor');
  let reasoningBody = null;
  let pending = false;
  const draw = () => {
    pending = false;
    if (reply.reasoning && !reasoningBody) {
      const det = document.createElement('details');
      det.className = 'reasoning';
      det.open = true;
      const sum = document.createElement('summary');
      sum.textContent = 'Reasoning';
      reasoningBody = document.createElement('div');
      det.append(sum, reasoningBody);
      view.prepend(det);
    }
    if (reasoningBody) reasoningBody.textContent = reply.reasoning;
    renderMarkdown(bubble, reply.content, false);
    const box = $('messages');
    box.scrollTop = box.scrollHeight;
  };
  setBusy(true);
  $('status').textContent = '';
  state.abort = new AbortController();
  const t0 = performance.now();
  let tFirst = null;
  let stopped = false;
  let result = null;
  try {
    result = await api.streamChat(body, state.abort.signal, (d) => {
      if (tFirst === null) tFirst = performance.now();
      reply.content += d.content;
      reply.reasoning += d.reasoning;
      if (!pending) {
        pending = true;
        requestAnimationFrame(draw);
      }
    });
  } catch (e) {
    if (e.name === 'AbortError') {
      stopped = true;
    } else {
      c.messages.pop();
      $('status').textContent = `Error: ${e.message}`;
    }
  }
  state.abort = null;
  if (!reply.reasoning) delete reply.reasoning;
  if (result || stopped) reply.stats = replyStats(result, t0, tFirst, stopped);
  store.touch(c);
  setBusy(false);
  if (state.conv === c) renderMessages();
}

function replyStats(result, t0, tFirst, stopped) {
  const u = (result && result.usage) || {};
  const t = (result && result.timings) || {};
  const cached = (u.prompt_tokens_details && u.prompt_tokens_details.cached_tokens) ?? t.cache_n;
  const s = { stopped };
  if (u.prompt_tokens !== undefined) s.prompt_tokens = u.prompt_tokens;
  if (cached !== undefined) s.cached_tokens = cached;
  if (s.prompt_tokens !== undefined && cached !== undefined)
    s.prefilled_tokens = s.prompt_tokens - cached;
  if (u.completion_tokens !== undefined) s.completion_tokens = u.completion_tokens;
  if (tFirst !== null) s.ttft_ms = tFirst - t0;
  if (typeof t.predicted_per_second === 'number') s.tokens_per_second = t.predicted_per_second;
  return s;
}

// ---- wiring ----
function wire() {
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('input').value.trim();
    if (!text || state.busy) return;
    $('input').value = '';
    send(text);
  });
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => state.abort && state.abort.abort());
  $('new-chat').addEventListener('click', () => {
    if (!state.busy) open(store.create());
  });
  $('toggle-settings').addEventListener('click', () => {
    const panel = $('settings');
    panel.hidden = !panel.hidden;
    $('toggle-settings').setAttribute('aria-expanded', String(!panel.hidden));
  });
  $('toggle-sidebar').addEventListener('click', () =>
    document.getElementById('app').classList.toggle('show-sidebar'));
  $('reset-samplers').addEventListener('click', () => {
    state.conv.samplers = {};
    store.touch(state.conv);
    open(state.conv);
  });
  $('export').addEventListener('click', () => {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([store.exportJson()], { type: 'application/json' }));
    a.download = `hearth-conversations-${new Date().toISOString().slice(0, 10)}.json`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  });
  $('import').addEventListener('change', async (e) => {
    const file = e.target.files[0];
    if (!file) return;
    try {
      const n = store.importJson(await file.text());
      $('status').textContent = `Imported ${n} conversation${n === 1 ? '' : 's'}.`;
      renderList();
    } catch (err) {
      $('status').textContent = `Import failed: ${err.message}`;
    }
    e.target.value = '';
  });
}

// Asks /props; once it answers, the server facts and the sampler fields' defaults show.
// While the model loads (or the server is not up yet) the status line says so and a later
// attempt is scheduled, so a page opened during start-up fills in by itself.
async function loadProps(attempt = 0) {
  const status = $('status');
  try {
    state.props = await api.props();
  } catch (e) {
    const retry = e.retryAfter !== undefined;
    status.textContent = `Server: ${e.message}${retry ? ' (asking again shortly)' : ''}`;
    state.propsStatus = status.textContent;
    if (retry) {
      const s = Math.min(10, Math.max(1, e.retryAfter) * (attempt < 5 ? 1 : 2));
      setTimeout(() => loadProps(attempt + 1), s * 1000);
    }
    return;
  }
  if (state.propsStatus && status.textContent === state.propsStatus) status.textContent = '';
  state.propsStatus = null;
  state.defaults = defaultsFromProps(state.props);
  showProps(state.props);
  showDefaults($('sampler-form'), state.defaults);
}

async function main() {
  initTheme();
  api.onKeyNeeded(askKey);
  wire();
  const conv = store.get(store.currentId()) || store.all()[0] || store.create();
  open(conv);
  await loadProps();
  document.body.dataset.ready = '1';
  performance.mark('hearth-ready');
}

main();
