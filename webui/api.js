// The server's public API as the page calls it. Every call carries the API key when one is set; an error
// answer becomes an Error with the server's own message (OpenAI's error envelope).
export class Api {
  constructor(getKey) {
    this.getKey = getKey;
  }

  headers(extra = {}) {
    const headers = { ...extra };
    const key = this.getKey();
    if (key) headers.Authorization = `Bearer ${key}`;
    return headers;
  }

  async request(path, options = {}) {
    const response = await fetch(path, { ...options, headers: this.headers(options.headers) });
    if (!response.ok) throw await apiError(response);
    return response;
  }

  async json(path, body) {
    const options = body === undefined ? {} :
      { method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } };
    return (await this.request(path, options)).json();
  }

  async metricsText() {
    return (await this.request('/metrics')).text();
  }

  // Yields each streamed chunk of a chat completion as an object; `signal` aborts it, which closes the
  // connection, and the server cancels the request when it sees the client gone.
  async *streamChat(body, signal) {
    const response = await this.request('/v1/chat/completions', {
      method: 'POST', signal, body: JSON.stringify({ ...body, stream: true }),
      headers: { 'Content-Type': 'application/json' },
    });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffered = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += decoder.decode(value, { stream: true });
      const lines = buffered.split('\n');
      buffered = lines.pop();
      for (const line of lines) {
        const event = parseEventLine(line);
        if (event === 'done') return;
        if (event) yield event;
      }
    }
  }
}

// One SSE line: a chunk object, 'done' for [DONE], or null for blank lines and comments. A streamed error
// (an `error` object where a chunk would be) is thrown.
function parseEventLine(line) {
  if (!line.startsWith('data:')) return null;
  const payload = line.slice(5).trim();
  if (payload === '[DONE]') return 'done';
  const event = JSON.parse(payload);
  if (event.error) throw new Error(event.error.message || 'the server reported an error');
  return event;
}

async function apiError(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body.error && body.error.message) message = `${response.status}: ${body.error.message}`;
  } catch (_) { /* not JSON: keep the status line */ }
  const error = new Error(message);
  error.status = response.status;
  return error;
}
