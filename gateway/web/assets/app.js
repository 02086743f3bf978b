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
});
