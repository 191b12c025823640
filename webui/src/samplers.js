// The sampler panel: llama-server's request field names, the server's defaults from /props, and
// each conversation's own values (only those the user set are stored and sent).
export const SAMPLERS = [
  { name: 'temperature', step: 0.05, min: 0 },
  { name: 'top_k', step: 1, min: 0, int: true },
  { name: 'top_p', step: 0.01, min: 0, max: 1 },
  { name: 'min_p', step: 0.01, min: 0, max: 1 },
  { name: 'typical_p', step: 0.01, min: 0, max: 1 },
  { name: 'top_n_sigma', step: 0.1 },
  { name: 'xtc_probability', step: 0.05, min: 0, max: 1 },
  { name: 'xtc_threshold', step: 0.05, min: 0, max: 1 },
  { name: 'dry_multiplier', step: 0.1, min: 0 },
  { name: 'dry_base', step: 0.05, min: 1 },
  { name: 'dry_allowed_length', step: 1, min: 0, int: true },
  { name: 'dry_penalty_last_n', step: 1, min: -1, int: true },
  { name: 'repeat_penalty', step: 0.05, min: 0 },
  { name: 'repeat_last_n', step: 1, min: -1, int: true },
  { name: 'presence_penalty', step: 0.1 },
  { name: 'frequency_penalty', step: 0.1 },
  { name: 'mirostat', step: 1, min: 0, max: 2, int: true },
  { name: 'mirostat_tau', step: 0.1, min: 0 },
  { name: 'mirostat_eta', step: 0.01, min: 0 },
  { name: 'seed', step: 1, int: true },
  { name: 'max_tokens', step: 1, min: 1, int: true },
];

// Server defaults by name, from /props' default_generation_settings.params.
export function defaultsFromProps(props) {
  const p = (props && props.default_generation_settings && props.default_generation_settings.params) || {};
  const out = {};
  for (const s of SAMPLERS) if (typeof p[s.name] === 'number') out[s.name] = p[s.name];
  if (out.max_tokens === undefined && typeof p.n_predict === 'number' && p.n_predict > 0)
    out.max_tokens = p.n_predict;
  return out;
}

// A field's placeholder: the server's default for it, when known.
const placeholder = (s, defaults) => (defaults[s.name] !== undefined ? String(defaults[s.name]) : 'default');

// The server's defaults as the placeholders of a built form's fields (values and focus kept).
export function showDefaults(form, defaults) {
  for (const s of SAMPLERS) {
    const input = form.querySelector(`#s-${s.name}`);
    if (input) input.placeholder = placeholder(s, defaults);
  }
}

// Builds the form for one conversation's values; onChange(values) after each edit.
export function buildForm(form, values, defaults, onChange) {
  form.replaceChildren();
  for (const s of SAMPLERS) {
    const label = document.createElement('label');
    label.htmlFor = `s-${s.name}`;
    label.textContent = s.name;
    const input = document.createElement('input');
    input.type = 'number';
    input.id = `s-${s.name}`;
    input.name = s.name;
    input.step = String(s.step);
    if (s.min !== undefined) input.min = String(s.min);
    if (s.max !== undefined) input.max = String(s.max);
    input.placeholder = placeholder(s, defaults);
    input.value = values[s.name] !== undefined ? String(values[s.name]) : '';
    input.addEventListener('change', () => {
      const v = input.value.trim() === '' ? undefined : Number(input.value);
      if (v === undefined || !Number.isFinite(v)) delete values[s.name];
      else values[s.name] = s.int ? Math.trunc(v) : v;
      onChange(values);
    });
    form.append(label, input);
  }
  const label = document.createElement('label');
  label.htmlFor = 's-system';
  label.className = 'wide';
  label.textContent = 'system prompt';
  const system = document.createElement('textarea');
  system.id = 's-system';
  system.value = values.system || '';
  system.addEventListener('change', () => {
    if (system.value.trim()) values.system = system.value;
    else delete values.system;
    onChange(values);
  });
  form.append(label, system);
}

// The request fields for a conversation's values (the system prompt goes in as a message).
export function requestFields(values) {
  const out = {};
  for (const s of SAMPLERS) if (values[s.name] !== undefined) out[s.name] = values[s.name];
  return out;
}
