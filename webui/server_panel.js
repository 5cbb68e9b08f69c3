// The server panel: the model's card (/v1/models/{id}: context length and the sampling defaults table),
// and, polled from /metrics (Prometheus text), the KV cache dtype and usage, running and waiting requests
// and the tokens generated per second; plus the time to first token of the page's last answer.
const POLL_MS = 2000;

export class ServerPanel {
  constructor(statsList, defaultsTable, api) {
    this.statsList = statsList;
    this.defaultsTable = defaultsTable;
    this.api = api;
    this.values = new Map();
    this.lastTokens = null;
    this.timer = null;
  }

  set(name, text) {
    let entry = this.values.get(name);
    if (!entry) {
      const term = document.createElement('dt');
      term.textContent = name;
      const value = document.createElement('dd');
      value.id = `stat-${name.replace(/\W+/g, '-')}`;
      this.statsList.append(term, value);
      entry = value;
      this.values.set(name, entry);
    }
    entry.textContent = text;
  }

  showModel(card) {
    this.set('model', card.id);
    this.set('context', card.max_model_len ? `${card.max_model_len} tokens` : 'unknown');
    this.defaultsTable.textContent = '';
    const head = this.defaultsTable.createTHead().insertRow();
    for (const title of ['parameter', 'default', 'source']) {
      const cell = document.createElement('th');
      cell.textContent = title;
      head.append(cell);
    }
    const body = this.defaultsTable.createTBody();
    for (const [name, entry] of Object.entries(card.sampling_defaults || {})) {
      const row = body.insertRow();
      const described = entry && typeof entry === 'object' && 'value' in entry;
      row.insertCell().textContent = name;
      row.insertCell().textContent = JSON.stringify(described ? entry.value : entry);
      row.insertCell().textContent = described ? entry.source || '' : '';
    }
  }

  showTtft(milliseconds) {
    this.set('last TTFT', milliseconds === null ? 'n/a' : `${Math.round(milliseconds)} ms`);
  }

  start() {
    const poll = async () => {
      try {
        this.showMetrics(parsePrometheus(await this.api.metricsText()));
      } catch (error) {
        this.set('metrics', `unavailable (${error.message})`);
      }
      this.timer = setTimeout(poll, POLL_MS);
    };
    poll();
  }

  showMetrics(samples) {
    const first = (name) => samples.find((s) => s.name === name);
    const sum = (name) => samples.filter((s) => s.name === name).reduce((total, s) => total + s.value, 0);
    const config = first('vllm:cache_config_info');
    if (config) this.set('KV dtype', config.labels.cache_dtype || 'unknown');
    this.set('running', String(sum('vllm:num_requests_running')));
    this.set('queued', String(sum('vllm:num_requests_waiting')));
    this.set('KV usage', `${(100 * sum('vllm:kv_cache_usage_perc')).toFixed(1)} %`);
    const tokens = sum('vllm:generation_tokens_total');
    const now = performance.now();
    if (this.lastTokens) {
      const rate = (tokens - this.lastTokens.tokens) / ((now - this.lastTokens.at) / 1000);
      this.set('tokens/s', rate.toFixed(1));
    }
    this.lastTokens = { tokens, at: now };
  }
}

const SAMPLE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

// [{name, labels, value}] from Prometheus text exposition.
export function parsePrometheus(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) continue;
    const labels = {};
    for (const [, key, value] of (match[2] || '').matchAll(LABEL)) labels[key] = value;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}
