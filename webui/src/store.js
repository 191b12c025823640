// Conversations, kept in the browser (localStorage): a list of {id, title, created, updated,
// messages: [{role, content, reasoning?, stats?}], samplers: {name: value}}. Nothing is sent
// anywhere but to this server's chat endpoint.
const KEY = 'hearth.conversations';
const CURRENT = 'hearth.current';

function load() {
  try {
    const list = JSON.parse(localStorage.getItem(KEY) || '[]');
    return Array.isArray(list) ? list.filter(valid) : [];
  } catch {
    return [];
  }
}

function valid(c) {
  return c && typeof c.id === 'string' && Array.isArray(c.messages);
}

let conversations = load();

export function save() {
  localStorage.setItem(KEY, JSON.stringify(conversations));
}

export function all() {
  return [...conversations].sort((a, b) => b.updated - a.updated);
}

export function get(id) {
  return conversations.find((c) => c.id === id) || null;
}

export function create() {
  const now = Date.now();
  const c = { id: `c${now.toString(36)}${Math.random().toString(36).slice(2, 7)}`,
              title: 'New chat', created: now, updated: now, messages: [], samplers: {} };
  conversations.push(c);
  save();
  return c;
}

export function remove(id) {
  conversations = conversations.filter((c) => c.id !== id);
  save();
}

export function touch(c) {
  c.updated = Date.now();
  save();
}

export function currentId() {
  return localStorage.getItem(CURRENT);
}

export function setCurrentId(id) {
  localStorage.setItem(CURRENT, id);
}

export function exportJson() {
  return JSON.stringify({ hearth_conversations: 1, conversations }, null, 2);
}

// Adds the conversations of an export (this app's format, or a bare array of them); returns how
// many were added. Existing ids are kept, imported duplicates get new ids.
export function importJson(text) {
  const data = JSON.parse(text);
  const list = Array.isArray(data) ? data : data && data.conversations;
  if (!Array.isArray(list)) throw new Error('not a conversations export');
  let n = 0;
  for (const c of list) {
    if (!valid(c)) continue;
    const copy = { title: 'Imported chat', samplers: {}, created: Date.now(), ...c,
                   updated: Date.now() };
    copy.messages = c.messages.filter((m) => m && typeof m.content === 'string' &&
                                             ['user', 'assistant'].includes(m.role));
    if (get(copy.id)) copy.id = `${copy.id}-${Math.random().toString(36).slice(2, 6)}`;
    conversations.push(copy);
    n++;
  }
  save();
  return n;
}
