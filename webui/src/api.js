// Talking to the server: the API key (asked once, kept in this browser), JSON calls, and the
// chat stream - the same SSE the OpenAI-compatible API serves.
const KEY = 'hearth.apiKey';
let askKey = null;  // set by the page: shows the key dialog, resolves with the key or null

export function onKeyNeeded(fn) {
  askKey = fn;
}

function headers(extra = {}) {
  const h = { ...extra };
  const key = localStorage.getItem(KEY);
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

// fetch() that asks for the API key on a 401 and tries again with it.
export async function call(path, options = {}) {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(path, { ...options, headers: headers(options.headers) });
    if (res.status !== 401 || attempt > 2 || !askKey) return res;
    const key = await askKey(attempt > 0);
    if (!key) return res;
    localStorage.setItem(KEY, key);
  }
}

export async function errorText(res) {
  try {
    const j = await res.json();
    return (j.error && j.error.message) || JSON.stringify(j);
  } catch {
    return `${res.status} ${res.statusText}`;
  }
}

// The server's facts. A failure says whether asking again later can help (the model is still
// loading: 503, or the server is not reachable yet) and after how many seconds (Retry-After).
export async function props() {
  let res;
  try {
    res = await call('/props');
  } catch (e) {
    throw Object.assign(new Error(`cannot reach the server (${e.message})`), { retryAfter: 2 });
  }
  if (res.ok) return res.json();
  const err = new Error(await errorText(res));
  if (res.status === 503) err.retryAfter = Number(res.headers.get('Retry-After')) || 1;
  throw err;
}

// Streams one chat completion. onDelta({content, reasoning}) for each piece; resolves with
// {usage, timings, finish_reason}. Abort with signal (the server cancels when the client hangs
// up).
export async function streamChat(body, signal, onDelta) {
  const res = await call('/v1/chat/completions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
    signal,
  });
  if (!res.ok) throw new Error(await errorText(res));
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const result = { usage: null, timings: null, finish_reason: null };
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') return result;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message || 'server error');
        if (chunk.usage) result.usage = chunk.usage;
        if (chunk.timings) result.timings = chunk.timings;
        const choice = chunk.choices && chunk.choices[0];
        if (!choice) continue;
        if (choice.finish_reason) result.finish_reason = choice.finish_reason;
        const d = choice.delta || {};
        if (d.content || d.reasoning_content)
          onDelta({ content: d.content || '', reasoning: d.reasoning_content || '' });
      }
    }
  }
  return result;
}
