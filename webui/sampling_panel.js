// The sampling panel: each parameter is either "server default" (omitted from the request, so the server's
// resolution decides: preferred, model, default, policy) or set here (sent, source `request`). After an
// answer it shows the server's `"sampling"` report: each value used, its source, and what a policy or the
// degeneration guard replaced. The choices persist in localStorage.
const SETTINGS_KEY = 'tempered.sampling.v1';
const EXTRA_KEY = 'tempered.extraFields.v1';

// name, step and bounds of the number input, and whether the value is an integer.
export const PARAMETERS = [
  { name: 'temperature', step: 0.05, min: 0, max: 2 },
  { name: 'top_p', step: 0.05, min: 0, max: 1 },
  { name: 'top_k', step: 1, min: 0, integer: true },
  { name: 'min_p', step: 0.01, min: 0, max: 1 },
  { name: 'repetition_penalty', step: 0.05, min: 0 },
  { name: 'presence_penalty', step: 0.1, min: -2, max: 2 },
  { name: 'frequency_penalty', step: 0.1, min: -2, max: 2 },
  { name: 'seed', step: 1, integer: true },
  { name: 'dry_multiplier', step: 0.1, min: 0 },
  { name: 'dry_base', step: 0.05, min: 1 },
  { name: 'dry_allowed_length', step: 1, min: 0, integer: true },
  { name: 'max_tokens', step: 1, min: 1, integer: true, notReported: true },
];

export class SamplingPanel {
  constructor(container, badge, storage = window.localStorage) {
    this.container = container;
    this.badge = badge;
    this.storage = storage;
    this.settings = readSettings(storage.getItem(SETTINGS_KEY));
    this.rows = new Map();
    for (const parameter of PARAMETERS) this.addRow(parameter);
    this.extraRows = document.createElement('div');
    container.append(this.extraRows);
  }

  addRow(parameter) {
    const { name } = parameter;
    const row = document.createElement('div');
    row.className = 'sampling-row';
    row.id = `row-${name}`;
    const label = element('label', 'name', name);
    label.htmlFor = `value-${name}`;
    const mode = document.createElement('select');
    mode.id = `mode-${name}`;
    mode.setAttribute('aria-label', `${name}: server default or set`);
    mode.append(new Option('server default', 'default'), new Option('set', 'set'));
    const value = document.createElement('input');
    Object.assign(value, { id: `value-${name}`, type: 'number', step: parameter.step });
    if (parameter.min !== undefined) value.min = parameter.min;
    if (parameter.max !== undefined) value.max = parameter.max;
    const report = element('output', 'report', parameter.notReported ? '' : 'not reported yet');
    report.id = `report-${name}`;
    report.htmlFor = value.id;
    row.append(label, mode, value, report);
    this.container.append(row);
    this.rows.set(name, { parameter, mode, value, report });

    const saved = this.settings[name];
    mode.value = saved && saved.explicit ? 'set' : 'default';
    value.value = saved && saved.value !== undefined ? saved.value : '';
    value.disabled = mode.value === 'default';
    mode.addEventListener('change', () => {
      value.disabled = mode.value === 'default';
      if (!value.disabled) value.focus();
      this.persist();
    });
    value.addEventListener('input', () => this.persist());
  }

  persist() {
    const settings = {};
    for (const [name, { mode, value }] of this.rows)
      settings[name] = { explicit: mode.value === 'set', value: value.value };
    this.settings = settings;
    this.storage.setItem(SETTINGS_KEY, JSON.stringify(settings));
  }

  // The request's explicit values; every "server default" parameter is left out.
  requestFields() {
    const fields = {};
    for (const [name, { parameter, mode, value }] of this.rows) {
      if (mode.value !== 'set' || value.value === '') continue;
      const number = Number(value.value);
      if (Number.isFinite(number)) fields[name] = parameter.integer ? Math.round(number) : number;
    }
    return fields;
  }

  // The server's report for the last answer (null: the server sends none, --no-report-sampling).
  showReport(sampling) {
    this.extraRows.textContent = '';
    for (const [name, { parameter, report }] of this.rows) {
      if (parameter.notReported) continue;
      report.textContent = '';
      if (!sampling) report.textContent = 'not reported';
      else if (!sampling[name]) report.textContent = 'not used';
      else report.append(describeValue(sampling[name]));
    }
    for (const [name, entry] of Object.entries(sampling || {})) {
      if (this.rows.has(name) || !entry || typeof entry !== 'object' || !('source' in entry)) continue;
      const line = element('div', 'report', `${name}: `);
      line.append(describeValue(entry));
      this.extraRows.append(line);
    }
    this.badge.hidden = !isGreedy(sampling);
  }
}

// Other request fields as a JSON object typed by the user, kept in localStorage. Its keys are merged into
// each request after the sampling values, so it can set anything the API takes.
export class ExtraFields {
  constructor(textarea, errorLine, storage = window.localStorage) {
    this.textarea = textarea;
    this.errorLine = errorLine;
    this.storage = storage;
    textarea.value = storage.getItem(EXTRA_KEY) || '';
    textarea.addEventListener('input', () => {
      storage.setItem(EXTRA_KEY, textarea.value);
      this.fields();
    });
  }

  // The object, or null (with the reason shown) when the text is not a JSON object.
  fields() {
    const text = this.textarea.value.trim();
    this.errorLine.textContent = '';
    if (!text) return {};
    try {
      const value = JSON.parse(text);
      if (value && typeof value === 'object' && !Array.isArray(value)) return value;
      this.errorLine.textContent = 'must be a JSON object';
    } catch (error) {
      this.errorLine.textContent = `not JSON: ${error.message}`;
    }
    return null;
  }
}

export function isGreedy(sampling) {
  return Boolean(sampling && sampling.temperature && sampling.temperature.value === 0);
}

// "0.7 from request", plus "(replaced 0 from request)" when a policy or the guard changed it.
export function describeValue(entry) {
  const fragment = document.createDocumentFragment();
  fragment.append(`${formatValue(entry.value)} from `);
  const source = element('span', `source source-${entry.source}`, entry.source);
  source.dataset.source = entry.source;
  fragment.append(source);
  if (entry.replaced)
    fragment.append(` (replaced ${formatValue(entry.replaced.value)} from ${entry.replaced.source})`);
  return fragment;
}

function formatValue(value) {
  if (value === null || value === undefined) return 'none';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  return node;
}

function readSettings(text) {
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' ? value : {};
  } catch (_) {
    return {};
  }
}
