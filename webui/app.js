// The playground's wiring: conversations on the left, the chat in the middle, sampling and server panels
// on the right. Every call goes through the public API (api.js); state lives in localStorage.
import { Api } from './api.js';
import { ConversationStore } from './conversations.js';
import { fillMessage, renderMessage, textElement } from './message_view.js';
import { ExtraFields, SamplingPanel } from './sampling_panel.js';
import { ServerPanel } from './server_panel.js';

const $ = (id) => document.getElementById(id);
const KEY_STORAGE = 'tempered.apiKey';
const THEME_STORAGE = 'tempered.theme';

const state = { model: null, controller: null, store: null, sampling: null, extra: null, server: null };
const api = new Api(() => $('api-key').value.trim());

// ---- theme, API key, narrow-screen panels

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  const other = theme === 'dark' ? 'light' : 'dark';
  $('theme-toggle').textContent = other === 'dark' ? 'Dark' : 'Light';
  $('theme-toggle').setAttribute('aria-label', `Switch to the ${other} theme`);
}

function setUpChrome() {
  const saved = localStorage.getItem(THEME_STORAGE);
  applyTheme(saved || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'));
  $('theme-toggle').addEventListener('click', () => {
    const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem(THEME_STORAGE, next);
    applyTheme(next);
  });
  $('api-key').value = localStorage.getItem(KEY_STORAGE) || '';
  $('api-key').addEventListener('change', () => {
    localStorage.setItem(KEY_STORAGE, $('api-key').value.trim());
    loadModel();
  });
  const folding = [['toggle-chats', 'chats'], ['toggle-side', 'side']];
  for (const [buttonId, panelId] of folding) {
    $(buttonId).addEventListener('click', () => {
      const open = $(panelId).classList.toggle('open');
      $(buttonId).setAttribute('aria-expanded', String(open));
    });
  }
  // At phone width the panels cover the chat: Escape folds them and returns to the button that opened one.
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    for (const [buttonId, panelId] of folding) {
      if (!$(panelId).classList.contains('open')) continue;
      $(panelId).classList.remove('open');
      $(buttonId).setAttribute('aria-expanded', 'false');
      $(buttonId).focus();
    }
  });
}

function setStatus(text) {
  $('status').textContent = text;
}

// ---- conversations list

function renderChatList() {
  const list = $('chat-list');
  list.textContent = '';
  for (const conversation of state.store.list()) {
    const item = document.createElement('li');
    item.setAttribute('aria-current', String(conversation.id === state.store.currentId));
    const open = textElement('button', 'open', conversation.title);
    open.type = 'button';
    open.addEventListener('click', () => {
      state.store.select(conversation.id);
      renderAll();
    });
    const rename = textElement('button', 'small-button rename', 'Rename');
    rename.type = 'button';
    rename.setAttribute('aria-label', `Rename ${conversation.title}`);
    rename.addEventListener('click', () => {
      const title = prompt('New name', conversation.title);
      if (title !== null) state.store.rename(conversation.id, title);
      renderChatList();
    });
    const remove = textElement('button', 'small-button delete', 'Delete');
    remove.type = 'button';
    remove.setAttribute('aria-label', `Delete ${conversation.title}`);
    remove.addEventListener('click', () => {
      if (!confirm(`Delete "${conversation.title}"?`)) return;
      state.store.remove(conversation.id);
      renderAll();
    });
    item.append(open, rename, remove);
    list.append(item);
  }
}

function exportCurrent() {
  const conversation = state.store.current();
  if (!conversation) return setStatus('nothing to export');
  const blob = new Blob([state.store.exportJson(conversation.id)], { type: 'application/json' });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `${conversation.title.replace(/[^\w.-]+/g, '_') || 'conversation'}.json`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

// ---- messages

const messageActions = {
  edit: (index) => startEdit(index),
  regenerate: (index) => regenerate(index),
  showSampling: (index) => state.sampling.showReport(state.store.current().messages[index].sampling),
  isLast: (index) => index === state.store.current().messages.length - 1,
};

function renderMessages() {
  const list = $('messages');
  list.textContent = '';
  const conversation = state.store.current();
  if (!conversation) return;
  conversation.messages.forEach((message, index) => list.append(renderMessage(message, index, messageActions)));
  list.scrollTop = list.scrollHeight;
}

function renderAll() {
  renderChatList();
  renderMessages();
  const last = (state.store.current() || { messages: [] }).messages.filter((m) => m.role === 'assistant').pop();
  if (last) state.sampling.showReport(last.sampling);
  state.server.showTtft(last && Number.isFinite(last.ttft_ms) ? last.ttft_ms : null);
}

function startEdit(index) {
  const conversation = state.store.current();
  const item = $('messages').querySelector(`li[data-index="${index}"]`);
  const box = document.createElement('textarea');
  box.className = 'edit-box';
  box.value = conversation.messages[index].content;
  box.setAttribute('aria-label', 'Edited message');
  const send = textElement('button', 'branch-send', 'Send as a new branch');
  send.type = 'button';
  const cancel = textElement('button', 'edit-cancel', 'Cancel');
  cancel.type = 'button';
  const row = document.createElement('div');
  row.className = 'actions';
  row.append(send, cancel);
  item.textContent = '';
  item.append(box, row);
  box.focus();
  cancel.addEventListener('click', renderMessages);
  send.addEventListener('click', () => {
    if (!box.value.trim() || state.controller) return;
    state.store.branch(conversation.id, index, box.value);
    renderAll();
    generate();
  });
}

function regenerate(index) {
  if (state.controller) return;
  state.store.current().messages.splice(index, 1);
  state.store.save();
  renderMessages();
  generate();
}

// ---- sending and streaming

function sendFromComposer(event) {
  event.preventDefault();
  const text = $('composer-input').value;
  if (!text.trim() || state.controller) return;
  let conversation = state.store.current();
  if (!conversation) conversation = state.store.create();
  if (!conversation.messages.length) conversation.title = text.trim().slice(0, 40);
  conversation.messages.push({ role: 'user', content: text });
  state.store.save();
  $('composer-input').value = '';
  renderAll();
  generate();
}

function apiMessages(messages) {
  return messages.filter((m) => !m.error || m.content).map((m) => {
    const message = { role: m.role, content: m.content };
    if (m.tool_calls && m.tool_calls.length) message.tool_calls = m.tool_calls;
    return message;
  });
}

async function generate() {
  const extra = state.extra.fields();
  if (!extra) return setStatus('fix the request fields (JSON) first');
  const conversation = state.store.current();
  const history = apiMessages(conversation.messages);
  const reply = { role: 'assistant', content: '', streaming: true };
  conversation.messages.push(reply);
  const item = renderMessage(reply, conversation.messages.length - 1, messageActions);
  $('messages').append(item);
  const body = { model: state.model, messages: history, stream_options: { include_usage: true },
    ...state.sampling.requestFields(), ...extra };
  state.controller = new AbortController();
  setBusy(true);
  const started = performance.now();
  let redraw = 0;
  const update = () => {
    if (redraw) return;
    redraw = requestAnimationFrame(() => {
      redraw = 0;
      fillMessage(item, reply, conversation.messages.length - 1, messageActions);
      $('messages').scrollTop = $('messages').scrollHeight;
    });
  };
  try {
    for await (const chunk of api.streamChat(body, state.controller.signal)) {
      if (applyChunk(reply, chunk) && reply.ttft_ms === undefined) reply.ttft_ms = performance.now() - started;
      update();
    }
  } catch (error) {
    if (error.name === 'AbortError') reply.finish_reason = 'stopped';
    else reply.error = error.message;
  }
  finishReply(reply, conversation, item);
}

// Folds one streamed chunk into the reply; true when it carried generated text.
function applyChunk(reply, chunk) {
  if (chunk.sampling) reply.sampling = chunk.sampling;
  if (chunk.usage) reply.usage = chunk.usage;
  const choice = (chunk.choices || [])[0];
  if (!choice) return false;
  const delta = choice.delta || {};
  let text = false;
  if (delta.content) { reply.content += delta.content; text = true; }
  const thinking = delta.reasoning_content || delta.reasoning;
  if (thinking) { reply.reasoning = (reply.reasoning || '') + thinking; text = true; }
  for (const call of delta.tool_calls || []) mergeToolCall(reply, call);
  if (choice.degeneration) reply.degeneration = choice.degeneration;
  if (choice.sampling) reply.sampling = { ...(reply.sampling || {}), ...choice.sampling };
  if (choice.finish_reason) reply.finish_reason = choice.finish_reason;
  return text || Boolean(delta.tool_calls);
}

// Streamed tool calls arrive in pieces by index: the id and name first, the arguments in fragments.
function mergeToolCall(reply, piece) {
  reply.tool_calls = reply.tool_calls || [];
  const index = piece.index || 0;
  const call = reply.tool_calls[index] ||
    (reply.tool_calls[index] = { id: '', type: 'function', function: { name: '', arguments: '' } });
  if (piece.id) call.id = piece.id;
  if (piece.function && piece.function.name) call.function.name += piece.function.name;
  if (piece.function && piece.function.arguments) call.function.arguments += piece.function.arguments;
}

async function finishReply(reply, conversation, item) {
  delete reply.streaming;
  state.controller = null;
  setBusy(false);
  if (reply.degeneration) reply.loopOffset = await loopOffset(reply);
  state.store.save();
  fillMessage(item, reply, conversation.messages.indexOf(reply), messageActions);
  state.sampling.showReport(reply.sampling || null);
  state.server.showTtft(Number.isFinite(reply.ttft_ms) ? reply.ttft_ms : null);
  setStatus(reply.error ? `error: ${reply.error}` : reply.finish_reason === 'stopped' ? 'stopped' : 'done');
  $('composer-input').focus();
}

// Where the loop starts in the answer's text: the report counts tokens, so the answer is tokenized again
// and its first detected_at_token tokens decoded. Null when that does not line up with the text.
async function loopOffset(reply) {
  try {
    const { tokens } = await api.json('/tokenize', { prompt: reply.content, add_special_tokens: false });
    const { prompt } = await api.json('/detokenize', { tokens: tokens.slice(0, reply.degeneration.detected_at_token) });
    return reply.content.startsWith(prompt) ? prompt.length : null;
  } catch (_) {
    return null;
  }
}

function setBusy(busy) {
  $('send').hidden = busy;
  $('stop').hidden = !busy;
  if (busy) setStatus('generating…');
}

function stop() {
  if (state.controller) state.controller.abort();
}

// ---- start

async function loadModel() {
  try {
    const models = await api.json('/v1/models');
    state.model = models.data[0].id;
    $('model-name').textContent = state.model;
    state.server.showModel(await api.json(`/v1/models/${encodeURIComponent(state.model)}`));
    setStatus('');
  } catch (error) {
    setStatus(error.status === 401 ? 'this server needs an API key: enter it at the top' : `error: ${error.message}`);
  }
}

function init() {
  setUpChrome();
  state.store = new ConversationStore();
  state.sampling = new SamplingPanel($('sampling-rows'), $('greedy-badge'));
  state.extra = new ExtraFields($('extra-json'), $('extra-json-error'));
  state.server = new ServerPanel($('server-stats'), $('defaults-table'), api);
  $('composer').addEventListener('submit', sendFromComposer);
  $('composer-input').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) sendFromComposer(event);
  });
  $('stop').addEventListener('click', stop);
  $('new-chat').addEventListener('click', () => {
    state.store.create();
    renderAll();
    $('composer-input').focus();
  });
  $('export-chat').addEventListener('click', exportCurrent);
  renderAll();
  document.body.dataset.ready = 'true';
  performance.mark('webui-interactive');
  loadModel();
  state.server.start();
}

init();
