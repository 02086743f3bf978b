// Progressive enhancement for the web pages; everything works without it. Served as a file
// because the Content-Security-Policy allows no inline script.
'use strict';

document.addEventListener('DOMContentLoaded', () => {
  // Revoke: ask in a dialog; on yes the server skips its own confirmation page.
  for (const form of document.querySelectorAll('form[data-confirm]')) {
    form.addEventListener('submit', (event) => {
      if (!window.confirm(form.dataset.confirm)) {
        event.preventDefault();
        return;
      }
      const confirmed = form.querySelector('input[name="confirmed"]');
      if (confirmed) confirmed.value = 'yes';
    });
  }

  // Copy the new key: the Clipboard API where the page is a secure context, else select it.
  for (const button of document.querySelectorAll('button[data-copy]')) {
    const target = document.getElementById(button.dataset.copy);
    const status = document.getElementById('copy-status');
    const say = (text) => {
      if (status) status.textContent = text;
    };
    button.addEventListener('click', async () => {
      const text = target ? target.textContent.trim() : '';
      try {
        await navigator.clipboard.writeText(text);
        say('Copied to the clipboard.');
      } catch {
        const range = document.createRange();
        range.selectNodeContents(target);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        say(
          document.execCommand && document.execCommand('copy')
            ? 'Copied to the clipboard.'
            : 'Selected: press Ctrl+C (⌘C) to copy.',
        );
      }
    });
  }

  // A search's URL holds only what was chosen: empty fields and the default sort are left out, so
  // bookmarks and shared links stay short (the server reads either form alike).
  for (const form of document.querySelectorAll('form.search')) {
    form.addEventListener('formdata', (event) => {
      for (const [name, value] of Array.from(event.formData.entries())) {
        if (value === '' || (name === 'sort' && value === 'newest')) event.formData.delete(name);
      }
    });
  }

  // Reading mail. "/" goes to the search box; j and k move through the results (the link gets
  // the focus, so Enter opens it, as any focused link does).
  const box = document.getElementById('q');
  const links = Array.from(document.querySelectorAll('.result-link'));
  const typing = (el) => el && (el.isContentEditable || /^(input|textarea|select)$/i.test(el.tagName));
  document.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === '/' && box) {
      event.preventDefault();
      box.focus();
      box.select();
      return;
    }
    if ((event.key === 'j' || event.key === 'k') && links.length) {
      event.preventDefault();
      const at = links.indexOf(document.activeElement);
      const next = at === -1 ? 0 : Math.min(links.length - 1, Math.max(0, at + (event.key === 'j' ? 1 : -1)));
      links[next].focus();
    }
  });
  for (const link of links) {
    const item = link.closest('.result');
    link.addEventListener('focus', () => item.classList.add('selected'));
    link.addEventListener('blur', () => item.classList.remove('selected'));
  }

  // The message body's frame grows to its document's height (same origin, so it can be measured;
  // the frame itself runs no script).
  for (const frame of document.querySelectorAll('iframe.mail-body')) {
    const fit = () => {
      try {
        const doc = frame.contentDocument;
        if (doc && doc.documentElement) {
          frame.classList.add('fitted');
          // The document's own height (its scrollHeight is never less than the frame's).
          frame.style.height = `${Math.ceil(doc.documentElement.getBoundingClientRect().height) + 2}px`;
        }
      } catch {
        // Not measurable: the frame keeps its minimum height and scrolls.
      }
    };
    frame.addEventListener('load', () => {
      fit();
      // Images arrive after load of the document's text; measure again as each settles.
      for (const img of frame.contentDocument ? frame.contentDocument.images : []) {
        img.addEventListener('load', fit);
      }
    });
    if (frame.contentDocument && frame.contentDocument.readyState === 'complete') fit();
  }

  // Dates in the reader's own time zone as well, beside the UTC the server writes.
  for (const time of document.querySelectorAll('time[data-local="long"]')) {
    const date = new Date(time.getAttribute('datetime'));
    if (Number.isNaN(date.getTime())) continue;
    const local = new Intl.DateTimeFormat(undefined, {
      dateStyle: 'full',
      timeStyle: 'long',
    }).format(date);
    time.insertAdjacentText('afterend', ` (${local})`);
  }
});
