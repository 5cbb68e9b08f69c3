// Model output as Markdown, safely: raw HTML in the text is shown as text (never parsed), links keep only
// http(s) and mailto targets, images become links (nothing is fetched), and DOMPurify then allows only the
// tags Markdown produces. The page's Content-Security-Policy forbids inline script as a last line.
const ALLOWED_TAGS = ['p', 'br', 'hr', 'em', 'strong', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
  'a', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'input'];
const ALLOWED_ATTR = ['href', 'title', 'class', 'align', 'start', 'type', 'checked', 'disabled'];
const SAFE_LINK = /^(https?:|mailto:)/i;

let configured = false;

const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

function configure() {
  if (configured) return;
  configured = true;
  window.marked.use({
    mangle: false,
    headerIds: false,
    renderer: {
      html: (html) => escapeHtml(html),
      link(href, title, text) {
        if (!SAFE_LINK.test(href || '')) return `${text} (${escapeHtml(href || '')})`;
        const titled = title ? ` title="${escapeHtml(title)}"` : '';
        return `<a href="${escapeHtml(href)}"${titled} rel="noopener noreferrer" target="_blank">${text}</a>`;
      },
      image: (href, title, text) => escapeHtml(`[image: ${text}] (${href || ''})`),
      code(code, language) {
        const name = (language || '').match(/^[\w+-]*/)[0];
        return `<pre><code class="language-${escapeHtml(name)}">${escapeHtml(code)}</code></pre>`;
      },
    },
  });
}

// The rendered Markdown of `text`, as a fragment of sanitised nodes, code blocks highlighted.
export function renderMarkdown(text) {
  if (!window.marked || !window.DOMPurify) return plainText(text);
  configure();
  const html = window.marked.parse(text);
  const fragment = window.DOMPurify.sanitize(html, {
    ALLOWED_TAGS, ALLOWED_ATTR, RETURN_DOM_FRAGMENT: true, ADD_ATTR: ['target', 'rel'],
  });
  for (const block of fragment.querySelectorAll('pre > code')) highlightCode(block);
  for (const box of fragment.querySelectorAll('input')) {
    if (box.type !== 'checkbox') box.remove();
    else box.disabled = true;
  }
  return fragment;
}

export function plainText(text) {
  const fragment = document.createDocumentFragment();
  fragment.append(document.createTextNode(text));
  return fragment;
}

// A small highlighter for any C-like, shell or Python code: comments, strings, numbers and the keywords
// common to those languages. It builds text nodes and spans, so code can never become markup.
const KEYWORDS = new Set(('if else elif for while do return function def class struct import from export ' +
  'const let var new delete try catch except finally raise throw async await yield break continue switch ' +
  'case default in of is not and or lambda with as pass fn let mut pub use impl match enum trait where ' +
  'public private protected static void int float double char bool auto template typename namespace ' +
  'true false True False None null nullptr undefined this self echo then fi done esac local')
  .split(' '));
const TOKEN = new RegExp([
  /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)/.source,  // comments
  /("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)/.source,  // strings
  /(\b\d+(?:\.\d+)?\b)/.source,  // numbers
  /([A-Za-z_]\w*)/.source,  // words, some of them keywords
].join('|'), 'g');

export function highlightCode(codeElement) {
  const code = codeElement.textContent;
  codeElement.textContent = '';
  let last = 0;
  for (const match of code.matchAll(TOKEN)) {
    const [text, comment, string, number, word] = match;
    const kind = comment ? 'comment' : string ? 'string' : number ? 'number' :
      (word && KEYWORDS.has(word)) ? 'keyword' : null;
    if (!kind) continue;
    codeElement.append(code.slice(last, match.index));
    const span = document.createElement('span');
    span.className = `hl-${kind}`;
    span.textContent = text;
    codeElement.append(span);
    last = match.index + text.length;
  }
  codeElement.append(code.slice(last));
}

export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (_) {
    const area = document.createElement('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    const copied = document.execCommand('copy');
    area.remove();
    return copied;
  }
}
