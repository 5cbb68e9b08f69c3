// Conversations kept in the browser (localStorage): each is {id, title, created, messages}, a message
// {role, content, ...} as the API takes it plus what the page shows beside it (reasoning, tool calls,
// sampling report, degeneration, timings). Nothing leaves the browser except the messages of a request.
const STORAGE_KEY = 'tempered.conversations.v1';
const CURRENT_KEY = 'tempered.currentConversation';

export class ConversationStore {
  constructor(storage = window.localStorage) {
    this.storage = storage;
    this.conversations = readJson(storage.getItem(STORAGE_KEY), []);
    // An answer saved while it streamed (the page closed mid-answer) is over: keep what came.
    for (const message of this.conversations.flatMap((c) => c.messages || [])) {
      if (!message.streaming) continue;
      delete message.streaming;
      message.finish_reason = message.finish_reason || 'interrupted';
    }
    this.currentId = storage.getItem(CURRENT_KEY);
    if (!this.get(this.currentId)) this.currentId = this.conversations[0] ? this.conversations[0].id : null;
  }

  save() {
    this.storage.setItem(STORAGE_KEY, JSON.stringify(this.conversations));
    if (this.currentId) this.storage.setItem(CURRENT_KEY, this.currentId);
    else this.storage.removeItem(CURRENT_KEY);
  }

  list() { return this.conversations; }
  get(id) { return this.conversations.find((c) => c.id === id) || null; }
  current() { return this.get(this.currentId); }

  select(id) {
    if (this.get(id)) this.currentId = id;
    this.save();
  }

  create(title = 'New chat', messages = []) {
    const conversation = { id: newId(), title, created: new Date().toISOString(), messages };
    this.conversations.unshift(conversation);
    this.currentId = conversation.id;
    this.save();
    return conversation;
  }

  rename(id, title) {
    const conversation = this.get(id);
    if (conversation && title.trim()) conversation.title = title.trim();
    this.save();
  }

  remove(id) {
    this.conversations = this.conversations.filter((c) => c.id !== id);
    if (this.currentId === id) this.currentId = this.conversations[0] ? this.conversations[0].id : null;
    this.save();
  }

  // A new conversation holding the messages before `index` and `content` as the user's message at
  // `index`: the original stays as it was.
  branch(id, index, content) {
    const source = this.get(id);
    const messages = structuredClone(source.messages.slice(0, index));
    messages.push({ role: 'user', content });
    return this.create(`${source.title} (branch)`, messages);
  }

  exportJson(id) {
    const conversation = this.get(id);
    return JSON.stringify({ format: 'tempered-conversation', version: 1, ...conversation }, null, 2);
  }
}

function readJson(text, fallback) {
  try {
    const value = JSON.parse(text);
    return Array.isArray(value) ? value : fallback;
  } catch (_) {
    return fallback;
  }
}

function newId() {
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
