// Model output as HTML that cannot execute: markdown by marked with raw HTML shown as text and
// only http(s)/mailto/relative links kept as links, then DOMPurify over the result as a second
// line; code blocks highlighted (highlight.js, a few common languages) with a copy button.
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { Marked } from 'marked';

const languages = { bash, c, cpp, css, go, java, javascript, json, python, rust, sql, typescript,
                    xml, yaml };
for (const [name, lang] of Object.entries(languages)) hljs.registerLanguage(name, lang);

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;',
                                                   '"': '&quot;', "'": '&#39;' })[ch]);
}

function safeHref(href) {
  const h = String(href || '').trim();
  if (/^(https?:|mailto:)/i.test(h)) return h;
  if (/^[a-z][a-z0-9+.-]*:/i.test(h) || h.startsWith('//')) return null;  // other schemes
  return h;  // relative or fragment
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    html(token) {  // raw HTML in a reply is text, never markup
      return escapeHtml(token.raw || token.text || '');
    },
    link(token) {
      const href = safeHref(token.href);
      if (href === null) return escapeHtml(token.raw);
      const title = token.title ? ` title="${escapeHtml(token.title)}"` : '';
      const text = this.parser.parseInline(token.tokens);
      return `<a href="${escapeHtml(href)}"${title} rel="noopener noreferrer" target="_blank">${text}</a>`;
    },
    image(token) {  // no remote fetches from model output: show the markdown as text
      return escapeHtml(token.raw);
    },
  },
});

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('rel', 'noopener noreferrer');
    node.setAttribute('target', '_blank');
  }
});

// The markdown as sanitized nodes: DOMPurify hands back the tree it checked, so no string of
// markup is parsed again on its way into the page (nothing here assigns innerHTML).
export function markdownToFragment(text) {
  const html = marked.parse(String(text || ''), { async: false });
  return DOMPurify.sanitize(html, { FORBID_TAGS: ['style', 'form', 'input', 'img'],
                                    FORBID_ATTR: ['style'], RETURN_DOM_FRAGMENT: true });
}

// Renders markdown into el, highlighting code and adding copy buttons (done == false while the
// reply still streams: highlighting waits for the end).
export function renderMarkdown(el, text, done = true) {
  el.replaceChildren(markdownToFragment(text));
  for (const pre of el.querySelectorAll('pre')) {
    const code = pre.querySelector('code');
    if (!code) continue;
    if (done) {
      const lang = /language-([\w-]+)/.exec(code.className);
      if (lang && hljs.getLanguage(lang[1])) hljs.highlightElement(code);
    }
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'copy';
    copy.textContent = 'Copy';
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(code.textContent);
        copy.textContent = 'Copied';
      } catch {
        copy.textContent = 'Copy failed';
      }
      setTimeout(() => { copy.textContent = 'Copy'; }, 1500);
    });
    pre.appendChild(copy);
  }
}
