// One message of the conversation as the page shows it. Model output is rendered by markdown.js (never
// as raw HTML); reasoning folds above the answer, tool calls are cards with their JSON arguments, and a
// degeneration report marks the looping text. `actions` holds the callbacks of the message's buttons.
import { copyText, plainText, renderMarkdown } from './markdown.js';
import { isGreedy } from './sampling_panel.js';

export function renderMessage(message, index, actions) {
  const item = document.createElement('li');
  fillMessage(item, message, index, actions);
  return item;
}

export function fillMessage(item, message, index, actions) {
  item.className = `message ${message.role}`;
  item.dataset.index = index;
  item.textContent = '';
  item.append(header(message));
  if (message.reasoning) item.append(reasoning(message.reasoning));
  item.append(body(message));
  for (const call of message.tool_calls || []) item.append(toolCallCard(call));
  if (message.degeneration) item.append(degenerationNote(message.degeneration));
  if (message.error) item.append(textElement('p', 'degeneration', `error: ${message.error}`));
  if (message.role === 'assistant') item.append(meta(message));
  if (!message.streaming) item.append(buttons(message, index, actions));
}

function header(message) {
  const who = textElement('div', 'who', message.role === 'user' ? 'you' : 'assistant');
  if (message.role === 'assistant' && isGreedy(message.sampling)) {
    const badge = textElement('span', 'badge greedy', 'greedy');
    badge.title = 'temperature 0: the most likely token every step';
    who.append(badge);
  }
  return who;
}

function reasoning(text) {
  const details = document.createElement('details');
  details.className = 'reasoning';
  details.append(textElement('summary', '', 'Reasoning'), textElement('div', 'body', text));
  return details;
}

function body(message) {
  const content = message.content || '';
  const node = document.createElement('div');
  node.className = 'body';
  if (message.role === 'user') {
    node.classList.add('plain');
    node.append(plainText(content));
  } else if (message.degeneration && Number.isInteger(message.loopOffset)) {
    // The looping part marked in the text as generated (Markdown would move it around).
    node.classList.add('plain');
    const mark = textElement('mark', 'loop', content.slice(message.loopOffset));
    mark.title = 'the loop the degeneration guard detected';
    node.append(content.slice(0, message.loopOffset), mark);
  } else {
    node.append(renderMarkdown(content));
    for (const block of node.querySelectorAll('pre')) block.append(copyButton(block.textContent, 'copy-code'));
  }
  return node;
}

function toolCallCard(call) {
  const card = document.createElement('section');
  card.className = 'tool-call';
  const fn = call.function || {};
  card.append(textElement('h3', '', `tool call: ${fn.name || '(unnamed)'}`));
  let args = fn.arguments || '';
  try {
    args = JSON.stringify(JSON.parse(args), null, 2);
  } catch (_) { /* still streaming, or not JSON: show as sent */ }
  const pre = document.createElement('pre');
  pre.append(textElement('code', '', args));
  card.append(pre);
  return card;
}

function degenerationNote(report) {
  const parts = [`loop detected at token ${report.detected_at_token}`, `period ${report.period}`,
    `${report.repeats} repeats`, `phase ${report.phase}`, `action ${report.action}`];
  const note = textElement('p', 'degeneration', parts.join(' · '));
  note.setAttribute('role', 'note');
  return note;
}

function meta(message) {
  const parts = [];
  if (message.streaming) parts.push('streaming…');
  if (message.finish_reason) parts.push(`finish: ${message.finish_reason}`);
  if (Number.isFinite(message.ttft_ms)) parts.push(`TTFT ${Math.round(message.ttft_ms)} ms`);
  if (message.usage) parts.push(`${message.usage.completion_tokens} tokens`);
  return textElement('div', 'meta', parts.join(' · '));
}

function buttons(message, index, actions) {
  const row = document.createElement('div');
  row.className = 'actions';
  row.append(copyButton(message.content || '', 'copy-message'));
  if (message.role === 'user') row.append(button('Edit', 'edit', () => actions.edit(index)));
  if (message.role === 'assistant') {
    if (actions.isLast(index)) row.append(button('Regenerate', 'regenerate', () => actions.regenerate(index)));
    if (message.sampling) row.append(button('Sampling', 'show-sampling', () => actions.showSampling(index)));
  }
  return row;
}

function copyButton(text, className) {
  const copy = button('Copy', className, async () => {
    copy.textContent = (await copyText(text)) ? 'Copied' : 'Copy failed';
    setTimeout(() => { copy.textContent = 'Copy'; }, 1500);
  });
  copy.setAttribute('aria-label', className === 'copy-code' ? 'Copy code' : 'Copy message');
  return copy;
}

function button(text, className, onClick) {
  const node = textElement('button', className, text);
  node.type = 'button';
  node.addEventListener('click', onClick);
  return node;
}

export function textElement(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  node.textContent = text;
  return node;
}
